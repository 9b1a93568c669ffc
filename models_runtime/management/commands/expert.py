"""python manage.py expert --input PATH [--model NAME] [--out PATH] [--device cpu|cuda]

Prints {"score": corpus mean F, "items": [explanation objects], "llm_calls": total}."""
import json

from django.core.management.base import BaseCommand, CommandError

from models_runtime.judges.cli import add_model_arguments, backend_for, print_json, progress_bar, read_jsonl
from models_runtime.judges.expert import ExpertConfig, corpus_result, explain
from models_runtime.judges.steps import RetryPolicy


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
        add_model_arguments(parser)

    def handle(self, *args, **opts):
        if min(opts["max_attempts"], opts["extract_tokens"], opts["judge_tokens"]) < 1:
            raise CommandError("--max-attempts, --extract-tokens and --judge-tokens must be at least 1")
        records = [r for r in read_jsonl(opts["input"], required=("output", "reference")) if "study" not in r]
        if not records:
            raise CommandError(f"{opts['input']}: no records")
        backend = backend_for(opts["model"], opts["device"])
        config = ExpertConfig(extract_tokens=opts["extract_tokens"], judge_tokens=opts["judge_tokens"],
                              policy=RetryPolicy(max_attempts=opts["max_attempts"]))
        with progress_bar(4, "ExPerT steps") as bar:
            explanations = explain(records, backend, config, progress=lambda step: bar.update(1))
        document = corpus_result(explanations)
        if opts["out"]:
            with open(opts["out"], "w", encoding="utf-8") as handle:
                json.dump(document, handle, ensure_ascii=False)
        print_json(self, document)
