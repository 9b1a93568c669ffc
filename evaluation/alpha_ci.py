"""95% bootstrap interval of Krippendorff's alpha: 1,000 resamples of the pairable units
(seed 0), or of the clusters (items) they nest in when a cluster holds several units
(statistics.md, "Clustered data": a similarity survey's (item, pair) units resample
items), each recomputing observed and expected disagreement; resamples where alpha is
undefined (every drawn value the same) are dropped and counted. The interval is
`bootstrap.bootstrap_interval` (bias-corrected, expanded for few clusters; none from fewer
than 5 clusters or with over 10% dropped). This bootstraps units, as statistics.md
defines it; Hayes & Krippendorff (2007) resample pairs of values instead.

Vectorized over resamples: alpha of a resample depends only on how often each unit is
drawn, and every term is a sum over units, so a block of resamples is a (k, units) weight
matrix times per-unit columns. Units with equal value counts are one *profile*: drawing
profile counts (multinomial, `bootstrap.bootstrap_weights`) is the same bootstrap at a cost
of resamples x profiles. With clusters, a resample's profile weights are its cluster
counts (`bootstrap.cluster_counts`) times the clusters' profile counts. A plain loop over
resamples is in bench/alpha_ci_bench.py.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # scipy is imported where it is used (docs/architecture.md, "Heavy imports")
    from scipy import sparse

from evaluation.agreement import LEVELS, Column, krippendorff_alpha, unit_scale, within_unit_pairs
from evaluation.bootstrap import bootstrap_interval, bootstrap_weights, cluster_counts
from evaluation.tabulate import Counts, tabulate

RESAMPLES = 1000
DENSE_VALUES = 64  # at most this many distinct values: dense unit x value counts, profiles
ORDINAL_VALUES = 32  # ordinal needs value-pair sums per unit (values^2 columns)
RATIO_VALUES = 2000  # ratio needs a values x values distance matrix


@dataclass(frozen=True)
class AlphaCI:
    """ci95: [lo, hi] or None (then `reason`); resamples: drawn; undefined: dropped (alpha
    undefined there); n_clusters: what was resampled (pairable units, or their clusters);
    clustered: whether clusters (not units) were resampled."""

    ci95: list[float] | None
    resamples: int
    undefined: int
    n_clusters: int = 0
    clustered: bool = False
    reason: str | None = None


@dataclass
class _Profiles:
    """Per-profile columns: multiplicity, values per unit m, observed disagreement o,
    single value code (-1 for units with two or more distinct values), value counts."""

    mult: np.ndarray
    m: np.ndarray
    observed: np.ndarray
    single: np.ndarray
    counts: np.ndarray | sparse.csr_matrix
    s1: np.ndarray  # sum of the unit's values (numeric levels)
    s2: np.ndarray  # sum of their squares
    unit: np.ndarray  # one pairable unit (renumbered) of each profile
    of_unit: np.ndarray  # the profile of each pairable unit (renumbered)


def krippendorff_alpha_ci95(units: Column, coders: Column, values: Column, level: str = "nominal",
                            resamples: int = RESAMPLES, seed: int = 0, counts: Counts | None = None,
                            clusters: Column | None = None) -> AlphaCI:
    """The bootstrap interval of alpha (module docstring); None with a reason when there is
    none. `clusters`: the cluster of each row's unit (e.g. its item), constant within a
    unit; clusters are resampled when one holds two or more pairable units.

    >>> ci = krippendorff_alpha_ci95([1, 1, 2, 2, 3, 3], list("ababab"), list("xxyyxy"))
    >>> ci.resamples, ci.undefined > 0, ci.reason
    (1000, True, 'fewer than 5 clusters (3)')
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    c = counts if counts is not None else tabulate(units, coders, values, numeric=level != "nominal")
    keep_unit = c.m >= 2
    if not keep_unit.any():
        return AlphaCI(None, 0, 0, reason="no pairable unit")
    x = c.value_labels.astype(float) if level != "nominal" else np.arange(len(c.value_labels), dtype=float)
    if level == "ratio" and np.any(x < 0):
        raise ValueError("ratio level needs non-negative values")
    if level == "interval":
        x = unit_scale(x)
    n_values = len(c.value_labels)
    prof = _profiles(c, keep_unit, x, level)
    cluster = _pairable_clusters(c, keep_unit, units, clusters)
    n_clusters = int(cluster.max()) + 1 if len(cluster) else 0
    clustered = n_clusters < len(cluster)
    if not clustered:
        n_clusters = len(cluster)
    weights = _cluster_weights(prof, cluster, n_clusters, resamples, seed) if clustered else \
        bootstrap_weights(prof.mult, resamples, seed)
    if (level == "ordinal" and n_values > ORDINAL_VALUES) or (level == "ratio" and n_values > RATIO_VALUES):
        samples = _loop_samples(c, keep_unit, prof, level, weights)
    else:
        blocks = []
        for w in weights:
            alpha, bad = _alpha_rows(w, prof, x, level)
            blocks.append(np.where(bad, np.nan, alpha))
        samples = np.concatenate(blocks)
    estimate = krippendorff_alpha(units, coders, values, level, counts=c).value
    interval = bootstrap_interval(samples, estimate, n_clusters)
    return AlphaCI(interval.ci95, resamples, interval.dropped, n_clusters, clustered, interval.reason)


