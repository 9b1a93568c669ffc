"""python manage.py perse SLUG [--k K] [--evaluator NAME] [--model NAME] [--device cpu|cuda]

PerSE-style personalized evaluator on an aspect_pairwise study: stores one prediction per
(item, annotator, aspect) and prints the counts."""
from django.core.management.base import BaseCommand, CommandError

from annotate.models import Study
from models_runtime.judges.cli import add_model_arguments, backend_for, print_json, progress_bar
from models_runtime.judges.perse import perse_predict


class Command(BaseCommand):
    help = "Personalized (PerSE-style) predictions of each annotator's aspect choices."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--k", type=int, default=1, help="profile size: the annotator's other judgments shown")
        parser.add_argument("--evaluator", help="evaluator name stored with the predictions (default perse-<model>)")
        add_model_arguments(parser)

    def handle(self, *args, **opts):
        study = Study.objects.filter(slug=opts["slug"]).first()
        if study is None:
            raise CommandError(f"study {opts['slug']!r} does not exist")
        backend = backend_for(opts["model"], opts["device"])
        with progress_bar(1, "PerSE") as bar:
            try:
                result = perse_predict(study, backend, k=opts["k"], evaluator=opts["evaluator"] or f"perse-{opts['model']}")
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            bar.update(1)
        print_json(self, result)
