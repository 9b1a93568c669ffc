"""python manage.py expert --input PATH [--model NAME] [--out PATH] [--shared-checks] [--device cpu|cuda] [--no-wait]

ExPerT as a resumable job (one item per record, `--chunk-size` records per batched LLM step).
Prints {"score": corpus mean F, "items": [explanation objects], "llm_calls": total,
"llm_calls_per_item", "checks": "separate" (official, default) or "shared" (--shared-checks)}."""
from django.core.management.base import BaseCommand

from models_runtime.job_support.job_commands import add_wait_argument, check_outcome, run_command_job
from models_runtime.judges.cli import add_model_arguments, print_json
from models_runtime.judges.expert import ExpertConfig


class Command(BaseCommand):
    help = "ExPerT explanations and scores for JSONL records {id, input, output, reference}."

    def add_arguments(self, parser):
        parser.add_argument("--input", required=True)
        parser.add_argument("--out", help="also write the JSON document to this file")
        parser.add_argument("--max-attempts", type=int, default=3, help="tries per LLM answer before 'unmatched'")
        parser.add_argument("--extract-tokens", type=int, default=ExpertConfig.extract_tokens,
                            help="max new tokens of an aspect extraction answer")
        parser.add_argument("--judge-tokens", type=int, default=ExpertConfig.judge_tokens,
                            help="max new tokens of a matching, content or style answer")
        parser.add_argument("--shared-checks", action="store_true",
                            help="one content/style check per matched (reference, generated) pair for both sides "
                                 "(fewer calls) instead of the official separate, order-reversed checks per side")
        parser.add_argument("--chunk-size", type=int, default=64, help="records per checkpoint and per batched step")
        add_model_arguments(parser)
        add_wait_argument(parser)

    def handle(self, *args, **opts):
        params = {key: opts[key] for key in ("input", "out", "max_attempts", "extract_tokens", "judge_tokens",
                                             "chunk_size", "model", "device") if opts.get(key) is not None}
        if opts["shared_checks"]:
            params["shared_checks"] = True
        job = run_command_job(self, "expert", params, desc="ExPerT", no_wait=opts["no_wait"], local=True)
        if job is None:
            return
        check_outcome(self, job)
        print_json(self, job.result)
