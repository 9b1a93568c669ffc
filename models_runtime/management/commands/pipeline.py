"""`manage.py pipeline PLAN.json [--no-wait] [--dry-run [N]]`: a study plan
(docs/runtime.md) run as one chain of resumable steps (models_runtime/pipeline.py):
generate every system's candidates, build the batch, import it, score every metric and
judge. Input file names in the plan are relative to the plan file. The whole plan is
checked first (every problem listed, nothing run). Prints {"job", "state", "progress",
"result", "errors"}; exits 1 when the chain fails or is cancelled. Re-running the plan
resumes or reuses what is done. `--dry-run` prints the first prompts of each system and
stops (no job, no model)."""
import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from models_runtime.job_support.job_commands import (
    USER_ERRORS,
    add_wait_argument,
    check_outcome,
    job_summary,
    run_command_job,
)
from models_runtime.pipeline import dry_run
from models_runtime.plans import read_plan, validate_plan


class Command(BaseCommand):
    help = "Run a study plan: generate, build the batch, import it, score it."

    def add_arguments(self, parser):
        parser.add_argument("plan", help="the plan JSON file")
        parser.add_argument("--device", choices=["cpu", "cuda"], default=None)
        parser.add_argument("--dry-run", nargs="?", type=int, const=2, default=None, metavar="N",
                            help="check the plan, print the first N prompts of each system (default 2) and stop")
        add_wait_argument(parser)

    def handle(self, *args, **opts):
        try:
            plan = read_plan(opts["plan"])
            if opts["device"]:
                plan["device"] = opts["device"]
            params = validate_plan(plan, Path(opts["plan"]).resolve().parent, settings.HUMEVAL_PIPELINE_DIR)
            if opts["dry_run"] is not None:
                self.stdout.write(json.dumps(dry_run(params, max(1, opts["dry_run"])), ensure_ascii=False))
                return
        except USER_ERRORS as exc:
            lines = getattr(exc, "errors", None)
            detail = ("\n  " + "\n  ".join(lines)) if lines and len(lines) > 1 else f" {exc}"
            raise CommandError(f"{opts['plan']}: the plan was not run:{detail}") from exc
        job = run_command_job(self, "pipeline", params, desc=f"pipeline {params['study']}",
                              no_wait=opts["no_wait"])
        if job is None:
            return
        self.stdout.write(json.dumps(job_summary(job)))
        left_out(self, job)
        check_outcome(self, job)


def left_out(command, job) -> None:
    """One warning line on stderr when the batch left questions out."""
    batch = ((job.result or {}).get("steps") or {}).get("batch") or {}
    if batch.get("n_left_out"):
        first = batch["left_out"][0]
        total = batch["n_items"] + batch["n_left_out"] + batch.get("failed", 0)
        command.stderr.write(f"warning: {batch['n_left_out']} of {total} questions were left out of the batch "
                             f"(first: {first['id']}: {first['why']}); all: steps.batch.left_out in the job's "
                             f"result (GET /api/jobs/{job.pk}/)")
    same = batch.get("identical_outputs") or {}
    if same.get("questions"):
        pairs = ", ".join(f"{pair} {n}" for pair, n in same["per_pair"].items())
        command.stderr.write(f"note: {same['questions']} questions kept with identical outputs shown once and "
                             f"credited to each system ({same['pairs']} system pairs: {pairs}); "
                             "steps.batch.identical_outputs in the job's result")
