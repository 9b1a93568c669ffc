"""manage.py design DESIGN.json [--solve items|overlap] [--simulations N] [--format json|text]:
power of a planned study by simulation (annotate/planning)."""
import json

from django.core.management.base import BaseCommand, CommandError

from annotate.planning.design_spec import DesignInvalid
from annotate.planning.run import prepared, run_design


class Command(BaseCommand):
    help = ("Simulate a planned study through the engine's assignment rules and the report's statistics, and "
            "print the power of each target (with its Monte-Carlo se and median interval width).")

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--solve", choices=("items", "overlap"),
                            help="find the smallest number of items (or annotations per item) reaching 'power'")
        parser.add_argument("--simulations", type=int, help="simulated studies per design (default 1000)")
        parser.add_argument("--format", choices=("json", "text"), default="json")
        parser.add_argument("--workers", type=int, help="processes (default: the machine's cores)")

    def handle(self, *args, path, solve=None, simulations=None, format="json", workers=None, **options):
        try:
            with open(path, encoding="utf-8") as handle:
                raw = json.load(handle)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        except ValueError as exc:
            raise CommandError(f"{path} is not JSON: {exc}") from None
        if simulations is not None:
            if simulations < 1:
                raise CommandError("--simulations must be at least 1")
            raw = {**raw, "simulations": simulations} if isinstance(raw, dict) else raw
        try:
            design = prepared(raw)
        except DesignInvalid as exc:
            for error in exc.errors:
                self.stderr.write(error)
            raise CommandError(f"{len(exc.errors)} problem(s) in {path}; nothing was simulated") from None
        result = run_design(design, workers, solve)
        if format == "json":
            self.stdout.write(json.dumps(result, indent=2, sort_keys=True))
            return
        for target in result["targets"]:
            width = "–" if target["median_width"] is None else f"{target['median_width']:.3f}"
            self.stdout.write(f"{target['test']:<16} power {target['power']:.3f} (se {target['se']:.3f}, "
                              f"n = {target['n_simulations']} simulated studies), median interval width {width}")
        if design.stopping:
            s = result["stopping"]
            self.stdout.write(f"stopping at the first of {s['looks']} looks (every {s['every']} judgments) where "
                              f"target {s['target']} is met: type-I error {s['type1_error_stopping']:.3f} (se "
                              f"{s['type1_error_stopping_se']:.3f}) against {s['type1_error_fixed']:.3f} at fixed n; "
                              f"power {s['power_stopping']:.3f} against {s['power_fixed']:.3f}; mean judgments "
                              f"{s['mean_judgments_design']:.0f} of {s['judgments_fixed']:.0f}")
        if solve:
            self.stdout.write(f"smallest {result['solved']['solved']} reaching power {design.power}: "
                              f"{result['solved']['value']}")
