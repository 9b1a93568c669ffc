"""manage.py import_predictions PATH: load automatic evaluator outputs, all or nothing, idempotent."""
from django.core.management.base import BaseCommand

from annotate.management.commands._io import run_import
from annotate.studies.judgments_io import import_predictions


class Command(BaseCommand):
    help = "Load predictions from the predictions CSV of interfaces.md (a changed value replaces the old one)."

    def add_arguments(self, parser):
        parser.add_argument("path")

    def handle(self, *args, path, **options):
        run_import(self, import_predictions, path, source=path)
