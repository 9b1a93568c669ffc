"""manage.py export_study SLUG [--out PATH]: a full JSONL backup of one study."""
import sys

from django.core.management.base import BaseCommand, CommandError

from annotate.models import Study
from annotate.studies.backup import write_study


class Command(BaseCommand):
    help = "Write a complete backup of a study (items, judgments, predictions, audit) as JSONL."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--out", help="file to write (default: stdout)")

    def handle(self, *args, slug, out=None, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r}")
        if out:
            with open(out, "w", encoding="utf-8") as stream:
                write_study(study, stream)
        else:
            write_study(study, sys.stdout)
