"""manage.py design DESIGN.json [--solve items|overlap] [--simulations N] [--format json|text]:
power of a planned study by simulation (annotate/planning)."""
import json

from django.core.management.base import BaseCommand, CommandError

from annotate.planning.design_spec import DesignInvalid, parse_design
from annotate.planning.pilot import apply_pilot
from annotate.planning.power import power, solve_design


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
            design = parse_design(raw)
            if design.pilot:
                design = apply_pilot(design, set(raw))
                parse_design({**raw, "systems": design.systems, "pilot": None})  # the fitted design is checked too
        except DesignInvalid as exc:
            for error in exc.errors:
                self.stderr.write(error)
            raise CommandError(f"{len(exc.errors)} problem(s) in {path}; nothing was simulated") from None
        result = {"targets": power(design, workers)}
        if solve:
            result["solved"] = solve_design(design, solve, workers)
        if design.fitted:
            result["fitted_from_pilot"] = {"pilot": design.pilot, "parameters": design.fitted,
                                           "systems": design.systems, "position_bias": design.position_bias}
        if format == "json":
            self.stdout.write(json.dumps(result, indent=2, sort_keys=True))
            return
        for target in result["targets"]:
            width = "–" if target["median_width"] is None else f"{target['median_width']:.3f}"
            self.stdout.write(f"{target['test']:<16} power {target['power']:.3f} (se {target['se']:.3f}, "
                              f"n = {target['n_simulations']} simulated studies), median interval width {width}")
        if solve:
            self.stdout.write(f"smallest {result['solved']['solved']} reaching power {design.power}: "
                              f"{result['solved']['value']}")
