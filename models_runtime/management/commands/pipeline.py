"""`manage.py pipeline PLAN.json [--no-wait]`: a study plan (docs/runtime.md) run as one
chain of resumable steps (models_runtime/pipeline.py): generate every system's candidates,
build the batch, import it into the study, score every metric and judge. Input file names
in the plan are relative to the plan file. Prints {"job", "state", "progress", "result",
"errors"}; exits 1 when a step fails. Re-running the plan resumes or reuses what is done."""
import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from models_runtime.job_commands import USER_ERRORS, add_wait_argument, check_outcome, job_summary, run_command_job
from models_runtime.plans import read_plan, validate_plan


class Command(BaseCommand):
    help = "Run a study plan: generate, build the batch, import it, score it."

    def add_arguments(self, parser):
        parser.add_argument("plan", help="the plan JSON file")
        parser.add_argument("--device", choices=["cpu", "cuda"], default=None)
        add_wait_argument(parser)

    def handle(self, *args, **opts):
        try:
            plan = read_plan(opts["plan"])
            if opts["device"] and isinstance(plan, dict):
                plan["device"] = opts["device"]
            params = validate_plan(plan, Path(opts["plan"]).resolve().parent, settings.HUMEVAL_PIPELINE_DIR)
        except USER_ERRORS as exc:
            raise CommandError(f"{opts['plan']}: {exc}") from exc
        job = run_command_job(self, "pipeline", params, desc=f"pipeline {params['study']}",
                              no_wait=opts["no_wait"])
        if job is None:
            return
        self.stdout.write(json.dumps(job_summary(job)))
        check_outcome(self, job)
