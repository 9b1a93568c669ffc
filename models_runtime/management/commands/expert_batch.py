"""python manage.py expert_batch --input PAIRWISE.jsonl --out EXPLANATIONS.jsonl [--slug SLUG]
[--model NAME] [--device cpu|cuda]

Runs ExPerT on both candidates of every item of a pairwise_alignment batch and writes an
explanation_choice batch. Prints {"study", "items", "llm_calls", "out"}."""
from django.core.management.base import BaseCommand, CommandError

from models_runtime.judges.cli import add_model_arguments, backend_for, print_json, progress_bar, read_jsonl
from models_runtime.judges.expert_batch import explanation_batch, write_batch


class Command(BaseCommand):
    help = "ExPerT run -> explanation_choice batch."

    def add_arguments(self, parser):
        parser.add_argument("--input", required=True, help="a pairwise_alignment batch (JSONL)")
        parser.add_argument("--out", required=True, help="where to write the explanation_choice batch")
        parser.add_argument("--slug", help="study slug of the new batch (default: <input slug>-explanations)")
        add_model_arguments(parser)

    def handle(self, *args, **opts):
        rows = read_jsonl(opts["input"])
        if not any("item_id" in r for r in rows):
            raise CommandError(f"{opts['input']}: no items")
        backend = backend_for(opts["model"], opts["device"])
        with progress_bar(4, "ExPerT steps") as bar:
            try:
                header, items, calls = explanation_batch(rows, backend, opts["slug"], progress=lambda s: bar.update(1))
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
        write_batch(opts["out"], header, items)
        print_json(self, {"study": header["study"]["slug"], "items": len(items), "llm_calls": calls, "out": opts["out"]})
