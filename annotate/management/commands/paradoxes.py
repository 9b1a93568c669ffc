"""manage.py paradoxes PATH: iCOPERNICUS paradox probes from an EGISES table (CSV).

A cell that is a missing value ("", nan, NA, null: statistics.md) is a missing score, so
its probes are null; any other text that is not a number is an input error (`line N`).
The table holds scores only, no documents, so the probes compare the two values as given
(a report's `paradoxes` decide from an interval over documents instead)."""
import csv
import json

from django.core.management.base import BaseCommand, CommandError

from evaluation.personalization.paradoxes import STYLES, paradoxes
from evaluation.tabulate import is_missing


class Command(BaseCommand):
    help = "Paradox probes per model from a CSV: model plus the six prompt styles (EGISES)."

    def add_arguments(self, parser):
        parser.add_argument("path")

    def handle(self, path, **options):
        try:
            with open(path, newline="", encoding="utf-8-sig") as handle:
                reader = csv.DictReader(handle)
                header = reader.fieldnames or []
                missing = [c for c in ("model", *STYLES) if c not in header]
                if missing:
                    raise CommandError(f"{path}: header lacks {', '.join(missing)}")
                rows = list(enumerate(reader, start=2))
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        out = {}
        for line, row in rows:
            model = (row["model"] or "").strip()
            if not model:
                raise CommandError(f"{path}: line {line}: empty model")
            if model in out:
                raise CommandError(f"{path}: line {line}: model {model!r} listed twice")
            scores = {}
            for style in STYLES:
                cell = (row[style] or "").strip()
                try:
                    scores[style] = None if is_missing(cell) else float(cell)
                except ValueError:
                    raise CommandError(
                        f"{path}: line {line}: {style}: not a number: {cell!r}") from None
            out[model] = paradoxes(scores)
        self.stdout.write(json.dumps(out))
