"""manage.py agreement PATH --level LEVEL: agreement of a long-format CSV unit,coder,value."""
import csv
import json

from django.core.management.base import BaseCommand, CommandError

from evaluation.agreement import LEVELS, fleiss_kappa, krippendorff_alpha, percent_agreement


def read_long_csv(path):
    """(units, coders, values) from a CSV with header unit,coder,value; empty value = missing."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None or not {"unit", "coder", "value"} <= set(reader.fieldnames):
                raise CommandError(f"{path}: header must be unit,coder,value")
            rows = [(r["unit"], r["coder"], r["value"]) for r in reader]
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    rows = [r for r in rows if r[2] is not None and r[2].strip() != ""]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2].strip() for r in rows]


def _numbers(values, path):
    try:
        return [float(v) for v in values]
    except ValueError as exc:
        raise CommandError(f"{path}: non-numeric value for this level ({exc})") from None


class Command(BaseCommand):
    help = "Krippendorff's alpha, Fleiss' kappa and percent agreement of a unit,coder,value CSV."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--level", choices=LEVELS, required=True)

    def handle(self, path, level, **options):
        units, coders, values = read_long_csv(path)
        numeric = _numbers(values, path) if level != "nominal" else values
        try:
            alpha = krippendorff_alpha(units, coders, numeric, level)
            kappa, _ = fleiss_kappa(units, coders, values)
            pct = percent_agreement(units, coders, values)
        except ValueError as exc:
            raise CommandError(f"{path}: {exc}") from None
        self.stdout.write(json.dumps({
            "krippendorff_alpha": alpha.value,
            "fleiss_kappa": kappa,
            "percent_agreement": pct,
            "n_units": alpha.n_units,
            "n_coders": len(set(coders)),
            "n_values": alpha.n_values,
        }))
