"""`manage.py generate rag ...` and `manage.py generate icopernicus ...` (runtime.md).

`rag` runs as a checkpointed job in this process (the models and files are local), so an
interrupted run started again with the same arguments resumes where it stopped. Prints one
JSON document: the job id, state and result.
"""
import json

from django.core.management.base import BaseCommand, CommandError

from models_runtime.backends.config import ModelNotAvailable
from models_runtime.jobs import JobParamsError, job_json, run_job, submit_job
from models_runtime.metrics.registry import UnknownMetric
from models_runtime.models import Job
from models_runtime.progress import ProgressBar
from models_runtime.retrieval import RETRIEVERS

USER_ERRORS = (JobParamsError, ModelNotAvailable, UnknownMetric, FileNotFoundError, ValueError)


class Command(BaseCommand):
    help = "Generate candidates: LaMP-style RAG or iCOPERNICUS prompt styles."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="what", required=True)
        rag = sub.add_parser("rag", help="LaMP records in, a pairwise_alignment batch out")
        rag.add_argument("--input", required=True)
        rag.add_argument("--models", required=True, help="one or two names from HUMEVAL_MODELS (smollm2 always exists)")
        rag.add_argument("--retriever", required=True, choices=RETRIEVERS)
        rag.add_argument("--k", type=int, required=True)
        rag.add_argument("--out", required=True)
        rag.add_argument("--slug", required=True)
        rag.add_argument("--device", choices=["cpu", "cuda"], default=None)
        rag.add_argument("--discriminative", type=int, default=None,
                         help="keep the N records where the metrics disagree most about the better candidate")
        rag.add_argument("--metrics", default=None, help="metrics for --discriminative (default rouge1,rougeL,bleu,meteor)")
        rag.add_argument("--max-new-tokens", type=int, default=64)
        rag.add_argument("--budget", type=int, default=None, help="words of profile text in a prompt (default 256)")
        rag.add_argument("--encoder", default=None, help="sentence-transformers directory for --retriever dense")
        ico = sub.add_parser("icopernicus", help="iCOPERNICUS prompt styles, survey batch and EGISES table")
        ico.add_argument("--input", required=True)
        ico.add_argument("--models", required=True)
        ico.add_argument("--out-batch", required=True)
        ico.add_argument("--out-table", required=True)
        ico.add_argument("--slug", required=True)
        ico.add_argument("--device", choices=["cpu", "cuda"], default=None)
        ico.add_argument("--max-new-tokens", type=int, default=None)

    def handle(self, *args, **opts):
        try:
            data = self.rag(opts) if opts["what"] == "rag" else self.icopernicus(opts)
        except USER_ERRORS as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(data, ensure_ascii=False))

    def rag(self, opts):
        params = {key: opts[key] for key in ("input", "models", "retriever", "k", "out", "slug", "device",
                                             "discriminative", "metrics", "max_new_tokens", "budget", "encoder")
                  if opts.get(key) is not None}
        bar = ProgressBar(f"generate rag ({opts['models']})", self.stderr._out)
        try:
            job = submit_job("rag", params, run=False)
            previous = self._unfinished_twin(job)
            if previous is not None:  # resume the interrupted run instead of starting over
                job.delete()
                job = previous
            job = run_job(job.pk, on_progress=bar)
        finally:
            bar.close()
        data = job_json(job)
        if job.state == Job.FAILED:
            raise CommandError(f"job {job.pk} failed: {data['errors'][-1]['error'] if data['errors'] else 'unknown'}")
        return {"job": job.pk, "state": job.state, "progress": data["progress"], "result": data["result"],
                "errors": data["errors"]}

    @staticmethod
    def _unfinished_twin(job):
        return (Job.objects.filter(kind=job.kind, params=job.params, state__in=[Job.QUEUED, Job.RUNNING])
                .exclude(pk=job.pk).order_by("-pk").first())

    def icopernicus(self, opts):
        from models_runtime.icopernicus import run_icopernicus

        bar = ProgressBar("generate icopernicus (models)", self.stderr._out)
        kwargs = {"device": opts["device"], "progress": bar}
        if opts.get("max_new_tokens"):
            kwargs["max_new_tokens"] = opts["max_new_tokens"]
        try:
            result = run_icopernicus(opts["input"], opts["models"], opts["out_batch"], opts["out_table"],
                                     opts["slug"], **kwargs)
        finally:
            bar.close()
        return result
