"""Prediction-powered estimates of a mean: an evaluator (metric or LLM judge) scores every
item, humans a seeded random subset (statistics.md, "Prediction-powered estimates").

Units are items: several human judgments (or several predictions) of one item are averaged
first, so each item is one independent unit. With n labeled items (human mean y_i,
prediction f_i) and N unlabeled items (prediction g_j), PPI++ with power tuning
(Angelopoulos, Duchi & Zrnic 2023), exactly as `ppi_py.ppi_mean_pointestimate` /
`ppi_mean_ci` with `lam=None` (tests/evaluation/test_ppi.py checks to 1e-6):

- lambda = cov(y, f) / ((1 + n / N) var(f, g)), clipped to [0, 1]: cov over the labeled
  items (divisor n), var over all n + N predictions (divisor n + N - 1);
- estimate = lambda mean(g) + mean(y - lambda f);
- se^2 = var(lambda g) / N + var(y - lambda f) / n (divisor N, n); ci95 = estimate -+ 1.96 se.

The classical estimate is the human mean of the labeled items with the report's interval
for a mean of one value per item, the t interval (`intervals.t_interval`, as
`systems.<s>.metrics`): docs/statistics.md says why not ppi_py's z interval.
`ess_ratio` = (classical width / PPI width)^2 with both widths from the same normal rule
(ppi_py's `classical_mean_ci`, sd with divisor n): var(y) / (n se^2), the factor by which the
labeled items would have to grow for the classical interval to be as narrow.

No PPI figure (null with `reason`; the classical one stays) when the human items were not
drawn at random, a labeled or unlabeled item has no prediction, there are fewer than
MIN_LABELED labeled items or no unlabeled one, or the predictions are constant (lambda is
0 / 0: the judge carries no information; ppi_py then prints a ratio of rounding errors).
"""
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.bootstrap import Z975
from evaluation.intervals import t_interval
from evaluation.tabulate import as_numbers, factorize

# Below 50 labeled items the normal interval undercovers: bench/ppi_bench.py measured 92.2-92.5%
# at 20, 92.8-92.9% at 30, 93.3-93.6% at 50 (docs/benchmarks.md, "Prediction-powered estimates").
MIN_LABELED = 50
CLASSICAL_METHOD = "t interval over the human-labeled items"
PPI_METHOD = "PPI++ normal interval over items (power-tuned lambda; Angelopoulos et al. 2023)"
NOT_RANDOM = "the human items were not drawn as a seeded random subset (human_share): PPI needs a random subset"
CONSTANT = "the predictions are constant: lambda is undefined (0 / 0) and the evaluator adds nothing"


@dataclass(frozen=True)
class PPIArrays:
    """PPI++ on per-item arrays: estimate, ci95, lam (the tuned lambda), se, ess_ratio."""

    estimate: float
    ci95: list[float]
    lam: float
    se: float
    ess_ratio: float


def ppi_arrays(y: np.ndarray, f: np.ndarray, g: np.ndarray) -> PPIArrays | None:
    """PPI++ mean with tuned lambda (module docstring) of labeled y with predictions f and
    unlabeled predictions g; None when the predictions are constant.

    >>> r = ppi_arrays(np.array([1.0, 0.0, 1.0, 1.0]), np.array([0.9, 0.2, 0.7, 0.8]),
    ...                np.array([0.1, 0.6, 0.9, 0.3]))
    >>> round(r.lam, 4), round(r.estimate, 4), [round(v, 4) for v in r.ci95]
    (0.5478, 0.6541, [0.3239, 0.9844])
    """
    n, big_n = len(y), len(g)
    all_f = np.concatenate([f, g])
    var_f = float(np.var(all_f, ddof=1)) if n + big_n > 1 else 0.0
    if var_f <= 0.0 or np.all(all_f == all_f[0]):
        return None
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    lam = min(1.0, max(0.0, cov / ((1 + n / big_n) * var_f)))
    estimate = float(lam * g.mean() + np.mean(y - lam * f))
    se = math.sqrt(float(np.var(lam * g)) / big_n + float(np.var(y - lam * f)) / n)
    ess = float(np.var(y)) / n / se**2 if se > 0 else math.nan
    return PPIArrays(estimate, [estimate - Z975 * se, estimate + Z975 * se], lam, se, ess)


