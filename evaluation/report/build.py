"""Dispatch by study kind, and rendering to the three output formats."""
import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .inputs import ReportInput
from .kinds import REPORT_MODULES
from .ppi.part import ppi_keys


def with_ppi(module: ModuleType) -> Callable[[ReportInput], dict[str, Any]]:
    """The kind's `build`, plus the `ppi` key (report/ppi/part.py) when the kind names the
    human quantities evaluators can stand in for (`ppi_quantities`) and an evaluator has
    predictions on one of them."""
    quantities = getattr(module, "ppi_quantities", None)
    if quantities is None:
        return module.build

    def build(inp: ReportInput) -> dict[str, Any]:
        report: dict[str, Any] = module.build(inp)
        ppi = ppi_keys(inp, quantities(inp))
        if ppi:
            report["ppi"] = ppi
        return report

    build.__doc__ = module.build.__doc__
    return build


# The report function of each study kind (annotate.kinds: StudyKind.report_builder).
BUILDERS = {kind: with_ppi(module) for kind, module in REPORT_MODULES.items()}
FORMATS = ("json", "csv", "html")


def build_report(inp: ReportInput) -> dict[str, Any]:
    """The report dict of one study (every key of interfaces.md for its kind)."""
    try:
        builder = BUILDERS[inp.kind]
    except KeyError:
        raise ValueError(f"unknown study kind {inp.kind!r}") from None
    report = builder(inp)
    if inp.retest_pairs is not None:  # every kind: the repeats' own section (report/retest.py)
        from .retest import retest_section
        report["retest"] = retest_section(inp.retest_pairs, inp.max_flip_rate)
    return report


def render(report: dict[str, Any], inp: ReportInput, fmt: str = "json") -> str:
    """The report as text in `fmt` (json, csv or html)."""
    if fmt == "json":
        return json.dumps(report, indent=2, sort_keys=False, allow_nan=False) + "\n"
    if fmt == "csv":
        from .table import item_table_csv
        return item_table_csv(inp, report)
    if fmt == "html":
        from .html import report_html
        return report_html(report, inp)
    raise ValueError(f"unknown report format {fmt!r}; use one of {', '.join(FORMATS)}")
