"""Pearson r, Spearman rho and Kendall tau-b with p-values and 95% intervals
(statistics.md, "Correlations" and "Clustered data").

Independent units (`clusters` None, or one unit per cluster):
- p-values: with n <= 9 the exact permutation p-value (all n! orderings of y against x,
  two-sided: the share with |statistic| >= the observed one); above, scipy's.
- Pearson's interval: Fisher z, tanh(atanh(r) +- 1.96 / sqrt(n - 3)), from n = 10.
- Spearman's and Kendall's intervals: bootstrap over units, 2000 resamples, seed 0, when
  n >= 20 (`rank_bootstrap`: compiled, a count per distinct (x, y) pair, never sorting a
  resample), then `bootstrap.bootstrap_interval`.
Units nested in clusters (some cluster holds two or more, e.g. (item, pair) units in
items): all three intervals and p-values come from one bootstrap over the clusters (2000
resamples, seed 0; `bootstrap.cluster_counts`), from n >= 20 units and >= 5 clusters;
the p-value is the interval's own test of "r = 0" (`bootstrap.bootstrap_interval`).
Fisher z and the permutation/scipy p-values assume independent units, which clustered
units are not.
n < 3, a constant side or an undefined value gives None, never NaN. Every coefficient
says how its interval and p-value were made (`ci_method`, `p_method`, `n_clusters`, and
`ci_reason` / `p_reason` where there is none).
"""
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from evaluation.bootstrap import (
    BLOCK_ENTRIES,
    MIN_CLUSTERS,
    Z975,
    bootstrap_interval,
    bootstrap_method,
    cluster_counts,
)

METHODS = ("pearson", "spearman", "kendall")
RESAMPLES = 2000
EXACT_MAX_N = 9
BOOTSTRAP_MIN_N = 20
DENSE_ENTRIES = 1 << 22  # clusters x cells up to this: a dense matrix product per block
FISHER_MIN_N = 10  # no Fisher-z interval below this n (statistics.md, "Clustered data")
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
    """The (x, y) pairs where both are finite numbers (None, NaN and +-inf dropped).

    >>> [a.tolist() for a in clean_pairs([1, None, 3, 4, 5], [2, 5, float("nan"), 8, float("inf")])]
    [[1.0, 4.0], [2.0, 8.0]]
    """
    return _clean(x, y)[:2]


