"""Study reports (interfaces.md, "Report JSON"), built from plain arrays with no Django.

`build_report(inp)` returns the report dict for a ReportInput; `render(report, inp, fmt)`
turns it into JSON, the per-item CSV table, or one self-contained HTML page.
"""
from .build import FORMATS, build_report, render  # noqa: F401
from .inputs import ReportInput  # noqa: F401
