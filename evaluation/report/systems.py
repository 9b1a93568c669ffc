"""The per-system table papers print (pairwise kinds): for every system (a candidate id),
each metric's mean score with a 95% confidence interval, and its human win rate.

- mean: over the non-gold items where the system has a score for that metric; ci95 is the
  t interval mean +- t(0.975, n - 1) * sd / sqrt(n) (sd with n - 1) over those items, null
  below 5 items or for a constant sample (evaluation.intervals.t_interval, with `ci_reason`).
  For squared errors (`lamp_rmse`, vocabulary.ROOT_OF_MEAN) the root of the mean and of the
  interval's ends: LaMP's RMSE.
- win rate: wins / decided, over the items whose human majority picked a candidate (ties
  and items without a majority are left out) and that show this system.
- the metric means are over the same items as the system's human row (its items with a
  human comparison of it: report/strengths.py) when the study has any human comparison;
  `n_scored` counts every item where the system has a score (the score job's rows) and
  `n_note` says so when the mean's n is smaller;
  an interval is clipped to the metric's scale where it is known (vocabulary.METRIC_SCALES),
  else a note says when it reaches beyond the observed scores.
"""
import math
from typing import Any

import numpy as np

from evaluation.alignment import TIE
from evaluation.intervals import t_interval
from evaluation.vocabulary import METRIC_SCALES, ROOT_OF_MEAN

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


def scale_note(entry: dict[str, Any], metric: str, values: np.ndarray) -> dict[str, Any]:
    """`entry` with its interval clipped to the metric's known scale (METRIC_SCALES: "scale",
    and "ci_note" when clipping changed it); for a metric of unknown scale whose interval
    reaches beyond the observed scores, a "ci_note" saying so (a t interval of a bounded
    score can leave its scale at small n: GEMBA's [-105, 175] on 0-100)."""
    ci = entry.get("ci95")
    scale = METRIC_SCALES.get(metric)
    if scale is not None:
        entry = dict(entry, scale=list(scale))
        if ci is not None and (ci[0] < scale[0] or ci[1] > scale[1]):
            entry["ci95"] = [max(ci[0], scale[0]), min(ci[1], scale[1])]
            entry["ci_note"] = f"t interval clipped to the metric's scale [{scale[0]}, {scale[1]}]"
    elif ci is not None and len(values) and (ci[0] < values.min() or ci[1] > values.max()):
        entry = dict(entry, ci_note=(f"the t interval reaches beyond the observed scores [{clean(values.min())}, "
                                     f"{clean(values.max())}]; the metric's scale is not known, so it is not clipped"))
    return entry


def scored_items(values: np.ndarray, system_of: np.ndarray, n_systems: int) -> np.ndarray:
    """Per system: the items where it has a score (human comparisons or not), an item
    counted once: what the score job stored for it."""
    has = np.zeros((len(values), n_systems), dtype=bool)
    for k in range(values.shape[1]):
        rows = np.flatnonzero(~np.isnan(values[:, k]) & (system_of[:, k] >= 0))
        has[rows, system_of[rows, k]] = True
    return has.sum(axis=0)


def with_scored(entry: dict[str, Any], n_scored: int) -> dict[str, Any]:
    """A metric mean with `n_scored` (the system's items with a score) and, when the mean
    covers fewer (only the items of its human row count), `n_note` saying so."""
    entry = dict(entry, n_scored=n_scored)
    if entry["n"] < n_scored:
        entry["n_note"] = (f"mean over the {entry['n']} items where a judgment compared this system (its human "
                           f"row); {n_scored} items have a score")
    return entry


def systems_table(inp: ReportInput, wins_decided: tuple[dict[str, int], dict[str, int]],
                  scores: dict[str, np.ndarray], same_items: np.ndarray | None = None) -> dict[str, Any]:
    """{system: {"n_items", "metrics": {metric: {"mean", "ci95", "n", ...}}, "wins", "decided",
    "win_rate"}} for every candidate id of the non-gold items (`wins_decided`: system_wins;
    `scores`: {metric: (n_items, width) score per candidate slot, NaN = none}).
    A system's values of a metric are its first-slot scores, then its second-slot ones, and
    so on, in item order (grouped with one stable sort, so every mean and sd sums in the
    same order as a plain loop). `same_items` ((n_items, width) mask): only the slots where
    the system was compared by a human count (the items of its human row)."""
    counted = ~inp.is_gold
    systems, system_of = system_codes(inp)
    width = system_of.shape[1]
    # An item counts once for a system even when it shows it twice.
    shown = np.zeros(len(systems), dtype=np.int64)
    for k in range(width):
        new = system_of[:, k] >= 0
        for j in range(k):
            new &= system_of[:, k] != system_of[:, j]
        shown += np.bincount(system_of[:, k][new], minlength=len(systems))
    wins, decided = wins_decided
    metrics: dict[str, list[dict[str, Any]]] = {}
    for metric, matrix in sorted(scores.items()):
        values = matrix[counted]
        use = ~np.isnan(values) if same_items is None else ~np.isnan(values) & same_items[counted]
        owner = np.concatenate([system_of[:, k][use[:, k]] for k in range(width)])
        kept = np.concatenate([values[:, k][use[:, k]] for k in range(width)])
        kept, owner = kept[owner >= 0], owner[owner >= 0]
        order = np.argsort(owner, kind="stable")
        bounds = np.searchsorted(owner[order], np.arange(len(systems) + 1))
        groups = [kept[order[bounds[s]:bounds[s + 1]]] for s in range(len(systems))]
        metrics[metric] = [with_scored(mean_ci(group), int(n)) for group, n in
                           zip(groups, scored_items(values, system_of, len(systems)))]
        if metric in ROOT_OF_MEAN:
            metrics[metric] = [root_of(entry) for entry in metrics[metric]]
            groups = [np.sqrt(np.maximum(group, 0.0)) for group in groups]
        metrics[metric] = [scale_note(entry, metric, group) for entry, group in zip(metrics[metric], groups)]
    out: dict[str, Any] = {}
    for s, system in enumerate(systems.tolist()):
        n_decided = decided.get(system, 0)
        out[system] = {"n_items": int(shown[s]), "metrics": {m: rows[s] for m, rows in metrics.items()},
                       "wins": wins.get(system, 0), "decided": n_decided,
                       "win_rate": clean(wins.get(system, 0) / n_decided) if n_decided else None}
    return out
