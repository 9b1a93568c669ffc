"""manage.py import_batch PATH: load a batch JSONL file (studies.md), all or nothing."""
from django.core.management.base import BaseCommand

from annotate.management.commands._io import run_import
from annotate.studies.hf_batch import batch_from_dataset
from annotate.studies.importing import import_batch


def _import(handle, **kwargs):
    return import_batch(handle, allow_empty=False, **kwargs).as_json()


def _import_hf(dataset_dir, split):
    def load(handle, **kwargs):
        with batch_from_dataset(handle.read(), dataset_dir, split) as batch:
            return _import(batch, **kwargs)
    return load


class Command(BaseCommand):
    help = "Load a batch file. Prints {\"study\", \"created\", \"skipped\"}; on errors nothing is written."

    def add_arguments(self, parser):
        parser.add_argument("path", help="the batch file; with --from-hf, a file holding the header line alone")
        parser.add_argument("--from-hf", dest="from_hf", metavar="DIR",
                            help="take the items from a Hugging Face dataset saved to disk (its columns = item keys)")
        parser.add_argument("--split", help="with --from-hf: the split of a DatasetDict (default: its only split)")

    def handle(self, *args, path, from_hf=None, split=None, **options):
        if from_hf:
            run_import(self, _import_hf(from_hf, split), path, source=f"hf:{from_hf}")
        else:
            run_import(self, _import, path, source=path)
