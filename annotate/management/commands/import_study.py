"""manage.py import_study PATH [--replace]: restore a backup made by export_study, or read a
data release (a directory written by export_study --format hf|parquet) back as a study."""
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotate.studies.backup import BackupError, import_study
from annotate.studies.release import import_release, is_release


class Command(BaseCommand):
    help = "Restore a study from an export_study backup or release directory; all or nothing."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--replace", action="store_true", help="delete an existing study with the same slug first")

    def handle(self, *args, path, replace=False, **options):
        try:
            if Path(path).is_dir():
                if not is_release(path):
                    raise CommandError(f"{path} is a directory but not a humeval release (no humeval_study.json)")
                study = import_release(path, replace=replace)
            else:
                with open(path, encoding="utf-8") as stream:
                    study = import_study(stream, replace=replace)
        except (OSError, BackupError) as exc:
            raise CommandError(str(exc)) from None
        counts = {"study": study.slug, "items": study.items.count(), "judgments": study.judgments.count(),
                  "predictions": study.predictions.count(), "audit": study.audit.count()}
        self.stdout.write(json.dumps(counts))
