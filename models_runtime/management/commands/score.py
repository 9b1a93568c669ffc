"""`manage.py score SLUG --metrics rougeL,bleu,... [--model NAME] [--no-wait]`: metric scores
for every item's candidates, as a resumable job (run by the Celery workers when a broker is
configured, in this process otherwise). Prints {"job", "state", "progress", "result",
"errors"} as one JSON document; exits 1 when the job fails."""
import json

from django.core.management.base import BaseCommand

from models_runtime.job_support.job_commands import add_wait_argument, check_outcome, job_summary, run_command_job


class Command(BaseCommand):
    help = "Store automatic metric scores for every candidate of a study."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--metrics", default="rouge1,rougeL,bleu,meteor,bertscore")
        parser.add_argument("--model", default=None,
                            help="LLM judge model name (HUMEVAL_MODELS) for gemba/geval/expert")
        parser.add_argument("--encoder", default=None, help="sentence-transformers directory for bertscore")
        parser.add_argument("--device", choices=["cpu", "cuda"], default=None)
        parser.add_argument("--chunk-size", type=int, default=None)
        parser.add_argument("--task", default=None,
                            help="the LaMP task of every item (LaMP-1 ... LaMP-7, or LaMP_N) for the lamp_* metrics; "
                                 "default: each item's meta.task (plans write it)")
        parser.add_argument("--options", type=json.loads, default=None,
                            help='JSON {metric: {option: value}} for study judges, e.g. '
                                 '\'{"perse_scalar": {"k": 3, "temperature": 0.8, "max_new_tokens": 600}}\'')
        add_wait_argument(parser)

    def handle(self, *args, **opts):
        params = {"study": opts["slug"], "metrics": opts["metrics"], "model": opts["model"],
                  "encoder": opts["encoder"], "device": opts["device"]}
        if opts["task"]:
            params["task"] = opts["task"]
        if opts["chunk_size"]:
            params["chunk_size"] = opts["chunk_size"]
        if opts["options"]:
            params["options"] = opts["options"]
        job = run_command_job(self, "score", params, desc=f"score {opts['slug']}", no_wait=opts["no_wait"])
        if job is None:
            return
        self.stdout.write(json.dumps(job_summary(job)))
        check_outcome(self, job)
