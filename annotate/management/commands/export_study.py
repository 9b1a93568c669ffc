"""manage.py export_study SLUG [--format jsonl|hf|parquet] [--out PATH]: a study's backup or data release."""
import sys

from django.core.management.base import BaseCommand, CommandError

from annotate.models import Study
from annotate.studies.backup import write_study
from annotate.studies.release import FORMATS, dataset_card, write_release


class Command(BaseCommand):
    help = ("Write a complete backup of a study as JSONL (default), or a public data release with pseudonymous "
            "annotators: a Hugging Face datasets directory (--format hf) or Parquet files (--format parquet).")

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--format", choices=("jsonl", *FORMATS), default="jsonl")
        parser.add_argument("--out", help="file (jsonl; default stdout) or new directory (hf, parquet) to write")

    def handle(self, *args, slug, format="jsonl", out=None, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r}")
        if format == "jsonl":
            if out:
                with open(out, "w", encoding="utf-8") as stream:
                    write_study(study, stream)
            else:
                write_study(study, sys.stdout)
            return
        if not out:
            raise CommandError(f"--format {format} writes a directory: give it with --out DIR")
        try:
            counts = write_release(study, out, format, dataset_card(study))
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(" ".join(f"{name}={n}" for name, n in counts.items()) + f" -> {out}")