@dataclass(frozen=True)
class PPIResult:
    """Classical and PPI++ estimates of one mean over items; `reason` says why the PPI
    figures are None, `classical_reason` why the classical interval is."""

    n_labeled: int
    n_unlabeled: int
    classical: float | None
    classical_ci95: list[float] | None
    classical_reason: str | None
    estimate: float | None = None
    ci95: list[float] | None = None
    lam: float | None = None
    ess_ratio: float | None = None
    reason: str | None = None

    def report_entry(self) -> dict[str, Any]:
        """The report's `ppi.<evaluator>` entry of this quantity (statistics.md)."""
        classical: dict[str, Any] = {"mean": self.classical, "ci95": self.classical_ci95,
                                     "ci_method": CLASSICAL_METHOD, "n_clusters": self.n_labeled}
        if self.classical_reason:
            classical["ci_reason"] = self.classical_reason
        ppi: dict[str, Any] = {"mean": self.estimate, "ci95": self.ci95, "ci_method": PPI_METHOD,
                               "n_clusters": self.n_labeled + self.n_unlabeled}
        if self.reason:
            ppi["reason"] = self.reason
        return {"unit": "item", "n_labeled": self.n_labeled, "n_unlabeled": self.n_unlabeled,
                "classical": classical, "ppi": ppi, "lambda": self.lam, "ess_ratio": self.ess_ratio}


def _keys(items: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Item keys as an array to factorize: integers stay integers (a report's item indices
    sort in C), anything else becomes an object array."""
    keys = np.asarray(items)
    return keys if keys.dtype.kind in "iu" else np.asarray(items, dtype=object)


def item_means(items: Sequence[Any] | np.ndarray, values: Sequence[Any] | np.ndarray,
               ) -> tuple[np.ndarray, np.ndarray]:
    """(sorted items with at least one value, the mean of their values): missing values
    (None, NaN, "NA") are left out first.

    >>> labels, means = item_means(["b", "a", "b", "c"], [1.0, 2.0, 0.0, None])
    >>> labels.tolist(), means.tolist()
    (['a', 'b'], [2.0, 0.5])
    """
    x = as_numbers(values)
    keep = np.isfinite(x)
    if not keep.any():
        return np.asarray([], dtype=object), np.zeros(0)
    labels, codes = factorize(_keys(items)[keep])
    sums = np.bincount(codes, weights=x[keep], minlength=len(labels))
    return labels, sums / np.bincount(codes, minlength=len(labels))


def ppi_mean(human_items: Sequence[Any] | np.ndarray, human_values: Sequence[Any] | np.ndarray,
             pred_items: Sequence[Any] | np.ndarray, pred_values: Sequence[Any] | np.ndarray,
             items: Sequence[Any] | None = None, random_subset: bool = True) -> PPIResult:
    """Classical and PPI++ estimates of the mean over items of a human quantity.

    human_items / human_values: one row per human judgment (long format); pred_items /
    pred_values: one row per prediction; items: every item of the study (default: those
    named in either list), so that an item nobody scored is seen as missing its prediction.
    random_subset: whether the human items were drawn by `human_subset.human_subset`.

    >>> r = ppi_mean([1, 2], [0.0, 1.0], [1, 2, 3], [0.1, 0.8, 0.5])
    >>> r.classical, r.estimate, r.reason
    (0.5, None, 'fewer than 50 labeled items (2)')
    """
    labeled, y = item_means(human_items, human_values)
    predicted, f_all = item_means(pred_items, pred_values)
    universe = list(items) if items is not None else list(human_items) + list(pred_items)
    all_items = factorize(_keys(universe))[0] if universe else np.asarray([], dtype=object)
    prediction = dict(zip(predicted.tolist(), f_all.tolist()))
    is_labeled = set(labeled.tolist())
    unlabeled = [i for i in all_items.tolist() if i not in is_labeled]
    classical = t_interval(y)

    def result(reason: str | None, ppi: PPIArrays | None = None) -> PPIResult:
        return PPIResult(len(y), len(unlabeled), classical.mean, classical.ci95, classical.reason,
                         None if ppi is None else ppi.estimate, None if ppi is None else ppi.ci95,
                         None if ppi is None else ppi.lam, None if ppi is None else ppi.ess_ratio, reason)

    reason = None
    missing = [i for i in labeled.tolist() + unlabeled if i not in prediction]
    if not random_subset:
        reason = NOT_RANDOM
    elif missing:
        shown = ", ".join(str(i) for i in missing[:5]) + (", ..." if len(missing) > 5 else "")
        reason = f"{len(missing)} item(s) have no prediction ({shown})"
    elif len(y) < MIN_LABELED:
        reason = f"fewer than {MIN_LABELED} labeled items ({len(y)})"
    elif not unlabeled:
        reason = "no unlabeled item: every item has human judgments, PPI adds nothing"
    if reason is not None:
        return result(reason)
    f = np.asarray([prediction[i] for i in labeled.tolist()])
    g = np.asarray([prediction[i] for i in unlabeled])
    ppi = ppi_arrays(y, f, g)
    if ppi is None:
        return result(CONSTANT)
    if not ppi.se > 0:
        return result("the PPI standard error is 0 (no spread left after the correction): no interval")
    return result(None, ppi)
