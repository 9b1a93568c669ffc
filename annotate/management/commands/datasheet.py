"""manage.py datasheet SLUG [--format md|tex|json] [--pay TEXT] [--out PATH]: the methods section."""
from django.core.management.base import BaseCommand, CommandError

from annotate.models import Study
from annotate.reports.datasheet import FORMATS, datasheet, render_datasheet


class Command(BaseCommand):
    help = ("The methods section a paper needs, filled from the study's report: design, rater pool, quality "
            "control, agreement with intervals and the main results, as Markdown, LaTeX (booktabs) or JSON.")

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--format", choices=FORMATS, default="md")
        parser.add_argument("--pay", help='what raters were paid, as the paper should say it (e.g. "GBP 9.00/hour")')
        parser.add_argument("--out", help="write here instead of stdout")

    def handle(self, *args, slug, format="md", pay=None, out=None, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r}")
        text = render_datasheet(datasheet(study, pay=pay), format)
        if out:
            try:
                with open(out, "w", encoding="utf-8") as handle:
                    handle.write(text)
            except OSError as exc:
                raise CommandError(f"cannot write {out}: {exc.strerror}") from None
        else:
            self.stdout.write(text, ending="")
