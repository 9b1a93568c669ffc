"""The ExPerT alignment study's report (statistics.md): the choice report of its `choice`
question (report/choice.py, shared with the other pairwise kinds)."""
from ..choice import REPORT_SCHEMA, build, ppi_quantities, table_picks

__all__ = ["REPORT_SCHEMA", "build", "ppi_quantities", "table_picks"]

PAIR_UNITS = True  # the CSV's per-item table reads (item, shown pair) units (report/pair_units.py)
