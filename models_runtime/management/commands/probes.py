"""python manage.py probes --input PATH [--metrics gemba,expert,...] [--no-swap] [--model NAME]
[--device cpu|cuda]

The ExPerT paper's robustness probes. Input: a pairwise batch or records
{id, input, output, reference} (or with two `candidates`). Prints
{"suffix": {"text", "metrics": {metric: {"before", "after", "relative_change", "n"}}},
 "order_swap": {"pairwise": {"flip_rate", "flips", "n", "unparsed"}} | null}."""
from django.core.management.base import BaseCommand, CommandError

from models_runtime.judges.cli import add_model_arguments, backend_for, print_json, progress_bar, read_jsonl
from models_runtime.judges.probes import SUFFIX, order_probe, records_from_lines, suffix_probe


class Command(BaseCommand):
    help = "Robustness probes: suffix attack (relative score change) and order swap (flip rate)."

    def add_arguments(self, parser):
        parser.add_argument("--input", required=True)
        parser.add_argument("--metrics", default="gemba,geval,expert")
        parser.add_argument("--suffix", default=SUFFIX)
        parser.add_argument("--no-swap", action="store_true", help="skip the order-swap probe")
        add_model_arguments(parser)

    def handle(self, *args, **opts):
        from models_runtime.metrics.registry import UnknownMetric, get_metric

        try:
            singles, pairs = records_from_lines(read_jsonl(opts["input"]))
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        bad = [str(r.get("id", "?")) for r in singles if not isinstance(r.get("output"), str) or not isinstance(r.get("reference"), str)]
        if bad:
            raise CommandError(f"records without output/reference: {', '.join(bad)}")
        if not singles:
            raise CommandError(f"{opts['input']}: no records")
        metrics = [m.strip() for m in opts["metrics"].split(",") if m.strip()]
        try:
            for name in metrics:
                get_metric(name)
        except UnknownMetric as exc:
            raise CommandError(str(exc)) from exc
        steps = len(metrics) + (0 if opts["no_swap"] or not pairs else 1)
        with progress_bar(steps, "probes") as bar:
            per_metric = {}
            for name in metrics:
                per_metric.update(suffix_probe(singles, [name], model=opts["model"], device=opts["device"], suffix=opts["suffix"]))
                bar.update(1)
            swap = None
            if pairs and not opts["no_swap"]:
                swap = {"pairwise": order_probe(pairs, backend_for(opts["model"], opts["device"]))}
                bar.update(1)
        print_json(self, {"suffix": {"text": opts["suffix"], "metrics": per_metric}, "order_swap": swap})
