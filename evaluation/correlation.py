"""Pearson r, Spearman rho and Kendall tau-b with p-values and 95% intervals
(statistics.md, "Correlations").

- p-values: with n <= 9 the exact permutation p-value (all n! orderings of y against x,
  two-sided: the share with |statistic| >= the observed one); above, scipy's.
- Pearson's interval: Fisher z, tanh(atanh(r) +- 1.96 / sqrt(n - 3)) (n > 3).
- Spearman's and Kendall's intervals: percentile bootstrap over units, 2000 resamples,
  seed 0, when n >= 20, else None. A resample is a weight per distinct (x, y) pair
  (`bootstrap.bootstrap_weights`); ranks, rank correlation and tau-b are computed from the
  weights with cumulative sums, a block of resamples at a time, never by sorting a resample.
- n < 3, a constant side or an undefined value gives None, never NaN.
"""
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import stats

from evaluation.bootstrap import bootstrap_weights, percentile_ci

METHODS = ("pearson", "spearman", "kendall")
RESAMPLES = 2000
EXACT_MAX_N = 9
BOOTSTRAP_MIN_N = 20
LEVELS_MAX = 64  # Kendall's vectorized bootstrap needs one side with at most this many values
Z975 = float(stats.norm.ppf(0.975))
Numbers = Sequence[Any] | np.ndarray


def _number(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def clean_pairs(x: Numbers, y: Numbers) -> tuple[np.ndarray, np.ndarray]:
    """The (x, y) pairs where both are numbers (None and NaN dropped).

    >>> [a.tolist() for a in clean_pairs([1, None, 3, 4], [2, 5, float("nan"), 8])]
    [[1.0, 4.0], [2.0, 8.0]]
    """
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} vs {len(y)})")
    a = np.array([_number(v) for v in x], dtype=float)
    b = np.array([_number(v) for v in y], dtype=float)
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


