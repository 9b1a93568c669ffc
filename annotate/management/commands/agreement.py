"""manage.py agreement PATH --level LEVEL: agreement of a long-format CSV unit,coder,value."""
import csv
import json

from django.core.management.base import BaseCommand, CommandError

from evaluation.agreement import LEVELS, fleiss_kappa, krippendorff_alpha, percent_agreement
from evaluation.tabulate import as_numbers, is_missing


def read_long_csv(path):
    """(units, coders, values, line numbers) from a CSV with header unit,coder,value; missing
    values ("", nan, NA, null) are dropped, as statistics.md says."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None or not {"unit", "coder", "value"} <= set(reader.fieldnames):
                raise CommandError(f"{path}: header must be unit,coder,value")
            rows = [(r["unit"], r["coder"], r["value"], line) for line, r in enumerate(reader, start=2)]
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    rows = [r for r in rows if not is_missing(r[2])]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2].strip() for r in rows], [r[3] for r in rows]


def _numbers(values, lines, path):
    """The values as numbers; every value that is not one is an error `line N: ...`."""
    bad = []
    for value, line in zip(values, lines):
        try:
            as_numbers([value])
        except ValueError:
            bad.append(f"line {line}: value {value!r} is not a number")
    if bad:
        raise CommandError(f"{path}: " + "; ".join(bad))
    return as_numbers(values)


class Command(BaseCommand):
    help = "Krippendorff's alpha, Fleiss' kappa and percent agreement of a unit,coder,value CSV."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--level", choices=LEVELS, required=True)

    def handle(self, path, level, **options):
        units, coders, values, lines = read_long_csv(path)
        data = _numbers(values, lines, path) if level != "nominal" else values
        try:
            alpha = krippendorff_alpha(units, coders, data, level)
            kappa, kappa_units = fleiss_kappa(units, coders, data, level)
            pct = percent_agreement(units, coders, data, level)
        except ValueError as exc:
            raise CommandError(f"{path}: {exc}") from None
        self.stdout.write(json.dumps({
            "krippendorff_alpha": alpha.value,
            "fleiss_kappa": kappa,
            "fleiss_n_units": kappa_units,
            "percent_agreement": pct,
            "n_units": alpha.n_units,
            "n_coders": len(set(coders)),
            "n_values": alpha.n_values,
        }))
