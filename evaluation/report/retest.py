"""The report's `retest` section (statistics.md, "Test-retest"): every kind's repeats, in
JSON, the CSV report's retest table and an HTML table with n and intervals.

Input (ReportInput.retest_pairs): {level: (annotators, first answers, repeat answers)},
one row per repeated answer (an item's question), in the study's terms (candidate ids,
scale values). Choice questions are compared at the nominal level (Cohen's kappa), rating
questions at the interval level (Krippendorff's alpha); a study with both (explanation
choice: choice and usefulness) reports the choices in `retest` and the ratings in
`retest.ratings`. The statistics are evaluation.screens.retest's.
"""
from typing import Any

from evaluation.screens.retest import retest

from .markup import table

NOMINAL, INTERVAL = "nominal", "interval"


def _block(pairs: tuple[list, list, list], level: str, max_flip_rate: float | None) -> dict[str, Any]:
    who, first, repeat = pairs
    out = retest(who, first, repeat, level, max_flip_rate)
    return {**out["retest"], "annotators": out["annotators"]}


def retest_section(pairs: dict[str, tuple[list, list, list]], max_flip_rate: float | None) -> dict[str, Any]:
    """The report's `retest` (see the module docstring); "no repeats" when there are none."""
    if NOMINAL in pairs:
        section = _block(pairs[NOMINAL], NOMINAL, max_flip_rate)
        if INTERVAL in pairs:
            section["ratings"] = _block(pairs[INTERVAL], INTERVAL, max_flip_rate)
        return section
    return _block(pairs.get(INTERVAL, ([], [], [])), INTERVAL if INTERVAL in pairs else NOMINAL, max_flip_rate)


def _parts(section: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    parts = [("", section)]
    if isinstance(section.get("ratings"), dict):
        parts.append(("ratings", section["ratings"]))
    return parts


RETEST_HEADER = ["retest_table", "part", "annotator", "n_pairs", "flip_rate", "flip_rate_ci95_low",
                 "flip_rate_ci95_high", "statistic", "level", "agreement", "agreement_ci95_low",
                 "agreement_ci95_high", "flag", "ci_method"]


def retest_rows(report: dict[str, Any]) -> list[list[Any]]:
    """The CSV report's retest table: one row over the study (annotator `*`) and one per
    annotator with >= 5 repeats, per part ("" or "ratings")."""
    rows: list[list[Any]] = []
    for part, block in _parts(report.get("retest") or {}):
        agreement = block.get("agreement") or {}
        flip_ci = block.get("flip_rate_ci95") or [None, None]
        agree_ci = agreement.get("ci95") or [None, None]
        rows.append(["retest", part, "*", block.get("n_pairs"), block.get("flip_rate"), *flip_ci,
                     agreement.get("statistic"), agreement.get("level"), agreement.get("value"), *agree_ci, "",
                     block.get("ci_method")])
        for name, a in sorted((block.get("annotators") or {}).items()):
            rows.append(["retest", part, name, a["n_pairs"], a["flip_rate"], None, None, agreement.get("statistic"),
                         agreement.get("level"), a["agreement"], None, None, a["flag"], ""])
    return [["" if v is None else v for v in row] for row in rows]


def _fmt(value: Any) -> str:
    return "" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _interval(ci: Any) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "none"


def html_section(report: dict[str, Any]) -> str:
    """The HTML table: the study row (with its intervals over annotators) and one row per
    annotator with >= 5 repeats."""
    section = report.get("retest")
    if not section:
        return ""
    parts = []
    for part, block in _parts(section):
        agreement = block.get("agreement") or {}
        statistic = {"cohen_kappa": "Cohen's kappa", "krippendorff_alpha": "Krippendorff's alpha"}.get(
            str(agreement.get("statistic")), "agreement")
        rows = [("all annotators", block.get("n_pairs"), _fmt(block.get("flip_rate")),
                 _interval(block.get("flip_rate_ci95")), _fmt(agreement.get("value")), _interval(agreement.get("ci95")),
                 "")]
        rows += [(name, a["n_pairs"], _fmt(a["flip_rate"]), "", _fmt(a["agreement"]), "", a["flag"])
                 for name, a in sorted((block.get("annotators") or {}).items())]
        reason = block.get("reason") or block.get("flip_rate_ci_reason") or agreement.get("ci_reason")
        caption = (f"{'Ratings: ' if part else ''}n = repeated answers (first, repeat) compared; flip rate = share "
                   f"whose repeat differs from the first; {statistic} ({agreement.get('level')}) between first and "
                   f"repeat. 95% CIs: {block.get('ci_method')} (none from fewer than 5 annotators). Rows per "
                   f"annotator: those with >= {block.get('min_repeats')} repeats."
                   + (f" {reason}." if reason else ""))
        parts.append(table(["annotator", "n", "flip rate", "flip rate 95% CI", statistic, f"{statistic} 95% CI",
                            "flag"], rows, caption))
    return '<section id="retest"><h2>Test-retest</h2>' + "".join(parts) + "</section>"

