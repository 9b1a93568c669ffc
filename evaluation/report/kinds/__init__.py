"""One report module per study kind: `evaluation/report/kinds/<kind name>.py`, found here by
its file name (as the kind's template is `templates/annotate/_<kind name>.html`), so a new
kind adds its module and nothing else in evaluation/.

A report module has `build(inp) -> dict` (the report of interfaces.md) and optionally:
- `html_section(report, inp) -> str`: the kind's section of the HTML report (`inp`: the
  ReportInput, or None when only the report is at hand);
- `rating_figures(report, value_counts) -> [html]`: its own rating histograms;
- `table_picks(inp) -> {column: {(item id, question): value}}`: `pick_<column>` cells of the
  per-item CSV table (metric picks; non-personalized predictions are added for every kind);
- `table_columns(inp, report) -> {column: {(item id, question): value}}`: more CSV columns,
  after the picks, named as given;
- `REPORT_SCHEMA`: {report key: JSON Schema} of the kind's own report keys (the API schema);
- `ppi_quantities(inp) -> [Quantity]`: the human quantities an evaluator's predictions can
  stand in for (report/ppi/quantities.py); build.py adds the `ppi` key from them.
BUILDERS (build.py) and KIND_SECTIONS (html.py) are derived from REPORT_MODULES. The kind
names as constants (`ASPECT_PAIRWISE`, ...) come from here too (`__getattr__`).
"""
import importlib
import pkgutil
from types import ModuleType

REPORT_MODULES: dict[str, ModuleType] = {
    info.name: importlib.import_module(f"{__name__}.{info.name}")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name) if not info.ispkg
}


def __getattr__(constant: str) -> str:
    """A kind's name as a constant: `from evaluation.report.kinds import PAIRWISE_ALIGNMENT`
    is the name of the kind whose report module is that name in lower case. The file names
    are the kinds' names (report module, template), so code that must name one kind (a
    runtime step writing a batch of that kind, the demo) spells it nowhere itself, and a
    misspelt constant fails at import."""
    name = constant.lower()
    if constant.isupper() and name in REPORT_MODULES:
        return name
    raise AttributeError(f"module {__name__!r} has no attribute {constant!r}")
