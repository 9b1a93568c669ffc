"""`manage.py generate rag ...` and `manage.py generate icopernicus ...` (runtime.md).

Both run as resumable jobs in this process (the models and files are local): an
interrupted run started again with the same arguments resumes where it stopped.
`rag` prints {"job", "state", "progress", "result", "errors"}; `icopernicus` prints
{"documents", "generations", "items", "egises", "errors"}. `--no-wait` sends the job to the
Celery workers instead (they must see the same files) and prints {"job", "state"}.
"""
import json

from django.core.management.base import BaseCommand, CommandError

from annotate import services
from models_runtime.job_support.job_commands import add_wait_argument, check_outcome, job_summary, run_command_job
from models_runtime.plan_support.plan_kinds import ALIGNMENT_KIND
from models_runtime.retrieval import RETRIEVERS

RAG_OPTIONS = ("input", "models", "retriever", "k", "out", "slug", "device", "discriminative", "metrics",
               "max_new_tokens", "budget", "encoder", "temperature", "stop", "postprocess")
ICOPERNICUS_OPTIONS = ("input", "models", "out_batch", "out_table", "slug", "device", "max_new_tokens")


def add_import_argument(parser) -> None:
    parser.add_argument("--import", dest="import_batch", action="store_true",
                        help="import the written batch into the study (--slug) once the job is done")


def import_written_batch(path: str, slug: str) -> dict:
    """The batch the job wrote, into its study (annotate.services); CommandError if refused."""
    try:
        return services.import_batch_file(path, expected_slug=slug)
    except services.BatchRefused as refused:
        raise CommandError(f"the batch {path} was refused: {refused}") from refused


class Command(BaseCommand):
    help = "Generate candidates: LaMP-style RAG or iCOPERNICUS prompt styles."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="what", required=True)
        rag = sub.add_parser("rag", help=f"LaMP records in, a {ALIGNMENT_KIND} batch out")
        rag.add_argument("--input", required=True)
        rag.add_argument("--models", required=True, help="one or two names from HUMEVAL_MODELS (smollm2 always exists)")
        rag.add_argument("--retriever", required=True, choices=RETRIEVERS)
        rag.add_argument("--k", type=int, required=True)
        rag.add_argument("--out", required=True)
        rag.add_argument("--slug", required=True)
        rag.add_argument("--device", choices=["cpu", "cuda"], default=None)
        rag.add_argument("--discriminative", type=int, default=None,
                         help="keep the N records where the metrics disagree most about the better candidate")
        rag.add_argument("--metrics", default=None,
                         help="metrics for --discriminative (default rouge1,rougeL,bleu,meteor)")
        rag.add_argument("--max-new-tokens", type=int, default=64)
        rag.add_argument("--budget", type=int, default=None, help="words of profile text in a prompt (default 256)")
        rag.add_argument("--temperature", type=float, default=None, help="0 = greedy (the default)")
        rag.add_argument("--stop", action="append", default=None,
                         help="cut the answer at this string (repeatable), as a plan's generation.stop")
        rag.add_argument("--postprocess", choices=["first_line", "title"], default=None,
                         help="the first non-empty line, or that line as a title (a plan's generation.postprocess)")
        rag.add_argument("--encoder", default=None, help="sentence-transformers directory for --retriever dense")
        add_import_argument(rag)
        add_wait_argument(rag)
        ico = sub.add_parser("icopernicus", help="iCOPERNICUS prompt styles, survey batch and EGISES table")
        ico.add_argument("--input", required=True)
        ico.add_argument("--models", required=True)
        ico.add_argument("--out-batch", required=True)
        ico.add_argument("--out-table", required=True)
        ico.add_argument("--slug", required=True)
        ico.add_argument("--device", choices=["cpu", "cuda"], default=None)
        ico.add_argument("--max-new-tokens", type=int, default=None)
        add_import_argument(ico)
        add_wait_argument(ico)

    def handle(self, *args, **opts):
        what = opts["what"]
        names = RAG_OPTIONS if what == "rag" else ICOPERNICUS_OPTIONS
        params = {key: opts[key] for key in names if opts.get(key) is not None}
        job = run_command_job(self, what, params, desc=f"generate {what} ({opts['models']})",
                              no_wait=opts["no_wait"], local=True)
        if job is None:
            return
        if what == "rag":
            summary = job_summary(job)
            check_outcome(self, job)
            if opts["import_batch"]:
                summary["imported"] = import_written_batch(job.result["out"], opts["slug"])
            self.stdout.write(json.dumps(summary, ensure_ascii=False))
        else:
            check_outcome(self, job)
            result = dict(job.result)
            if opts["import_batch"]:
                result["imported"] = import_written_batch(job.params["out_batch"], opts["slug"])
            self.stdout.write(json.dumps(result, ensure_ascii=False))
