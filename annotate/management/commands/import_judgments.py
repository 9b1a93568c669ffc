"""manage.py import_judgments PATH: load a judgments CSV (or JSONL), all or nothing, idempotent."""
from django.core.management.base import BaseCommand

from annotate.management.commands._io import run_import
from annotate.studies.judgments_io import import_judgments


class Command(BaseCommand):
    help = "Load judgments from the judgments CSV of interfaces.md (annotators are created on the fly)."

    def add_arguments(self, parser):
        parser.add_argument("path")

    def handle(self, *args, path, **options):
        run_import(self, import_judgments, path, source=path)
