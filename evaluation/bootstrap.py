"""Seeded bootstrap over units or clusters, drawn and evaluated a block at a time, and the
one interval rule every bootstrap of a report follows (statistics.md, "Clustered data").

Two ways to draw the same thing. `resample_blocks` draws n unit indices per resample.
`bootstrap_weights` draws how often each distinct unit *profile* (units that are equal for
the statistic, e.g. the same value counts) is picked: those counts are multinomial(n,
profile shares), which is exactly the distribution of the index draw, at a cost of
resamples x profiles instead of resamples x n. Statistics written over per-profile weights
are then vectorized over a whole block of resamples. `cluster_counts` draws clusters (items)
instead, when units nest in them.

The interval (`bootstrap_interval`): bias-corrected percentile interval with a small-sample
expansion, over the resamples whose statistic is defined. With G(t) = (#{t* < t} + #{t* = t}
/ 2 + 1/2) / (B + 1) the smoothed share of the B kept resamples below t (t* = t: within
1e-12 (|t| + max |t*|), relative to t and absolute on the resamples' scale, so it holds at
t = 0), z0 = Phi^-1(G(t_hat))
(the bias correction, Efron 1981) and ze = sqrt(C / (C - 1)) * t_{C-1}(0.975) in place of
z = 1.96 for C clusters (Hesterberg 2015's expanded percentile interval), the bounds are the
100 Phi(2 z0 -+ ze) percentiles of the kept resamples (numpy's linear interpolation). The
matching two-sided p-value of "the statistic is 0" is 2 T_{C-1}.sf(|2 z0 - Phi^-1(G(0))| *
sqrt((C - 1) / C)): below 0.05 exactly when 0 is outside the interval, up to the resolution
of B resamples. No interval from fewer than MIN_CLUSTERS clusters, nor when more than
MAX_DROPPED of the resamples had no defined statistic (`dropped`, with the reason).
"""
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

BLOCK_ENTRIES = 1 << 20  # draws per block: ~8 MB, whatever n is
# Drawing a multinomial costs about a binomial draw per profile, ~12x an index draw plus
# its count: below n / 12 profiles the multinomial is cheaper.
MULTINOMIAL_BELOW = 1 / 12
RESAMPLES = 2000  # a report's bootstraps, except alpha's interval (1,000: statistics.md)
MIN_CLUSTERS = 5  # no interval from fewer clusters (statistics.md, "Clustered data")
TIE = 1e-12  # a resample within TIE * (|t| + max |t*|) of t (the estimate, or 0) ties with it
# float(scipy.stats.norm.ppf(0.975)) written out, so that importing this module imports no
# scipy (docs/architecture.md, "Heavy imports"; tests/test_heavy_imports.py checks the value)
Z975 = 1.959963984540054
MAX_DROPPED = 0.10  # share of resamples without a defined statistic above which there is no interval


