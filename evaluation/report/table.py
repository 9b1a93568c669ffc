"""The CSV report: the per-item table (one row per (item, question) with judgments: the
majority, the count of each value, each metric's pick / each evaluator's prediction, then
the kind's own columns), then one empty line, then the correlation table (one row per
correlation entry and coefficient; layout in docs/reports.md), then, for the pairwise kinds,
one empty line and the per-system table (one row per system and measure, per aspect for a
kind with aspects), then, for a study with test-retest repeats, one empty line and the
retest table (report/retest.py), then, where the report has `ppi`, one empty line and the
prediction-powered table (one row per evaluator, quantity and target: report/ppi/part.py).
The picks and the kind's columns come from its report module (`table_picks`,
`table_columns`: report/kinds/)."""
import io
from collections import Counter
from typing import Any

import numpy as np

from evaluation.csv_cells import SafeWriter
from evaluation.majority import majority_labels
from evaluation.vocabulary import RANKED

from .inputs import ReportInput
from .kinds import REPORT_MODULES
from .pair_units import pair_view
from .ppi.part import CSV_HEADER as PPI_HEADER
from .ppi.part import csv_rows as ppi_rows
from .retest import RETEST_HEADER, retest_rows


def item_table_rows(inp: ReportInput) -> tuple[list[str], list[list[Any]]]:
    """(header, rows) of the per-item table; a kind whose module sets PAIR_UNITS has one row
    per (item, shown pair) unit when its items hold more than two candidates."""
    if getattr(REPORT_MODULES.get(inp.kind), "PAIR_UNITS", False):
        inp = pair_view(inp)
    keys = list(zip(inp.j_item.tolist(), inp.j_question.tolist()))
    unit_of: dict[tuple[int, str], int] = {}
    units = np.array([unit_of.setdefault(k, len(unit_of)) for k in keys], dtype=np.int64)
    counts = Counter(zip(units.tolist(), inp.j_value.tolist()))
    values = sorted({v for _, v in counts}, key=lambda v: (not _is_number(v), _as_number(v), v))
    non_gold = ~inp.is_gold[inp.j_item] if len(keys) else np.zeros(0, dtype=bool)
    labels = (majority_labels(units[non_gold], inp.j_value[non_gold].astype(str), inp.min_votes)
              if non_gold.any() else {})
    module = REPORT_MODULES[inp.kind]
    picks = dict(module.table_picks(inp)) if hasattr(module, "table_picks") else {}
    predicted: dict[str, dict[tuple[str, str], Any]] = {}
    for item, evaluator, who, question, value, is_score in zip(inp.p_item, inp.p_evaluator, inp.p_annotator,
                                                               inp.p_question, inp.p_value, inp.p_on_candidate):
        if not who and not is_score:
            predicted.setdefault(str(evaluator), {})[(str(inp.item_ids[item]), question)] = value
    for evaluator, by in predicted.items():
        picks.setdefault(evaluator, {}).update(by)
    metrics = sorted(picks)
    columns = module.table_columns(inp) if hasattr(module, "table_columns") else {}
    per_unit = np.bincount(units, minlength=len(unit_of)) if len(units) else np.zeros(0, dtype=np.int64)
    if not getattr(module, "VALUE_COLUMNS", True):  # answers too many to count one column each (whole orders)
        values = []
    header = (["item_id", "question", "is_gold", "n_judgments", "majority"]
              + [f"n_{v}" for v in values] + [f"pick_{m}" for m in metrics] + list(columns))
    rows = []
    for (item, question), unit in sorted(unit_of.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        item_id = str(inp.item_ids[item])
        n = [counts.get((unit, v), 0) for v in values]
        majority = labels.get(unit) if not inp.is_gold[item] else None
        rows.append([item_id, question, int(inp.is_gold[item]), int(per_unit[unit]),
                     "" if majority is None else majority]
                    + n + [picks[m].get((item_id, question), "") for m in metrics]
                    + [cells.get((item_id, question), "") for cells in columns.values()])
    return header, rows


def _is_number(v: Any) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _as_number(v: Any) -> float:
    return float(v) if _is_number(v) else 0.0


CORRELATION_HEADER = ["correlation_table", "metric", "unit", "n", "coefficient", "r", "p_value",
                      "ci95_low", "ci95_high", "x", "y", "n_clusters", "ci_method", "p_method"]


def correlation_rows(report: dict[str, Any]) -> list[list[Any]]:
    """Rows of the correlation table: `correlations` and `correlations_system` entries,
    one row per coefficient (empty cells for null values)."""
    rows = []
    for table_key in ("correlations", "correlations_system"):
        for metric, entry in (report.get(table_key) or {}).items():
            for method in ("pearson", "spearman", "kendall"):
                c = entry[method]
                ci = c["ci95"] or [None, None]
                rows.append([table_key, metric, entry.get("unit", ""), entry["n"], method]
                            + ["" if v is None else v for v in (c["r"], c["p_value"], ci[0], ci[1])]
                            + [entry.get("x", ""), entry.get("y", "")]
                            + ["" if c.get(k) is None else c[k] for k in ("n_clusters", "ci_method", "p_method")])
    return rows


SYSTEMS_HEADER = ["systems_table", "aspect", "system", "measure", "value", "ci95_low", "ci95_high", "n",
                  "n_clusters", "ci_method", "note"]


def _system_rows(aspect: str, part: dict[str, Any], systems: dict[str, Any]) -> list[list[Any]]:
    """Rows of one per-system table: human win rate, wins, ties, strength, rank, each metric."""
    strengths = part.get(RANKED) or {}
    rows = []

    def row(system: str, measure: str, value: Any, ci: Any = None, n: Any = None, clusters: Any = None,
            method: Any = None, note: Any = None) -> None:
        lo, hi = ci or [None, None]
        rows.append(["systems", aspect, system, measure] + ["" if v is None else v
                                                           for v in (value, lo, hi, n, clusters, method, note)])

    names = sorted(strengths, key=lambda s: (-strengths[s]["strength"], s)) if strengths else sorted(systems)
    strength = (part.get("ranking_detail") or {}).get("strength_measure") or "bradley_terry_strength"
    for system in names:
        entry = systems.get(system) or {}
        human = entry.get("human") or {}
        if human:
            row(system, "human_win_rate", human.get("win_rate"), human.get("ci95"), human.get("n"),
                human.get("n_clusters"), human.get("ci_method"), human.get("ci_reason"))
            row(system, "human_wins", human.get("wins"), n=human.get("n"))
            row(system, "human_ties", human.get("ties"), n=human.get("n"))
        ranked = strengths.get(system)
        if ranked:
            row(system, strength, ranked["strength"], ranked.get("ci95"), None,
                ranked.get("n_clusters"), ranked.get("ci_method"), ranked.get("ci_reason"))
            row(system, "rank", ranked["rank"], ranked.get("rank_ci95"), None, ranked.get("n_clusters"),
                (part.get("ranking_detail") or {}).get("rank_ci_method"), ranked.get("ci_reason"))
        elif not strengths and part.get("reason"):
            row(system, strength, None, note=part.get("reason"))
        bws = entry.get("bws")  # best-worst scaling (a kind whose report counts bws)
        if bws:
            row(system, "bws_score", bws.get("bws_score"), bws.get("ci95"), bws.get("n_shown"), bws.get("n_clusters"),
                bws.get("ci_method"), bws.get("ci_reason"))
        for metric, m in sorted((entry.get("metrics") or {}).items()):
            row(system, f"metric:{metric}", m.get("mean"), m.get("ci95"), m.get("n"), m.get("n_clusters"),
                m.get("ci_method"), m.get("ci_note") or m.get("ci_reason"))
    return rows


def system_rows(report: dict[str, Any]) -> list[list[Any]]:
    """The per-system table of a pairwise report (empty for other kinds)."""
    if RANKED in report:
        return _system_rows("", report, report.get("systems") or {})
    rows = []
    for key, part in (report.get("aspects") or {}).items():
        if isinstance(part, dict) and RANKED in part:
            rows += _system_rows(str(key), part, part.get("systems") or {})
    return rows


def item_table_csv(inp: ReportInput, report: dict[str, Any] | None = None) -> str:
    header, rows = item_table_rows(inp)
    buf = io.StringIO()
    writer = SafeWriter(buf)  # spreadsheet-safe cells (evaluation.csv_cells)
    writer.writerow(header)
    writer.writerows(rows)
    writer.writerow([])
    writer.writerow(CORRELATION_HEADER)
    writer.writerows(correlation_rows(report or {}))
    systems = system_rows(report or {})
    if systems:
        writer.writerow([])
        writer.writerow(SYSTEMS_HEADER)
        writer.writerows(systems)
    if (report or {}).get("retest"):  # test-retest (report/retest.py)
        writer.writerow([])
        writer.writerow(RETEST_HEADER)
        writer.writerows(retest_rows(report or {}))

    ppi = ppi_rows(report or {})
    if ppi:
        writer.writerow([])
        writer.writerow(PPI_HEADER)
        writer.writerows(ppi)
    return buf.getvalue()
