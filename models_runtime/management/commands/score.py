"""`manage.py score SLUG --metrics rougeL,bleu,... [--model NAME]`: metric scores for every
item's candidates, as a Celery job when a broker is configured (eager otherwise). Prints
{"job", "state", "progress", "result", "errors"} as one JSON document."""
import json

from django.core.management.base import BaseCommand, CommandError

from models_runtime.backends.config import ModelNotAvailable
from models_runtime.jobs import JobParamsError, job_json, submit_job, uses_broker
from models_runtime.metrics.registry import UnknownMetric
from models_runtime.progress import ProgressBar, wait_for_job


class Command(BaseCommand):
    help = "Store automatic metric scores for every candidate of a study."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--metrics", default="rouge1,rougeL,bleu,meteor,bertscore")
        parser.add_argument("--model", default=None, help="LLM judge model name (HUMEVAL_MODELS) for gemba/geval/expert")
        parser.add_argument("--encoder", default=None, help="sentence-transformers directory for bertscore")
        parser.add_argument("--device", choices=["cpu", "cuda"], default=None)
        parser.add_argument("--chunk-size", type=int, default=None)
        parser.add_argument("--no-wait", action="store_true", help="with a broker: print the queued job and return")

    def handle(self, *args, **opts):
        params = {"study": opts["slug"], "metrics": opts["metrics"], "model": opts["model"],
                  "encoder": opts["encoder"], "device": opts["device"]}
        if opts["chunk_size"]:
            params["chunk_size"] = opts["chunk_size"]
        bar = ProgressBar(f"score {opts['slug']}", self.stderr._out)
        try:
            job = submit_job("score", params, on_progress=bar)
            if uses_broker() and not opts["no_wait"]:
                job = wait_for_job(job, on_progress=bar)
        except (JobParamsError, ModelNotAvailable, UnknownMetric) as exc:
            raise CommandError(str(exc)) from exc
        finally:
            bar.close()
        data = job_json(job)
        self.stdout.write(json.dumps({"job": data["id"], "state": data["state"], "progress": data["progress"],
                                      "result": data["result"], "errors": data["errors"]}))
        if job.state == job.FAILED:
            raise CommandError(f"job {job.pk} failed: {data['errors'][-1]['error'] if data['errors'] else 'unknown'}")
