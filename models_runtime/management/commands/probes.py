"""python manage.py probes --input PATH [--metrics gemba,expert,...] [--no-swap] [--model NAME]
[--device cpu|cuda] [--study SLUG] [--no-wait]
python manage.py probes ip PLAN.json [--device cpu|cuda] [--no-wait]

Without a probe name: the ExPerT paper's robustness probes, as a resumable job (one item
per metric, one for the order swap). Input: a pairwise batch or records {id, input,
output, reference} (or with two `candidates`). Prints
{"suffix": {"text", "metrics": {metric: {"before", "after", "relative_change", "n"}}},
 "order_swap": {"pairwise": {"flip_rate", "flips", "n", "unparsed"}} | null}.
With --study the job (and so its result) is kept with that study: it is listed in the
study's job panel on the dashboard and readable by the study's researchers through the API.

`probes ip PLAN.json`: the implicit-personalization probes of the plan's models (its `ip`
section, models_runtime/ip/plan.py), as a resumable `ip` job. Prints the job's result:
{"effects": [{"model", "cues", "score", "delta", "ci95", "p_value", "n_questions",
"n_samples", ...}], "questions": [per-question rows], "files": {name: path}, ...}."""
from django.core.management.base import BaseCommand, CommandError

from models_runtime.job_support.job_commands import USER_ERRORS, add_wait_argument, check_outcome, run_command_job
from models_runtime.judges.cli import add_model_arguments, print_json
from models_runtime.judges.probes import SUFFIX


class Command(BaseCommand):
    help = ("Robustness probes: suffix attack (relative score change) and order swap (flip rate); "
            "`probes ip PLAN.json`: implicit-personalization probes.")

    def add_arguments(self, parser):
        parser.add_argument("probe", nargs="?", choices=["ip"], help="ip: implicit-personalization probes of a plan")
        parser.add_argument("plan", nargs="?", help="the plan (JSON) of `probes ip`")
        parser.add_argument("--input", help="robustness probes: a pairwise batch or records")
        parser.add_argument("--metrics", default="gemba,geval,expert")
        parser.add_argument("--suffix", default=SUFFIX)
        parser.add_argument("--no-swap", action="store_true", help="skip the order-swap probe")
        parser.add_argument("--study", default="", help="keep the result with this study (its slug)")
        add_model_arguments(parser)
        add_wait_argument(parser)

    def handle(self, *args, **opts):
        if opts["probe"] == "ip":
            return self.implicit_personalization(opts)
        params = {"input": opts["input"], "metrics": opts["metrics"], "suffix": opts["suffix"],
                  "swap": not opts["no_swap"], "model": opts["model"], "device": opts["device"]}
        if opts["study"]:
            params["study"] = opts["study"]
        self.run_job("probes", params, opts, "probes")

    def run_job(self, kind, params, opts, desc):
        """Run (or resume) the job here and print its result."""
        job = run_command_job(self, kind, params, desc=desc, no_wait=opts["no_wait"], local=True)
        if job is None:
            return
        check_outcome(self, job)
        print_json(self, job.result)

    def implicit_personalization(self, opts):
        from models_runtime.ip.plan import probe_plan_params
        from models_runtime.plans import read_plan

        if not opts["plan"]:
            raise CommandError("usage: manage.py probes ip PLAN.json")
        try:
            params = probe_plan_params(read_plan(opts["plan"]), opts["plan"])
        except USER_ERRORS as exc:
            raise CommandError(str(exc)) from exc
        if opts["device"]:
            params["device"] = opts["device"]
        self.run_job("ip", params, opts, "ip probes")