def _pairable_clusters(c: Counts, keep_unit: np.ndarray, units: Column, clusters: Column | None) -> np.ndarray:
    """The cluster of each pairable unit (renumbered 0..C-1 in label order); each unit its
    own cluster when `clusters` is None."""
    n_pairable = int(keep_unit.sum())
    if clusters is None:
        return np.arange(n_pairable)
    unit_arr, cluster_arr = np.asarray(units), np.asarray(clusters)
    if len(unit_arr) != len(cluster_arr):
        raise ValueError("clusters must give one cluster per row")
    of_label = np.full(len(c.unit_labels), -1, dtype=np.int64)
    if unit_arr.dtype.kind in "iuf" and c.unit_labels.dtype.kind in "iuf":
        at = np.searchsorted(c.unit_labels, unit_arr)
        found = (at < len(c.unit_labels)) & (c.unit_labels[np.minimum(at, len(c.unit_labels) - 1)] == unit_arr)
        _, codes = np.unique(cluster_arr, return_inverse=True)
        of_label[at[found]] = codes.ravel()[found]
    else:
        lookup = {u: k for k, u in enumerate(c.unit_labels.tolist())}
        names: dict[object, int] = {}
        for u, g in zip(unit_arr.tolist(), cluster_arr.tolist()):
            if u in lookup:
                of_label[lookup[u]] = names.setdefault(g, len(names))
    kept = of_label[keep_unit]
    _, renumbered = np.unique(kept, return_inverse=True)
    return renumbered.ravel()


def _cluster_weights(prof: _Profiles, cluster: np.ndarray, n_clusters: int, resamples: int,
                     seed: int) -> Iterator[np.ndarray]:
    """(k, P) profile weights of cluster resamples: cluster counts times the clusters'
    profile counts."""
    from scipy import sparse

    per_cluster = sparse.csr_matrix((np.ones(len(cluster)), (cluster, prof.of_unit)),
                                    shape=(n_clusters, len(prof.mult)))
    for drawn in cluster_counts(n_clusters, resamples, seed):
        yield np.asarray((per_cluster.T @ drawn.T).T)


