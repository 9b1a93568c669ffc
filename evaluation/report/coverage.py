"""How much of a study each automatic metric really scored, and the report's warnings
(issue 16, D6): a judge whose answers could not be parsed must not look like a metric
that scored everything.

Per metric, over the study's real (non-gold) items:
- `n_items`: the real items;
- `n_scored`: the items the metric has a pick on (every candidate scored, or a predicted
  choice);
- `n_unparsed`: the items with at least one prediction of the metric whose value is empty
  or not a number (the judge's answer had no score in it; "N/A" choices are not counted);
- `n_nonfinite`: the items with a score of +-inf (in `metric_scores` or a score prediction):
  not a finite number, so no score there (no pick, left out of correlations and means).
Items of more than two candidates are counted as items too, not as (item, shown pair) units
(`item_picks`: every candidate scored), so these counts are the score job's `coverage`.
`warnings` flags an alignment that rests on fewer than MIN_ITEMS items, one whose 95% CI is
degenerate (zero width), and every metric with unparsed items.
"""
from typing import Any

import numpy as np

from evaluation.vocabulary import CHOICE_QUESTION as CHOICE

from .inputs import ReportInput, to_float

MIN_ITEMS = 10


def metric_coverage(inp: ReportInput, picks: dict[str, np.ndarray]) -> dict[str, dict[str, int]]:
    """{metric: {"n_items", "n_scored", "n_unparsed"}} for every metric with a pick (`picks`:
    pick per item index, None for none) or an unparsed prediction (a judge that failed
    everywhere is listed with n_scored 0)."""
    real = ~inp.is_gold
    n_items = int(real.sum())
    on_candidate = inp.p_on_candidate
    own = (inp.p_annotator == "") & real[inp.p_item] if len(inp.p_item) else np.zeros(0, dtype=bool)
    not_a_number = np.zeros(len(inp.p_item), dtype=bool)
    not_a_number[on_candidate] = np.isnan(to_float(inp.p_value[on_candidate]))  # only score rows are read
    unparsed = own & ((on_candidate & not_a_number) | ((inp.p_question == CHOICE) & (inp.p_value == "")))
    infinite = np.zeros(len(inp.p_item), dtype=bool)
    infinite[on_candidate] = np.isinf(to_float(inp.p_value[on_candidate]))
    infinite &= own
    s_inf = np.isinf(inp.s_value) & real[inp.s_item] if len(inp.s_item) else np.zeros(0, dtype=bool)
    nonfinite_items: dict[str, set[int]] = {}
    for item, name in zip(np.r_[inp.p_item[infinite], inp.s_item[s_inf]].tolist(),
                          np.r_[inp.p_evaluator[infinite], inp.s_metric[s_inf]].tolist()):
        nonfinite_items.setdefault(str(name), set()).add(int(item))
    names = set(picks) | {str(n) for n in np.unique(inp.p_evaluator[unparsed]).tolist()} | set(nonfinite_items)
    out = {}
    for name in sorted(names):
        bad = unparsed & (inp.p_evaluator == name) if unparsed.any() else unparsed
        scored = int(np.count_nonzero(picks[name] != None)) if name in picks else 0  # noqa: E711 (elementwise)
        out[name] = {"n_items": n_items, "n_scored": scored,
                     "n_unparsed": int(len(np.unique(inp.p_item[bad]))),
                     "n_nonfinite": len(nonfinite_items.get(name, ()))}
    return out


def item_picks(real: ReportInput, view: ReportInput, picks: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """`picks` of the (item, shown pair) units as one entry per real item (True = scored,
    None = not), so that coverage counts items as the score job does
    (annotate.services.metric_coverage): a score metric scored an item when every candidate
    of it has a finite score, a predicted choice when one of its units has a pick."""
    n_cand = np.bincount(real.c_item, minlength=real.n_items)
    unit_item = view.unit_item  # type: ignore[attr-defined]  # set by pair_view
    out = {}
    for name, pick in picks.items():
        rows = (real.s_metric == name) & np.isfinite(real.s_value)
        scored = np.zeros(real.n_items, dtype=bool)
        if rows.any():
            pairs = set(zip(real.s_item[rows].tolist(), real.s_candidate[rows].tolist()))
            per_item = np.bincount(np.array([i for i, _ in pairs], dtype=np.int64), minlength=real.n_items)
            scored = (per_item >= n_cand) & (n_cand > 0)
        else:
            scored[unit_item[np.flatnonzero(pick != None)]] = True  # noqa: E711 (elementwise)
        entry = np.full(real.n_items, None, dtype=object)
        entry[scored & ~real.is_gold] = True
        out[name] = entry
    return out


def report_warnings(alignment: dict[str, dict[str, Any]], coverage: dict[str, dict[str, int]]) -> list[str]:
    """One sentence per problem, metrics in name order."""
    warnings = []
    for name in sorted(set(alignment) | set(coverage)):
        entry = alignment.get(name)
        if entry is not None and entry["n"] < MIN_ITEMS:
            warnings.append(f"{name}: alignment rests on {entry['n']} items (fewer than {MIN_ITEMS})")
        if entry is not None and entry["ci95"] is not None and entry["ci95"][0] == entry["ci95"][1]:
            warnings.append(f"{name}: the 95% CI of alignment is degenerate (zero width)")
        cov = coverage.get(name)
        if cov is not None and cov["n_unparsed"]:
            warnings.append(f"{name}: {cov['n_unparsed']} of {cov['n_items']} items have unparsed judge answers "
                            f"({cov['n_scored']} scored)")
        if cov is not None and cov.get("n_nonfinite"):
            warnings.append(f"{name}: {cov['n_nonfinite']} items have a score of +-inf, left out as no score")
    return warnings
