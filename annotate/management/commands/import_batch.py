"""manage.py import_batch PATH: load a batch JSONL file (studies.md), all or nothing."""
from django.core.management.base import BaseCommand

from annotate.management.commands._io import run_import
from annotate.studies.importing import import_batch


def _import(handle, **kwargs):
    return import_batch(handle, allow_empty=False, **kwargs).as_json()


class Command(BaseCommand):
    help = "Load a batch file. Prints {\"study\", \"created\", \"skipped\"}; on errors nothing is written."

    def add_arguments(self, parser):
        parser.add_argument("path")

    def handle(self, *args, path, **options):
        run_import(self, _import, path, source=path)
