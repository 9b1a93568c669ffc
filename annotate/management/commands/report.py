"""manage.py report SLUG [--format json|csv|html] [--out PATH]: the study report."""
from django.core.management.base import BaseCommand, CommandError

from annotate.models import Study
from annotate.reports.data import study_report
from evaluation.report import FORMATS


class Command(BaseCommand):
    help = "Print (or write to --out) the report of a study as JSON, the per-item CSV table, or HTML."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--format", choices=FORMATS, default="json")
        parser.add_argument("--out", help="write here instead of stdout")
        parser.add_argument("--min-votes", type=int, default=None, dest="min_votes",
                            help="judgments an item needs for a majority (default: the study's min_votes, else 2)")
        parser.add_argument("--include-flagged", action="store_true", dest="include_flagged",
                            help="keep annotators below the study's quality thresholds (left out by default)")

    def handle(self, slug, format, out, min_votes=None, include_flagged=False, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r}")
        if min_votes is not None and min_votes < 1:
            raise CommandError("--min-votes must be at least 1")
        _, text = study_report(study, format, min_votes, include_flagged)
        if out:
            try:
                with open(out, "w", encoding="utf-8", newline="") as handle:
                    handle.write(text)
            except OSError as exc:
                raise CommandError(f"cannot write {out}: {exc.strerror}") from None
        else:
            self.stdout.write(text, ending="")