def _clean(x: Numbers, y: Numbers, clusters: Numbers | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, cluster code) of the finite pairs; clusters coded 0..C-1 in sorted label order,
    each unit its own cluster when `clusters` is None."""
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} vs {len(y)})")
    a, b = _numbers(x), _numbers(y)
    keep = np.isfinite(a) & np.isfinite(b)
    if clusters is None:
        return a[keep], b[keep], np.arange(int(keep.sum()))
    if len(clusters) != len(x):
        raise ValueError(f"clusters and x differ in length ({len(clusters)} vs {len(x)})")
    _, codes = np.unique(np.asarray(clusters)[keep], return_inverse=True)
    return a[keep], b[keep], codes.ravel()


def _coefficient(r: float | None = None, n_clusters: int = 0, **extra: Any) -> dict[str, Any]:
    out = {"r": r, "p_value": None, "ci95": None, "ci_method": None, "n_clusters": n_clusters, "p_method": None}
    out.update(extra)
    return out


def _empty(n: int, n_clusters: int, reason: str) -> dict[str, Any]:
    return {"n": n, "n_clusters": n_clusters,
            **{m: _coefficient(None, n_clusters, ci_reason=reason, p_reason=reason) for m in METHODS}}


def _finite(v: Any) -> float | None:
    v = float(v)
    return v if math.isfinite(v) else None


def correlations(x: Numbers, y: Numbers, resamples: int = RESAMPLES, seed: int = 0, clusters: Numbers | None = None,
                 unit: str = "units", cluster: str = "clusters") -> dict[str, Any]:
    """{"n", "n_clusters", "pearson"|"spearman"|"kendall": {"r", "p_value", "ci95", "ci_method",
    "n_clusters", "p_method", ...}} of paired numbers (module docstring). `clusters`: the
    cluster of each pair (None: independent units); `unit` / `cluster` name them in the
    methods' text.

    n = 3 perfectly ranked: every coefficient is 1 and the exact p-value is 2/3! = 1/3.

    >>> r = correlations([1, 2, 3], [10, 20, 30])
    >>> r["n"], r["kendall"]["r"], round(r["kendall"]["p_value"], 6), r["spearman"]["ci95"]
    (3, 1.0, 0.333333, None)
    """
    x, y, codes = _clean(x, y, clusters)
    n = len(x)
    n_clusters = int(codes.max()) + 1 if n else 0
    if n < 3:
        return _empty(n, n_clusters, "fewer than 3 pairs")
    if np.all(x == x[0]) or np.all(y == y[0]):
        return _empty(n, n_clusters, "a constant side")
    from scipy import stats  # heavy imports inside the function: docs/architecture.md

    out: dict[str, Any] = {"n": n, "n_clusters": n_clusters}
    results = {"pearson": stats.pearsonr(x, y), "spearman": stats.spearmanr(x, y),
               "kendall": stats.kendalltau(x, y, variant="b")}
    r = {m: _finite(res.statistic) for m, res in results.items()}
    if n_clusters < n:
        out.update(_clustered(x, y, codes, n_clusters, r, resamples, seed, cluster))
        return out
    exact = exact_permutation_p(x, y) if n <= EXACT_MAX_N else None
    p_method = "exact permutation (all n! orderings)" if exact is not None else \
        "scipy.stats (pearsonr, spearmanr, kendalltau b)"
    for method, res in results.items():
        p = exact[method] if exact is not None else _finite(res.pvalue)
        out[method] = _coefficient(r[method], n, p_value=p if r[method] is not None else None,
                                   p_method=p_method if r[method] is not None else None)
    pearson = out["pearson"]
    pearson["ci95"] = fisher_z_ci(r["pearson"], n)
    if pearson["ci95"] is not None:
        pearson["ci_method"] = f"Fisher z over {unit}"
    else:
        pearson["ci_reason"] = f"Fisher z needs n >= {FISHER_MIN_N}" if r["pearson"] is not None else "r undefined"
    if n < BOOTSTRAP_MIN_N:
        for method in ("spearman", "kendall"):
            out[method]["ci_reason"] = f"bootstrap intervals need n >= {BOOTSTRAP_MIN_N}"
        return out
    from evaluation.rank_bootstrap import rank_bootstrap  # numba kernels

    samples = dict(zip(("spearman", "kendall"), rank_bootstrap(x, y, resamples, seed)))
    for method, values in samples.items():
        _put_interval(out[method], values, r[method], n, bootstrap_method(unit, resamples, seed), p_value=False)
    return out


def _put_interval(entry: dict[str, Any], samples: np.ndarray, r: float | None, n_clusters: int, method: str,
                  p_value: bool) -> None:
    """A coefficient's bootstrap interval (and with `p_value` its p-value) into `entry`."""
    interval = bootstrap_interval(samples, r, n_clusters, p_value=p_value)
    entry.update(ci95=interval.ci95, ci_method=method, dropped_resamples=interval.dropped)
    if interval.ci95 is None:
        entry["ci_reason"] = interval.reason
    if p_value:
        entry.update(p_value=interval.p_value, p_method=f"{method}: the interval's test of r = 0")
        if interval.p_value is None:
            entry["p_reason"] = interval.reason


