"""manage.py export_judgments SLUG [--format csv|jsonl] [--out PATH]."""
from django.core.management.base import BaseCommand, CommandError

from annotate.models import Study
from annotate.studies.judgments_csv import iter_judgments, write_judgments
from annotate.studies.judgments_io import export_judgment_rows


class Command(BaseCommand):
    help = "Write a study's judgments as the judgments CSV (or JSONL with the same keys)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--format", choices=("csv", "jsonl"), default="csv")
        parser.add_argument("--out", help="file to write (default: stdout)")

    def handle(self, *args, slug, format, out, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"unknown study {slug!r}")
        rows = export_judgment_rows(study)
        if out:
            with open(out, "w", encoding="utf-8", newline="") as handle:
                write_judgments(rows, handle, format)
        else:
            for chunk in iter_judgments(rows, format):
                self.stdout.write(chunk, ending="")
