"""manage.py import_study PATH [--replace]: restore a backup made by export_study."""
import json

from django.core.management.base import BaseCommand, CommandError

from annotate.studies.backup import BackupError, import_study


class Command(BaseCommand):
    help = "Restore a study from an export_study backup; all or nothing."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--replace", action="store_true", help="delete an existing study with the same slug first")

    def handle(self, *args, path, replace=False, **options):
        try:
            with open(path, encoding="utf-8") as stream:
                study = import_study(stream, replace=replace)
        except (OSError, BackupError) as exc:
            raise CommandError(str(exc)) from None
        counts = {"study": study.slug, "items": study.items.count(), "judgments": study.judgments.count(),
                  "predictions": study.predictions.count(), "audit": study.audit.count()}
        self.stdout.write(json.dumps(counts))