def resample_blocks(n: int, resamples: int = 2000, seed: int = 0, block: int | None = None) -> Iterator[np.ndarray]:
    """Yield (k, n) index arrays, `resamples` rows in all.

    The rows are the same for a given (n, seed) whatever the block size is (one generator
    draws them in order), so every statistic of a report resamples the same items.
    """
    rng = np.random.default_rng(seed)
    block = block or max(1, BLOCK_ENTRIES // max(n, 1))
    done = 0
    while done < resamples:
        k = min(block, resamples - done)
        yield rng.integers(0, n, (k, n))
        done += k


def bootstrap_weights(multiplicity: Sequence[int] | np.ndarray, resamples: int, seed: int = 0,
                      block_entries: int = BLOCK_ENTRIES) -> Iterator[np.ndarray]:
    """Yield (k, P) float blocks, `resamples` rows in all: how often each of P profiles is
    drawn when n = sum(multiplicity) units are resampled with replacement (profile p holds
    multiplicity[p] units). Every row sums to n.

    Few profiles: multinomial(n, multiplicity / n) per row. Many: n unit indices per row
    (uniform draws from default_rng(seed)), counted per profile. Both give the unit
    bootstrap's distribution.

    >>> rows = np.vstack(list(bootstrap_weights([3, 1], resamples=4)))
    >>> rows.shape, rows.sum(axis=1).tolist()
    ((4, 2), [4.0, 4.0, 4.0, 4.0])
    """
    mult = np.asarray(multiplicity, dtype=np.int64)
    n, p = int(mult.sum()), len(mult)
    if n == 0:
        return
    if p <= MULTINOMIAL_BELOW * n:
        rng = np.random.default_rng(seed)
        shares = mult / n
        block = max(1, block_entries // p)
        done = 0
        while done < resamples:
            k = min(block, resamples - done)
            yield rng.multinomial(n, shares, size=k).astype(float)
            done += k
        return
    profile_of = np.repeat(np.arange(p), mult) if p < n else None
    rng = np.random.default_rng(seed)
    block = max(1, block_entries // n)
    dtype = np.uint32 if n < 2**32 else np.int64  # 32-bit draws are about twice as fast
    done = 0
    while done < resamples:
        k = min(block, resamples - done)
        idx = rng.integers(0, n, (k, n), dtype=dtype)
        rows = np.empty((k, p))
        for j in range(k):  # one bincount per row: no (k, n) offset array
            rows[j] = np.bincount(idx[j] if profile_of is None else profile_of[idx[j]], minlength=p)
        yield rows
        done += k


def percentile_ci(samples: Sequence[float | None] | np.ndarray, alpha: float = 0.05) -> list[float] | None:
    """[lo, hi] percentile interval of the finite samples; None if there are none.

    >>> percentile_ci([1.0, 2.0, 3.0, None, float("nan")], alpha=0.5)
    [1.5, 2.5]
    """
    arr = np.asarray([np.nan if s is None else s for s in samples], dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return None
    lo, hi = np.percentile(arr, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return [float(lo), float(hi)]


def bootstrap_ci(stat: Callable[[np.ndarray], Any], n: int, resamples: int = 2000, seed: int = 0,
                 alpha: float = 0.05, rows: bool = False) -> list[float] | None:
    """Percentile CI of stat(idx) over `resamples` resamples of range(n); None if n = 0.

    rows=False: stat takes one index vector and returns a number (or None).
    rows=True: stat takes a (k, n) block of index rows and returns k numbers at once.
    Resamples where stat gives None or NaN are left out (e.g. a constant resample).
    """
    if n <= 0:
        return None
    samples: list[Any] = []
    for block in resample_blocks(n, resamples, seed):
        if rows:
            samples.extend(np.asarray(stat(block), dtype=float).tolist())
        else:
            samples.extend(stat(idx) for idx in block)
    return percentile_ci(samples, alpha)


def cluster_counts(n_clusters: int, resamples: int, seed: int = 0, block: int | None = None) -> Iterator[np.ndarray]:
    """Yield (k, C) float blocks, `resamples` rows in all: how often each of C clusters is
    drawn when C clusters are drawn with replacement. The draws are `resample_blocks(C,
    resamples, seed)` (numpy default_rng(seed).integers(0, C, (k, C)), the same rows
    whatever the block size), counted per cluster: clusters are numbered 0..C-1 in the
    caller's order (a report: item order).

    >>> np.vstack(list(cluster_counts(3, 2))).sum(axis=1).tolist()
    [3.0, 3.0]
    """
    for rows in resample_blocks(n_clusters, resamples, seed, block):
        offsets = (np.arange(len(rows)) * n_clusters)[:, None]
        yield np.bincount((rows + offsets).ravel(), minlength=len(rows) * n_clusters).reshape(
            len(rows), n_clusters).astype(float)


def bootstrap_method(unit: str, resamples: int, seed: int = 0) -> str:
    """The `ci_method` text of a report bootstrap over `unit` (e.g. "items").

    >>> bootstrap_method("items", 1000)
    'bootstrap over items (1000 resamples, seed 0; bias-corrected, expanded percentile)'
    """
    return f"bootstrap over {unit} ({resamples} resamples, seed {seed}; bias-corrected, expanded percentile)"


def expanded_z(n_clusters: int, level: float = 0.95) -> float:
    """sqrt(C / (C - 1)) * t_{C-1}((1 + level) / 2): the z of a percentile interval widened for
    C clusters (Hesterberg 2015); it tends to 1.96 as C grows.

    >>> round(expanded_z(20), 4), round(expanded_z(10**9), 4)
    (2.1474, 1.96)
    """
    from scipy.special import stdtrit  # Student's t quantile (heavy imports: docs/architecture.md)

    if n_clusters < 2:
        return math.inf
    return math.sqrt(n_clusters / (n_clusters - 1)) * float(stdtrit(n_clusters - 1, (1 + level) / 2))


def _smoothed_below(kept: np.ndarray, t: float) -> float:
    """G(t) = (#{t* < t} + #{t* = t} / 2 + 1/2) / (B + 1): never 0 or 1. A resample within
    TIE * (|t| + max |t*|) of t counts as equal, so rounding in the last digits (the same
    resample summed in another order; a statistic that is 0 computed as 8e-17) moves
    nothing. The absolute part, on the resamples' own scale, is what holds at t = 0: a
    purely relative tolerance vanishes there."""
    scale = float(np.max(np.abs(kept))) if len(kept) else 0.0
    tie = np.abs(kept - t) <= TIE * (abs(t) + scale)
    below = np.count_nonzero((kept < t) & ~tie) + 0.5 * np.count_nonzero(tie)
    return (below + 0.5) / (len(kept) + 1)


@dataclass(frozen=True)
class Interval:
    """A bootstrap interval and what it rests on: ci95 ([lo, hi] or None with `reason`),
    p_value (of "the statistic is 0"; None unless asked), n_clusters, resamples drawn,
    dropped (resamples without a defined statistic)."""

    ci95: list[float] | None
    n_clusters: int
    resamples: int
    dropped: int
    reason: str | None = None
    p_value: float | None = None


def interval_refusal(n_clusters: int, dropped: int = 0, resamples: int = 0) -> str | None:
    """Why no interval may be given (statistics.md, "Clustered data"), or None.

    >>> interval_refusal(4), interval_refusal(30, dropped=201, resamples=2000)
    ('fewer than 5 clusters (4)', 'over 10% of the resamples dropped (201 of 2000): the statistic is undefined there')
    """
    if n_clusters < MIN_CLUSTERS:
        return f"fewer than {MIN_CLUSTERS} clusters ({n_clusters})"
    if resamples and dropped > MAX_DROPPED * resamples:
        return (f"over {MAX_DROPPED:.0%} of the resamples dropped ({dropped} of {resamples}): the statistic is "
                "undefined there")
    return None


def bootstrap_interval(samples: Sequence[float | None] | np.ndarray, estimate: float | None, n_clusters: int,
                       level: float = 0.95, p_value: bool = False) -> Interval:
    """The report's bootstrap interval (module docstring) of `estimate` from its resamples
    (None or NaN = undefined there, dropped and counted).

    >>> iv = bootstrap_interval(np.arange(1.0, 101.0), 50.5, n_clusters=100)
    >>> [round(v, 3) for v in iv.ci95], iv.dropped
    ([3.283, 97.717], 0)
    >>> bootstrap_interval([1.0, 2.0], 1.5, n_clusters=3).reason
    'fewer than 5 clusters (3)'
    """
    arr = np.asarray([np.nan if s is None else s for s in samples], dtype=float)
    finite = np.isfinite(arr)
    kept = arr[finite]
    dropped = int(len(arr) - len(kept))
    reason = interval_refusal(n_clusters, dropped, len(arr))
    if reason is None and (estimate is None or not math.isfinite(estimate)):
        reason = "the statistic is undefined"
    if reason is None and not len(kept):
        reason = "no resample has a defined statistic"
    if reason is not None:
        return Interval(None, n_clusters, len(arr), dropped, reason)
    assert estimate is not None
    from scipy.special import ndtr, ndtri, stdtr  # Phi, Phi^-1, Student's t cdf: fast

    z0 = float(ndtri(_smoothed_below(kept, estimate)))
    ze = expanded_z(n_clusters, level)
    bounds = np.percentile(kept, [100 * float(ndtr(2 * z0 - ze)), 100 * float(ndtr(2 * z0 + ze))])
    p = None
    if p_value:
        distance = abs(2 * z0 - float(ndtri(_smoothed_below(kept, 0.0))))
        p = float(min(1.0, 2 * stdtr(n_clusters - 1, -distance * math.sqrt((n_clusters - 1) / n_clusters))))
    return Interval([float(bounds[0]), float(bounds[1])], n_clusters, len(arr), dropped, None, p)


def ratio_samples(numerators: np.ndarray, denominators: np.ndarray, resamples: int,
                  seed: int = 0) -> np.ndarray:
    """(B, A) ratios sum_c w_c num[a, c] / sum_c w_c den[a, c] of B cluster resamples
    (`cluster_counts` over the C columns), for A statistics at once; NaN where a resample's
    denominator is 0. Means over clustered units (den = units per cluster), shares
    (num = hits per cluster), accuracies.

    >>> ratio_samples(np.array([[2.0, 0.0, 1.0]]), np.array([[2.0, 1.0, 1.0]]), 3).shape
    (3, 1)
    """
    num, den = np.atleast_2d(numerators).astype(float), np.atleast_2d(denominators).astype(float)
    out = []
    for w in cluster_counts(num.shape[1], resamples, seed):
        top, bottom = w @ num.T, w @ den.T
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append(np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan))
    return np.concatenate(out) if out else np.zeros((0, num.shape[0]))


def clustered_mean(values: Sequence[float] | np.ndarray, clusters: Sequence[Any] | np.ndarray,
                   resamples: int = RESAMPLES, seed: int = 0) -> tuple[float | None, Interval]:
    """(mean of `values`, its bootstrap interval over their clusters): clusters numbered in
    sorted label order and drawn by `cluster_counts`; each resample's mean is its drawn
    clusters' total over their units. No draw at all below MIN_CLUSTERS clusters.

    >>> mean, iv = clustered_mean([1.0, 2.0, 3.0, 4.0], ["a", "a", "b", "c"])
    >>> mean, iv.ci95, iv.reason
    (2.5, None, 'fewer than 5 clusters (3)')
    """
    x = np.asarray(values, dtype=float)
    if not len(x):
        return None, Interval(None, 0, 0, 0, "no values")
    _, codes = np.unique(np.asarray(clusters), return_inverse=True)
    codes = codes.ravel()
    n_clusters = int(codes.max()) + 1
    mean = float(np.mean(x))
    if interval_refusal(n_clusters) is not None:
        return mean, Interval(None, n_clusters, 0, 0, interval_refusal(n_clusters))
    sums = np.bincount(codes, weights=x, minlength=n_clusters)
    sizes = np.bincount(codes, minlength=n_clusters).astype(float)
    samples = ratio_samples(sums[None, :], sizes[None, :], resamples, seed)[:, 0]
    return mean, bootstrap_interval(samples, mean, n_clusters)