def _clustered(x: np.ndarray, y: np.ndarray, codes: np.ndarray, n_clusters: int, r: dict[str, float | None],
               resamples: int, seed: int, cluster: str) -> dict[str, Any]:
    """The three coefficients of clustered units, intervals and p-values by the cluster
    bootstrap (module docstring)."""
    out = {}
    if len(x) < BOOTSTRAP_MIN_N or n_clusters < MIN_CLUSTERS:
        reason = (f"clustered units: intervals and p-values need n >= {BOOTSTRAP_MIN_N} and >= {MIN_CLUSTERS} "
                  f"{cluster}")
        return {m: _coefficient(r[m], n_clusters, ci_reason=reason, p_reason=reason) for m in METHODS}
    samples = clustered_samples(x, y, codes, n_clusters, resamples, seed)
    for method in METHODS:
        out[method] = _coefficient(r[method], n_clusters)
        _put_interval(out[method], samples[method], r[method], n_clusters,
                      bootstrap_method(cluster, resamples, seed), p_value=True)
    return out


def clustered_samples(x: np.ndarray, y: np.ndarray, codes: np.ndarray, n_clusters: int, resamples: int = RESAMPLES,
                      seed: int = 0) -> dict[str, np.ndarray]:
    """{"pearson", "spearman", "kendall": the coefficient of each cluster resample} (NaN where
    a resample is constant on one side): `cluster_counts(n_clusters, resamples, seed)`, each
    unit counted as often as its cluster (codes 0..C-1) is drawn."""
    from scipy import sparse

    from evaluation.rank_bootstrap import Cells, rank_stats_of_counts  # numba kernels

    cells = Cells(x, y)
    n_cells = len(cells.mult)
    first = np.zeros(n_cells, dtype=np.int64)
    first[cells.of_unit] = np.arange(len(x))
    sx, sy = np.std(x), np.std(y)
    cx, cy = (x[first] - np.mean(x)) / sx, (y[first] - np.mean(y)) / sy  # standardized: no cancellation
    moments = np.column_stack([np.ones(n_cells), cx, cy, cx * cx, cy * cy, cx * cy])
    per_cluster: Any = sparse.csr_matrix((np.ones(len(x)), (codes, cells.of_unit)), shape=(n_clusters, n_cells))
    if n_clusters * n_cells <= DENSE_ENTRIES:
        per_cluster = per_cluster.toarray()
    block = max(1, BLOCK_ENTRIES // max(n_clusters, n_cells))
    pearson, rho, tau = [], [], []
    for drawn in cluster_counts(n_clusters, resamples, seed, block):
        weights = np.asarray(drawn @ per_cluster)  # (k, cells): integer counts held as floats
        m = weights @ moments
        n = m[:, 0]
        vx, vy = m[:, 3] - m[:, 1] ** 2 / n, m[:, 4] - m[:, 2] ** 2 / n
        ok = (vx > 1e-12 * n) & (vy > 1e-12 * n)
        with np.errstate(invalid="ignore", divide="ignore"):
            pearson.append(np.where(ok, (m[:, 5] - m[:, 1] * m[:, 2] / n) / np.sqrt(np.where(ok, vx * vy, 1.0)),
                                    np.nan))
        a, b = rank_stats_of_counts(cells, weights.astype(np.int32))
        rho.append(a)
        tau.append(b)
    return {"pearson": np.concatenate(pearson), "spearman": np.concatenate(rho), "kendall": np.concatenate(tau)}


def fisher_z_ci(r: float | None, n: int) -> list[float] | None:
    """95% interval of Pearson's r by Fisher's z; None below n = 10 or for no r.

    >>> [round(v, 4) for v in fisher_z_ci(0.5, 28)]  # tanh(atanh(.5) -+ 1.96 / 5)
    [0.156, 0.7358]
    >>> fisher_z_ci(0.5, 9) is None
    True
    """
    if r is None or n < FISHER_MIN_N:
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
    from scipy import stats

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
    result = correlations(means[:, 0], means[:, 1], resamples, seed, unit="systems")
    result["systems"] = names
    return result
