"""python manage.py perse SLUG [--k K] [--evaluator NAME] [--model NAME] [--device cpu|cuda] [--no-wait]

PerSE-style personalized evaluator on a Per-DOC aspect study (ASPECT_PAIRWISE), as a resumable job (one item
per annotator): stores one prediction per (item, annotator, aspect) and prints the counts
{"study", "evaluator", "predictions", "unparsed", "na", "skipped", "created", "updated"}."""
from django.core.management.base import BaseCommand

from models_runtime.job_support.job_commands import add_wait_argument, check_outcome, run_command_job
from models_runtime.judges.cli import add_model_arguments, print_json


class Command(BaseCommand):
    help = "Personalized (PerSE-style) predictions of each annotator's aspect choices."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--k", type=int, default=1, help="profile size: the annotator's other judgments shown")
        parser.add_argument("--evaluator", help="evaluator name stored with the predictions (default perse-<model>)")
        add_model_arguments(parser)
        add_wait_argument(parser)

    def handle(self, *args, **opts):
        params = {"study": opts["slug"], "k": opts["k"], "evaluator": opts["evaluator"], "model": opts["model"],
                  "device": opts["device"]}
        job = run_command_job(self, "perse", params, desc=f"PerSE {opts['slug']}", no_wait=opts["no_wait"])
        if job is None:
            return
        check_outcome(self, job)
        print_json(self, job.result)
