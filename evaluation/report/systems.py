"""The per-system table papers print (pairwise kinds): for every system (a candidate id),
each metric's mean score with a 95% confidence interval, and its human win rate.

- mean: over the non-gold items where the system has a score for that metric; ci95 is the
  t interval mean +- t(0.975, n - 1) * sd / sqrt(n) (sd with n - 1) over those items, null
  below 5 items or for a constant sample (evaluation.intervals.t_interval, with `ci_reason`).
  For squared errors (`lamp_rmse`, vocabulary.ROOT_OF_MEAN) the root of the mean and of the
  interval's ends: LaMP's RMSE.
- win rate: wins / decided, over the items whose human majority picked a candidate (ties
  and items without a majority are left out) and that show this system.
"""
import math
from typing import Any

import numpy as np

from evaluation.alignment import TIE
from evaluation.intervals import t_interval
from evaluation.vocabulary import ROOT_OF_MEAN

from .common import clean
from .inputs import ReportInput, codes_of, objects


def str_counts(values: np.ndarray) -> dict[str, int]:
    """{str(value): occurrences}, in name order (str() once per distinct value)."""
    names, code = codes_of(values)
    out: dict[str, int] = {}
    for name, n in zip(names.tolist(), np.bincount(code, minlength=len(names)).tolist()):
        out[str(name)] = out.get(str(name), 0) + n
    return dict(sorted(out.items()))


def system_wins(inp: ReportInput, labels: np.ndarray) -> tuple[dict[str, int], dict[str, int]]:
    """({system: items won}, {system: items with a candidate majority that show it}) from
    the majority label per item index; an item showing one system twice counts twice for
    it, as before."""
    decided = np.flatnonzero((labels != None) & (labels != TIE))  # noqa: E711 (elementwise)
    return str_counts(labels[decided]), str_counts(inp.candidates[decided].ravel())


def mean_ci(values: list[float] | np.ndarray) -> dict[str, Any]:
    """{"mean", "ci95", "n", "ci_method", "n_clusters", "ci_reason"?} of one value per item
    (t interval over items; evaluation.intervals.t_interval's small-n rules)."""
    result = t_interval(values)
    out = {"mean": clean(result.mean), "ci95": None if result.ci95 is None else [clean(v) for v in result.ci95],
           "n": result.n, "ci_method": "t interval over items", "n_clusters": result.n}
    if result.ci95 is None:
        out["ci_reason"] = result.reason
    return out


def root_of(entry: dict[str, Any]) -> dict[str, Any]:
    """A mean_ci of squared errors as its root (RMSE): the root of the mean and of each end
    of its interval (a negative lower end is 0)."""
    def root(value: float | None) -> float | None:
        return None if value is None else clean(math.sqrt(max(value, 0.0)))
    ci = entry["ci95"]
    return dict(entry, mean=root(entry["mean"]), ci95=None if ci is None else [root(ci[0]), root(ci[1])])


def system_codes(inp: ReportInput) -> tuple[np.ndarray, np.ndarray]:
    """(systems: the sorted candidate ids of the non-gold items as strings, the code of
    each non-gold item's candidates in them, -1 for none)."""
    ids = inp.candidates[~inp.is_gold]
    present = ids != None  # noqa: E711 (elementwise)
    systems, code = codes_of(ids[present])
    if not all(type(s) is str for s in systems.tolist()):  # ids are strings, as a rule
        systems, code = codes_of(objects([str(c) for c in ids[present].tolist()]))
    system_of = np.full(ids.shape, -1, dtype=np.int64)
    system_of[present] = code
    return systems, system_of


def systems_table(inp: ReportInput, wins_decided: tuple[dict[str, int], dict[str, int]],
                  scores: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """{system: {"n_items", "metrics": {metric: {"mean", "ci95", "n"}}, "wins", "decided",
    "win_rate"}} for every candidate id of the non-gold items (`wins_decided`: system_wins).
    A system's values of a metric are its first-candidate scores then its second-candidate
    ones, in item order (grouped with one stable sort, so every mean and sd sums in the same
    order as a plain loop)."""
    counted = ~inp.is_gold
    systems, system_of = system_codes(inp)
    # An item counts once for a system even when it shows it twice.
    shown = np.bincount(system_of[:, 0][system_of[:, 0] >= 0], minlength=len(systems))
    other = (system_of[:, 1] >= 0) & (system_of[:, 1] != system_of[:, 0])
    shown += np.bincount(system_of[:, 1][other], minlength=len(systems))
    wins, decided = wins_decided
    metrics: dict[str, list[dict[str, Any]]] = {}
    for metric, columns in sorted(scores.items()):
        values = [column[counted] for column in columns]
        owner = np.concatenate([system_of[:, k][~np.isnan(values[k])] for k in (0, 1)])
        kept = np.concatenate([values[k][~np.isnan(values[k])] for k in (0, 1)])
        kept, owner = kept[owner >= 0], owner[owner >= 0]
        order = np.argsort(owner, kind="stable")
        bounds = np.searchsorted(owner[order], np.arange(len(systems) + 1))
        metrics[metric] = [mean_ci(kept[order[bounds[s]:bounds[s + 1]]]) for s in range(len(systems))]
        if metric in ROOT_OF_MEAN:
            metrics[metric] = [root_of(entry) for entry in metrics[metric]]
    out: dict[str, Any] = {}
    for s, system in enumerate(systems.tolist()):
        n_decided = decided.get(system, 0)
        out[system] = {"n_items": int(shown[s]), "metrics": {m: rows[s] for m, rows in metrics.items()},
                       "wins": wins.get(system, 0), "decided": n_decided,
                       "win_rate": clean(wins.get(system, 0) / n_decided) if n_decided else None}
    return out
