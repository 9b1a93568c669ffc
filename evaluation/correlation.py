"""Pearson r, Spearman rho and Kendall tau-b with p-values and 95% intervals
(statistics.md, "Correlations").

- p-values: with n <= 9 the exact permutation p-value (all n! orderings of y against x,
  two-sided: the share with |statistic| >= the observed one); above, scipy's.
- Pearson's interval: Fisher z, tanh(atanh(r) +- 1.96 / sqrt(n - 3)) (n > 3).
- Spearman's and Kendall's intervals: percentile bootstrap over units, 2000 resamples,
  seed 0, when n >= 20, else None (`rank_bootstrap`: compiled, a count per distinct (x, y)
  pair, never sorting a resample).
- n < 3, a constant side or an undefined value gives None, never NaN.
"""
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import stats

from evaluation.bootstrap import percentile_ci
from evaluation.rank_bootstrap import rank_bootstrap

METHODS = ("pearson", "spearman", "kendall")
RESAMPLES = 2000
EXACT_MAX_N = 9
BOOTSTRAP_MIN_N = 20
Z975 = float(stats.norm.ppf(0.975))
Numbers = Sequence[Any] | np.ndarray


def _number(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _numbers(values: Numbers) -> np.ndarray:
    """Float array of `values`; what is not a number becomes NaN (one pass when all are)."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        return values.astype(float)
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return np.array([_number(v) for v in values], dtype=float)


def clean_pairs(x: Numbers, y: Numbers) -> tuple[np.ndarray, np.ndarray]:
    """The (x, y) pairs where both are numbers (None and NaN dropped).

    >>> [a.tolist() for a in clean_pairs([1, None, 3, 4], [2, 5, float("nan"), 8])]
    [[1.0, 4.0], [2.0, 8.0]]
    """
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} vs {len(y)})")
    a, b = _numbers(x), _numbers(y)
    keep = np.isfinite(a) & np.isfinite(b)
    return a[keep], b[keep]


def _empty(n: int) -> dict[str, Any]:
    return {"n": n, **{m: {"r": None, "p_value": None, "ci95": None} for m in METHODS}}


def _finite(v: Any) -> float | None:
    v = float(v)
    return v if math.isfinite(v) else None


def correlations(x: Numbers, y: Numbers, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """{"n", "pearson"|"spearman"|"kendall": {"r", "p_value", "ci95"}} of paired numbers.

    n = 3 perfectly ranked: every coefficient is 1 and the exact p-value is 2/3! = 1/3.

    >>> r = correlations([1, 2, 3], [10, 20, 30])
    >>> r["n"], r["kendall"]["r"], round(r["kendall"]["p_value"], 6), r["spearman"]["ci95"]
    (3, 1.0, 0.333333, None)
    """
    x, y = clean_pairs(x, y)
    n = len(x)
    if n < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return _empty(n)
    out: dict[str, Any] = {"n": n}
    pearson = stats.pearsonr(x, y)
    spearman = stats.spearmanr(x, y)
    kendall = stats.kendalltau(x, y, variant="b")
    exact = exact_permutation_p(x, y) if n <= EXACT_MAX_N else None
    for method, res in (("pearson", pearson), ("spearman", spearman), ("kendall", kendall)):
        r = _finite(res.statistic)
        p = exact[method] if exact is not None else _finite(res.pvalue)
        out[method] = {"r": r, "p_value": p if r is not None else None, "ci95": None}
    out["pearson"]["ci95"] = fisher_z_ci(out["pearson"]["r"], n)
    if n >= BOOTSTRAP_MIN_N:
        rho, tau = rank_bootstrap(x, y, resamples, seed)
        out["spearman"]["ci95"] = percentile_ci(rho) if out["spearman"]["r"] is not None else None
        out["kendall"]["ci95"] = percentile_ci(tau) if out["kendall"]["r"] is not None else None
    return out


def fisher_z_ci(r: float | None, n: int) -> list[float] | None:
    """95% interval of Pearson's r by Fisher's z; None for n <= 3 or no r.

    >>> [round(v, 4) for v in fisher_z_ci(0.5, 28)]  # tanh(atanh(.5) -+ 1.96 / 5)
    [0.156, 0.7358]
    """
    if r is None or n <= 3:
        return None
    z = math.atanh(min(max(r, -1.0), 1.0)) if abs(r) < 1 else math.copysign(math.inf, r)
    half = Z975 / math.sqrt(n - 3)
    return [math.tanh(z - half), math.tanh(z + half)]


@lru_cache(maxsize=EXACT_MAX_N + 1)
def _permutations(n: int) -> np.ndarray:
    """All n! orderings of range(n) as rows of an int8 array (identity first)."""
    perms = np.zeros((1, 0), dtype=np.int8)
    for k in range(n):
        rows = perms.shape[0]
        grown = np.empty((rows * (k + 1), k + 1), dtype=np.int8)
        for pos in range(k, -1, -1):  # inserting k last first keeps the identity in row 0
            block = grown[(k - pos) * rows:(k - pos + 1) * rows]
            block[:, :pos] = perms[:, :pos]
            block[:, pos] = k
            block[:, pos + 1:] = perms[:, pos:]
        perms = grown
    perms.setflags(write=False)
    return perms


def exact_permutation_p(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Two-sided exact permutation p-values of Pearson, Spearman and Kendall tau-b: the
    share of the n! orderings of y whose |statistic| is at least the observed one (the
    denominators do not change under permutation, so the numerators are compared)."""
    n = len(x)
    perms = _permutations(n)
    out = {}
    for method, (a, b) in (("pearson", (x, y)), ("spearman", (stats.rankdata(x), stats.rankdata(y)))):
        num = (b[perms] - b.mean()) @ (a - a.mean())
        out[method] = _share_at_least(num, num[0])
    out["kendall"] = _kendall_exact_p(x, y, perms)
    return out


@lru_cache(maxsize=EXACT_MAX_N + 1)
def _pair_signs(n: int) -> np.ndarray:
    """sign(tau(i) - tau(j)) for every ordering tau (rows) and pair i < j (columns)."""
    perms = _permutations(n)
    i, j = np.triu_indices(n, 1)
    signs = np.sign(perms[:, i].astype(np.int16) - perms[:, j]).astype(np.int8)
    signs.setflags(write=False)
    return signs


def _kendall_exact_p(x: np.ndarray, y: np.ndarray, perms: np.ndarray) -> float:
    """Kendall's exact p from S = concordant - discordant pairs (|S| <= 36 fits int8).
    When y has no ties, y's ranks turn every ordering of y into an ordering of 0..n-1, so
    the n! values of S are the cached pair-sign table times x's pair signs (likewise with
    x and y swapped); with ties on both sides, the orderings are enumerated."""
    n = len(x)
    i, j = np.triu_indices(n, 1)
    observed = int(np.sign(x[i] - x[j]) @ np.sign(y[i] - y[j]))
    if len(np.unique(x)) == n:
        x, y = y, x
    if len(np.unique(y)) == n:
        s = _pair_signs(n) @ np.sign(x[i] - x[j]).astype(np.int8)
    else:
        sx = np.sign(x[i] - x[j]).astype(np.int64)
        s = np.concatenate([np.sign(y[p[:, i]] - y[p[:, j]]).astype(np.int64) @ sx
                            for p in np.array_split(perms, max(1, len(perms) // 40320))])
    return float(np.mean(np.abs(s.astype(np.int64)) >= abs(observed)))


def _share_at_least(values: np.ndarray, observed: float) -> float:
    """Share of |values| >= |observed|, with a relative tolerance for rounding."""
    return float(np.mean(np.abs(values) >= abs(observed) * (1 - 1e-9) - 1e-12))


def system_correlations(systems: Sequence[Any], x: Numbers, y: Numbers, resamples: int = RESAMPLES,
                        seed: int = 0) -> dict[str, Any]:
    """`correlations` of per-system means of x and y (n = number of systems); pairs with a
    missing side are dropped first.

    >>> r = system_correlations(["a", "a", "b", "c"], [1, 3, 5, 9], [0.1, 0.3, 0.5, 0.9])
    >>> r["n"], r["systems"], round(r["pearson"]["r"], 12)  # means (2, .2), (5, .5), (9, .9)
    (3, ['a', 'b', 'c'], 1.0)
    """
    if not (len(systems) == len(x) == len(y)):
        raise ValueError("systems, x and y differ in length")
    by: dict[Any, list[tuple[float, float]]] = {}
    for s, a, b in zip(systems, x, y):
        fa, fb = _number(a), _number(b)
        if math.isfinite(fa) and math.isfinite(fb):
            by.setdefault(s, []).append((fa, fb))
    names = sorted(by, key=str)
    means = np.array([np.mean(by[s], axis=0) for s in names]).reshape(-1, 2)
    result = correlations(means[:, 0], means[:, 1], resamples, seed)
    result["systems"] = names
    return result
