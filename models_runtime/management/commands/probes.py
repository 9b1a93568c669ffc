"""python manage.py probes --input PATH [--metrics gemba,expert,...] [--no-swap] [--model NAME]
[--device cpu|cuda] [--study SLUG] [--no-wait]

The ExPerT paper's robustness probes, as a resumable job (one item per metric, one for the
order swap). Input: a pairwise batch or records {id, input, output, reference} (or with two
`candidates`). Prints
{"suffix": {"text", "metrics": {metric: {"before", "after", "relative_change", "n"}}},
 "order_swap": {"pairwise": {"flip_rate", "flips", "n", "unparsed"}} | null}.
With --study the job (and so its result) is kept with that study: it is listed in the
study's job panel on the dashboard and readable by the study's researchers through the API."""
from django.core.management.base import BaseCommand

from models_runtime.job_commands import add_wait_argument, check_outcome, run_command_job
from models_runtime.judges.cli import add_model_arguments, print_json
from models_runtime.judges.probes import SUFFIX


class Command(BaseCommand):
    help = "Robustness probes: suffix attack (relative score change) and order swap (flip rate)."

    def add_arguments(self, parser):
        parser.add_argument("--input", required=True)
        parser.add_argument("--metrics", default="gemba,geval,expert")
        parser.add_argument("--suffix", default=SUFFIX)
        parser.add_argument("--no-swap", action="store_true", help="skip the order-swap probe")
        parser.add_argument("--study", default="", help="keep the result with this study (its slug)")
        add_model_arguments(parser)
        add_wait_argument(parser)

    def handle(self, *args, **opts):
        params = {"input": opts["input"], "metrics": opts["metrics"], "suffix": opts["suffix"],
                  "swap": not opts["no_swap"], "model": opts["model"], "device": opts["device"]}
        if opts["study"]:
            params["study"] = opts["study"]
        job = run_command_job(self, "probes", params, desc="probes", no_wait=opts["no_wait"], local=True)
        if job is None:
            return
        check_outcome(self, job)
        print_json(self, job.result)
