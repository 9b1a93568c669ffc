"""The per-system table papers print (pairwise kinds): for every system (a candidate id),
each metric's mean score with a 95% confidence interval, and its human win rate.

- mean: over the non-gold items where the system has a score for that metric; ci95 is the
  t interval mean +- t(0.975, n - 1) * sd / sqrt(n) (sd with n - 1), null below n = 2.
- win rate: wins / decided, over the items whose human majority picked a candidate (ties
  and items without a majority are left out) and that show this system.
"""
import math
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from evaluation.alignment import TIE

from .common import clean
from .inputs import ReportInput


def system_wins(inp: ReportInput, labels: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """({system: items won}, {system: items with a candidate majority that show it})."""
    index = {str(item_id): i for i, item_id in enumerate(inp.item_ids.tolist())}
    wins: dict[str, int] = {}
    decided: dict[str, int] = {}
    for item_id, label in labels.items():
        if label in (None, TIE):
            continue
        for candidate in inp.candidates[index[item_id]].tolist():
            decided[str(candidate)] = decided.get(str(candidate), 0) + 1
        wins[str(label)] = wins.get(str(label), 0) + 1
    return wins, decided


def mean_ci(values: list[float]) -> dict[str, Any]:
    """{"mean", "ci95", "n"} of a sample (t interval; null CI below two values)."""
    n = len(values)
    if not n:
        return {"mean": None, "ci95": None, "n": 0}
    mean = float(np.mean(values))
    if n < 2:
        return {"mean": clean(mean), "ci95": None, "n": 1}
    half = float(student_t.ppf(0.975, n - 1)) * float(np.std(values, ddof=1)) / math.sqrt(n)
    return {"mean": clean(mean), "ci95": [clean(mean - half), clean(mean + half)], "n": n}


def systems_table(inp: ReportInput, labels: dict[str, Any],
                  scores: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """{system: {"n_items", "metrics": {metric: {"mean", "ci95", "n"}}, "wins", "decided",
    "win_rate"}} for every candidate id of the non-gold items."""
    counted = ~inp.is_gold
    ids = inp.candidates[counted]
    systems = sorted({str(c) for c in ids.ravel().tolist() if c is not None})
    wins, decided = system_wins(inp, labels)
    out: dict[str, Any] = {}
    for system in systems:
        metrics = {}
        for metric, columns in sorted(scores.items()):
            values: list[float] = []
            for k, column in enumerate(columns):
                has = counted & ~np.isnan(column) & (inp.candidates[:, k] == system)
                values += column[has].tolist()
            metrics[metric] = mean_ci(values)
        shown = int(sum(system in (str(a), str(b)) for a, b in ids.tolist()))
        n_decided = decided.get(system, 0)
        out[system] = {"n_items": shown, "metrics": metrics, "wins": wins.get(system, 0), "decided": n_decided,
                       "win_rate": clean(wins.get(system, 0) / n_decided) if n_decided else None}
    return out
