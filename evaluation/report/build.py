"""Dispatch by study kind, and rendering to the three output formats."""
import json

from . import aspects, explanation, pairwise, similarity

BUILDERS = {
    "pairwise_alignment": pairwise.build,
    "explanation_choice": explanation.build,
    "similarity_survey": similarity.build,
    "aspect_pairwise": aspects.build,
}
FORMATS = ("json", "csv", "html")


def build_report(inp):
    """The report dict of one study (every key of interfaces.md for its kind)."""
    try:
        builder = BUILDERS[inp.kind]
    except KeyError:
        raise ValueError(f"unknown study kind {inp.kind!r}") from None
    return builder(inp)


def render(report, inp, fmt="json"):
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