def rank_bootstrap(x: np.ndarray, y: np.ndarray, resamples: int = RESAMPLES,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(Spearman rho, Kendall tau-b) of each bootstrap resample of the (x, y) units; NaN
    where a resample is constant on one side.

    Units with equal (x, y) are one profile; a resample is a weight per profile
    (`bootstrap_weights`). y is the side with fewer distinct values ("levels", at most
    LEVELS_MAX, else a scipy loop per resample). With profiles in x order, one running sum
    of each level's weights gives, for every profile j of level b, the weight of level a
    in earlier x groups (L) and in its own x group (E). Summed with j's weight into K x K
    matrices these give Kendall's S = sum_{a<b} 2 L_ab + E_ab - W_b T_a and Spearman's
    covariance of midranks; the midrank variances are (n^3 - n - sum_t (t^3 - t)) / 12
    over the tied groups t."""
    if len(np.unique(x)) < len(np.unique(y)):
        x, y = y, x
    xs, xcode = np.unique(x, return_inverse=True)
    ys, ycode = np.unique(y, return_inverse=True)
    n_levels = len(ys)
    cell, mult = np.unique(xcode.astype(np.int64) * n_levels + ycode, return_counts=True)
    gx, ly = cell // n_levels, cell % n_levels
    new_group = np.r_[True, gx[1:] != gx[:-1]]
    starts = np.flatnonzero(new_group)
    single = len(starts) == len(cell)  # every x group holds one profile
    n = float(len(x))
    mean_rank, pairs, cube = (n + 1.0) / 2.0, n * (n - 1.0) / 2.0, n**3 - n
    rho, tau = [], []
    if n_levels > LEVELS_MAX:
        for w in bootstrap_weights(mult, resamples, seed):
            both = np.array([_scipy_row(xs[gx], ys[ly], row) for row in w]).reshape(-1, 2)
            rho.append(both[:, 0])
            tau.append(both[:, 1])
        return np.concatenate(rho), np.concatenate(tau)
    plan = _Plan(gx, ly, n_levels, single)
    for w in bootstrap_weights(mult, resamples, seed):
        tx = w if single else np.add.reduceat(w, starts, axis=1)  # weight of each x group
        ty = np.stack([w[:, m].sum(axis=1) for m in plan.members], axis=1)  # weight of each level
        earlier, same = plan.cross(w)  # (k, K, K): [a, b] = sum_{j in b} w_j * (weight of a before j / beside j)
        ay = np.cumsum(ty, axis=1) - (ty - 1.0) / 2.0 - mean_rank  # level midrank - mean rank
        # sum_j w_j (midrank_x(j) - mean) per level b: earlier weight + half the own group's + 1/2.
        per_level = earlier.sum(axis=1) + (same.sum(axis=1) + ty) / 2.0 - mean_rank * ty
        cov = np.einsum("ij,ij->i", per_level, ay)
        ties_x = np.einsum("ij,ij,ij->i", tx, tx, tx) - n
        ties_y = np.einsum("ij,ij,ij->i", ty, ty, ty) - n
        vx, vy = (cube - ties_x) / 12.0, (cube - ties_y) / 12.0
        with np.errstate(invalid="ignore", divide="ignore"):
            rho.append(np.where((vx > 0) & (vy > 0), cov / np.sqrt(vx * vy), np.nan))
        upper = np.triu(np.ones((n_levels, n_levels), dtype=bool), 1)  # a < b
        s = (np.sum((2.0 * earlier + same)[:, upper], axis=1)
             - np.einsum("ia,ib,ab->i", ty, ty, upper.astype(float)))
        tied_x = (np.einsum("ij,ij->i", tx, tx) - n) / 2.0
        tied_y = (np.einsum("ij,ij->i", ty, ty) - n) / 2.0
        den = (pairs - tied_x) * (pairs - tied_y)
        with np.errstate(invalid="ignore", divide="ignore"):
            tau.append(np.where(den > 0, s / np.sqrt(np.where(den > 0, den, 1.0)), np.nan))
    return np.concatenate(rho), np.concatenate(tau)


class _Plan:
    """Index arrays of `rank_bootstrap`: the profiles of each level (in x order) and, for
    the profiles of level b, where their x group starts and ends in level a's running sum."""

    def __init__(self, group: np.ndarray, level: np.ndarray, n_levels: int, single: bool) -> None:
        self.members = [np.flatnonzero(level == lev) for lev in range(n_levels)]
        self.single = single
        self.lo = [[np.searchsorted(group[a], group[b], side="left") for b in self.members] for a in self.members]
        self.hi = [[np.searchsorted(group[a], group[b], side="right") for b in self.members] for a in self.members]

    def cross(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n_levels = len(self.members)
        earlier = np.zeros((len(w), n_levels, n_levels))
        same = np.zeros((len(w), n_levels, n_levels))
        weights = [w[:, m] for m in self.members]
        for a, wa in enumerate(weights):
            running = np.zeros((len(w), wa.shape[1] + 1))
            np.cumsum(wa, axis=1, out=running[:, 1:])
            for b, wb in enumerate(weights):
                if not wb.shape[1]:
                    continue
                before = running[:, self.lo[a][b]]
                earlier[:, a, b] = np.einsum("ij,ij->i", wb, before)
                if a == b:
                    same[:, a, b] = np.einsum("ij,ij->i", wb, wb)  # a profile is alone in its (x, level) cell
                elif not self.single:
                    same[:, a, b] = np.einsum("ij,ij->i", wb, running[:, self.hi[a][b]]) - earlier[:, a, b]
        return earlier, same


def _scipy_row(x: np.ndarray, y: np.ndarray, weight: np.ndarray) -> tuple[float, float]:
    """(Spearman, Kendall tau-b) of one weighted resample by scipy (both sides with many
    distinct values); NaN when a side is constant."""
    count = weight.astype(np.int64)
    a, b = np.repeat(x, count), np.repeat(y, count)
    if np.all(a == a[0]) or np.all(b == b[0]):
        return math.nan, math.nan
    return float(stats.spearmanr(a, b).statistic), float(stats.kendalltau(a, b, variant="b").statistic)


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
