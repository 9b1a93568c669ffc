"""python manage.py expert_batch --input PAIRWISE.jsonl --out EXPLANATIONS.jsonl [--slug SLUG]
[--model NAME] [--device cpu|cuda] [--no-wait]

Runs ExPerT on both candidates of every item of an alignment batch (the runtime's ALIGNMENT_KIND),
as a resumable job (one item per batch item), and writes an explanation batch (EXPLANATION_CHOICE). Prints
{"study", "items", "llm_calls", "out"}."""
from django.core.management.base import BaseCommand

from evaluation.report.kinds import EXPLANATION_CHOICE
from models_runtime.job_support.job_commands import add_wait_argument, check_outcome, run_command_job
from models_runtime.judges.cli import add_model_arguments, print_json
from models_runtime.plan_support.plan_kinds import ALIGNMENT_KIND


class Command(BaseCommand):
    help = f"ExPerT run -> {EXPLANATION_CHOICE} batch."

    def add_arguments(self, parser):
        parser.add_argument("--input", required=True, help=f"a {ALIGNMENT_KIND} batch (JSONL)")
        parser.add_argument("--out", required=True, help=f"where to write the {EXPLANATION_CHOICE} batch")
        parser.add_argument("--slug", help="study slug of the new batch (default: <input slug>-explanations)")
        parser.add_argument("--chunk-size", type=int, default=32, help="items per checkpoint and per batched step")
        add_model_arguments(parser)
        add_wait_argument(parser)

    def handle(self, *args, **opts):
        params = {key: opts[key] for key in ("input", "out", "slug", "chunk_size", "model", "device")
                  if opts.get(key) is not None}
        job = run_command_job(self, "expert_batch", params, desc="ExPerT batch", no_wait=opts["no_wait"], local=True)
        if job is None:
            return
        check_outcome(self, job)
        print_json(self, {key: job.result[key] for key in ("study", "items", "llm_calls", "out")})