def _pairable_triples(c: Counts, keep_unit: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(unit, value, count) of the pairable units, units renumbered 0..U-1."""
    new_id = np.cumsum(keep_unit) - 1
    keep = keep_unit[c.unit]
    return new_id[c.unit[keep]], c.value[keep], c.count[keep].astype(float), int(keep_unit.sum())


def _profiles(c: Counts, keep_unit: np.ndarray, x: np.ndarray, level: str) -> _Profiles:
    unit, value, count, n_units = _pairable_triples(c, keep_unit)
    n_values = len(c.value_labels)
    m = np.bincount(unit, weights=count, minlength=n_units)
    observed = _observed_per_unit(unit, value, count, m, x, level, n_units)
    first = np.r_[True, unit[1:] != unit[:-1]]
    single = np.where(np.bincount(unit, minlength=n_units) == 1, value[first], -1)
    s1 = np.bincount(unit, weights=count * x[value], minlength=n_units)
    s2 = np.bincount(unit, weights=count * x[value] ** 2, minlength=n_units)
    if n_values <= DENSE_VALUES:
        dense = np.zeros((n_units, n_values))
        dense[unit, value] = count
        profiles, one, mult, inverse = _unique_rows(dense)
        return _Profiles(mult, m[one], observed[one], single[one], profiles, s1[one], s2[one], one, inverse)
    from scipy import sparse

    counts = sparse.csr_matrix((count, (unit, value)), shape=(n_units, n_values))
    every = np.arange(n_units)
    return _Profiles(np.ones(n_units, dtype=np.int64), m, observed, single, counts, s1, s2, every, every)


def _unique_rows(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """np.unique(dense, axis=0, return_index=True, return_counts=True, return_inverse=True)
    of non-negative integer counts: each row read as one integer in base (largest count + 1)
    sorts like the rows and is one sort of integers instead of a sort of row records."""
    base = int(dense.max()) + 1 if dense.size else 1
    if dense.shape[1] * np.log2(max(base, 2)) >= 62:
        rows, one, inverse, mult = np.unique(dense, axis=0, return_index=True, return_inverse=True,
                                             return_counts=True)
        return rows, one, mult, inverse.ravel()
    key = np.zeros(len(dense), dtype=np.int64)
    for column in dense.T.astype(np.int64):
        key = key * base + column
    _, one, inverse, mult = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    return dense[one], one, mult, inverse.ravel()


def _observed_per_unit(unit: np.ndarray, value: np.ndarray, count: np.ndarray, m: np.ndarray, x: np.ndarray,
                       level: str, n_units: int) -> np.ndarray:
    """Each unit's observed disagreement sum_ck n_uc n_uk delta_ck / (m_u - 1); ordinal
    (whose distances depend on the resample) gets zeros here."""
    if level == "nominal":
        sq = np.bincount(unit, weights=count**2, minlength=n_units)
        return (m**2 - sq) / (m - 1.0)
    if level == "interval":
        mean = np.bincount(unit, weights=count * x[value], minlength=n_units) / m
        dev = np.bincount(unit, weights=count * (x[value] - mean[unit]) ** 2, minlength=n_units)
        return 2.0 * m / (m - 1.0) * dev
    if level == "ratio":
        left, right = within_unit_pairs(unit)
        a, b = x[value[left]], x[value[right]]
        s = a + b
        d2 = np.where(s > 0, ((a - b) / np.where(s > 0, s, 1.0)) ** 2, 0.0)
        terms = count[left] * count[right] * d2
        return np.bincount(unit[left], weights=terms, minlength=n_units) / (m - 1.0)
    return np.zeros(n_units)


def _alpha_rows(w: np.ndarray, prof: _Profiles, x: np.ndarray, level: str) -> tuple[np.ndarray, np.ndarray]:
    """(alpha per resample row, undefined mask) for a (k, P) block of profile weights."""
    dense = isinstance(prof.counts, np.ndarray)
    columns = [prof.m, prof.observed, prof.s1, prof.s2, (prof.single < 0).astype(float)]
    sums = w @ np.column_stack(columns + ([np.asarray(prof.counts)] if dense else []))
    n, observed, s1, s2, mixed = sums[:, :5].T
    n_c = sums[:, 5:] if dense or level == "interval" else _times(w, prof.counts)
    undefined = np.zeros(len(w), dtype=bool)
    for row in np.flatnonzero(mixed == 0):  # only single-valued units drawn: all one value?
        codes = prof.single[w[row] > 0]
        undefined[row] = codes.min() == codes.max()
    if level == "ordinal":
        observed, expected = _ordinal_terms(w, prof, n, n_c)
    elif level == "interval":
        expected = 2.0 * n * (s2 - s1 * s1 / n)
    elif level == "nominal":
        expected = n * n - np.sum(n_c * n_c, axis=1)
    else:
        a, b = x[:, None], x[None, :]
        total = a + b
        delta = np.where(total > 0, ((a - b) / np.where(total > 0, total, 1.0)) ** 2, 0.0)
        expected = np.einsum("ki,ij,kj->k", n_c, delta, n_c)
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1.0) * observed / np.where(undefined, 1.0, expected)
    return alpha, undefined


def _times(w: np.ndarray, counts: np.ndarray | sparse.csr_matrix) -> np.ndarray:
    """w @ counts for dense or sparse per-profile value counts."""
    if isinstance(counts, np.ndarray):
        return w @ counts
    return np.asarray((counts.T @ w.T).T)


def _ordinal_terms(w: np.ndarray, prof: _Profiles, n: np.ndarray, n_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ordinal observed and expected sums: the distances are midranks of the resample's
    pooled values, so per unit keep sum_c n_uc and sum_ck n_uc n_uk (over m_u - 1)."""
    counts = np.asarray(prof.counts)
    n_values = counts.shape[1]
    scale = 1.0 / (prof.m - 1.0)
    xr = np.cumsum(n_c, axis=1) - n_c / 2.0  # midranks per resample
    a = w @ (counts * (prof.m * scale)[:, None])
    pair = (counts[:, :, None] * counts[:, None, :]).reshape(len(counts), -1) * scale[:, None]
    b = (w @ pair).reshape(-1, n_values, n_values)
    observed = 2.0 * np.sum(xr * xr * a, axis=1) - 2.0 * np.einsum("kc,kcd,kd->k", xr, b, xr)
    mean = np.sum(n_c * xr, axis=1) / n
    expected = 2.0 * n * np.sum(n_c * (xr - mean[:, None]) ** 2, axis=1)
    return observed, expected


def _loop_samples(c: Counts, keep_unit: np.ndarray, prof: _Profiles, level: str,
                  weights: Iterator[np.ndarray]) -> np.ndarray:
    """One krippendorff_alpha per resample (ordinal/ratio with very many distinct values);
    NaN where it is undefined."""
    unit, value, count, n_units = _pairable_triples(c, keep_unit)
    numbers = c.value_labels.astype(float)
    starts = np.searchsorted(unit, np.arange(n_units + 1))
    samples = []
    for w in weights:
        for row in np.rint(w).astype(np.int64):
            drawn = np.repeat(prof.unit, row)
            copies = np.concatenate([np.arange(starts[u], starts[u + 1]) for u in drawn])
            copy_id = np.repeat(np.arange(len(drawn)), np.diff(starts)[drawn])
            reps = count[copies].astype(np.int64)
            u = np.repeat(copy_id, reps)
            v = np.repeat(numbers[value[copies]], reps)
            coder = np.arange(len(u))  # one value per coder per unit copy
            result = krippendorff_alpha(u, coder, v, level)
            samples.append(np.nan if result.value is None else result.value)
    return np.array(samples, dtype=float)
