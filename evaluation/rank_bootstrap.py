"""Spearman's rho and Kendall's tau-b of every bootstrap resample of n (x, y) units, in
compiled code (numba), so a report's 2,000-resample intervals over 300,000 items take
about a second instead of minutes.

The draw (statistics.md, "Correlations": percentile bootstrap over units, seed 0): units
are sorted by their (x, y) value ("profile"); resample r draws n unit indices uniformly
with replacement from its own splitmix64 stream, started at mix(seed * 2^32 + r), each
32-bit half of an output giving one index by Lemire's multiply-shift with rejection (exact,
no modulo bias). A resample is then the count of each profile. Every resample has its own
stream, so the result does not depend on how resamples are split over threads.

Per resample, with profiles in x order and y's distinct values as levels:
- Spearman: rho = sum_j w_j (rx_j - m)(ry_j - m) / sqrt(Vx Vy), midranks rx, ry,
  m = (n + 1) / 2, V = (n^3 - n - sum_t (t^3 - t)) / 12 over tied groups t;
- Kendall tau-b: S = sum over x groups g of sum_{j in g} w_j (L_j - H_j), where L_j / H_j
  are the units of earlier x groups with a lower / higher y level (a Fenwick tree over the
  levels), tau = S / sqrt((n0 - n1)(n0 - n2)), n0 = n(n - 1)/2, n1, n2 the tied pairs.
Counts and S are exact integers. A resample constant on one side gives NaN.
"""
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numba import njit

CHUNK = 64  # resamples per task when several threads share the work
FEW_LEVELS = 8  # up to this many levels Kendall's running sums are a plain array, else a Fenwick tree


@njit(inline="always")
def _mix(z: np.uint64) -> np.uint64:
    """splitmix64's output function."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(nogil=True, cache=True)
def _draw(seed: int, r: int, unit_profile: np.ndarray, counts: np.ndarray) -> None:
    """counts[p] = how often profile p is drawn in resample r: n unit indices, two from
    each 64-bit output (the rare rejected half is skipped), counted by their profile."""
    counts[:] = 0
    n = len(unit_profile)
    bound = np.uint64(n)
    low = np.uint64(0xFFFFFFFF)
    reject = (np.uint64(1 << 32) - bound) % bound
    state = _mix(np.uint64(seed) * np.uint64(1 << 32) + np.uint64(r))
    drawn = 0
    while drawn < n:
        state += np.uint64(0x9E3779B97F4A7C15)
        word = _mix(state)
        first = (word & low) * bound
        second = (word >> np.uint64(32)) * bound
        if (first & low) >= reject and (second & low) >= reject and drawn + 1 < n:
            counts[unit_profile[first >> np.uint64(32)]] += 1
            counts[unit_profile[second >> np.uint64(32)]] += 1
            drawn += 2
            continue
        for product in (first, second):  # a rejected half, or the last unit
            if (product & low) >= reject and drawn < n:
                counts[unit_profile[product >> np.uint64(32)]] += 1
                drawn += 1


@njit(nogil=True, cache=True)
def _draw_rows(seed: int, r0: int, r1: int, unit_profile: np.ndarray, out: np.ndarray) -> None:
    for r in range(r0, r1):
        _draw(seed, r, unit_profile, out[r - r0])


@njit(inline="always")
def _prefix(tree: np.ndarray, k: int) -> int:
    """Sum of the first k levels in a Fenwick tree (1-based)."""
    total = 0
    while k > 0:
        total += tree[k]
        k -= k & -k
    return total


@njit(nogil=True, cache=True)
def _rank_rows(seed: int, r0: int, r1: int, unit_profile: np.ndarray, group: np.ndarray,
               level: np.ndarray, n_groups: int, n_levels: int, rho: np.ndarray, tau: np.ndarray) -> None:
    """rho[r], tau[r] for the resamples r0 <= r < r1 (profiles sorted by x group, then
    level). Kendall's S is summed over the profiles in that order, every earlier profile
    counting (d[b]: earlier units below level b minus above it), then the pairs inside one
    x group, which that order counts as concordant (their levels rise), are taken back out:
    (W_g^2 - sum of w^2) / 2 per group. No branch depends on the (random) counts."""
    n_profiles = len(level)
    n = len(unit_profile)
    counts = np.zeros(n_profiles, np.int32)
    tx = np.zeros(n_groups, np.int64)
    ty = np.zeros(n_levels, np.int64)
    rx = np.zeros(n_groups)
    ry = np.zeros(n_levels)
    few = n_levels <= FEW_LEVELS
    d = np.zeros(n_levels + 1, np.int64)
    sign = np.zeros((n_levels, n_levels) if few else (0, 0), np.int64)  # a unit at b moves d[c] by sign[b, c]
    for b in range(len(sign)):
        for c in range(n_levels):
            sign[b, c] = (c > b) - (c < b)
    nf = float(n)
    mean = (nf + 1.0) / 2.0
    pairs = nf * (nf - 1.0) / 2.0
    cube = nf * nf * nf - nf
    for r in range(r0, r1):
        _draw(seed, r, unit_profile, counts)
        tx[:] = 0
        ty[:] = 0
        squares = 0
        for j in range(n_profiles):
            tx[group[j]] += counts[j]
            ty[level[j]] += counts[j]
            squares += np.int64(counts[j]) * counts[j]
        ties_x, tied_x = _midranks(tx, rx, mean)
        ties_y, tied_y = _midranks(ty, ry, mean)
        d[:] = 0
        s = earlier = np.int64(0)
        cov = 0.0
        for j in range(n_profiles):
            w, b = np.int64(counts[j]), level[j]
            cov += w * rx[group[j]] * ry[b]
            if few:
                s += w * d[b]
                for c in range(n_levels):
                    d[c] += w * sign[b, c]
            else:  # d is a Fenwick tree of the earlier units per level
                s += w * (_prefix(d, b) + _prefix(d, b + 1) - earlier)  # lower - (earlier - up to b)
                k = b + 1
                while k <= n_levels:
                    d[k] += w
                    k += k & -k
                earlier += w
        group_squares = np.int64(0)
        for g in range(n_groups):
            group_squares += tx[g] * tx[g]
        s -= (group_squares - squares) // 2
        vx, vy = (cube - ties_x) / 12.0, (cube - ties_y) / 12.0
        rho[r - r0] = cov / np.sqrt(vx * vy) if vx > 0 and vy > 0 else np.nan
        den = (pairs - tied_x) * (pairs - tied_y)
        tau[r - r0] = s / np.sqrt(den) if den > 0 else np.nan


@njit(inline="always")
def _midranks(totals: np.ndarray, out: np.ndarray, mean: float) -> tuple[float, float]:
    """out[g] = midrank of group g minus the mean rank; (sum t^3 - t, tied pairs)."""
    ties = tied = below = 0.0
    for g in range(len(totals)):
        t = float(totals[g])
        out[g] = below + (t + 1.0) / 2.0 - mean
        below += t
        ties += t * t * t - t
        tied += t * (t - 1.0) / 2.0
    return ties, tied


def _parallel(task: Callable[[int, int], None], resamples: int) -> None:
    """task(r0, r1) over chunks of the resamples, on the machine's cores (the kernels
    release the GIL)."""
    bounds = [(r0, min(resamples, r0 + CHUNK)) for r0 in range(0, resamples, CHUNK)]
    workers = min(len(bounds), os.cpu_count() or 1)
    if workers <= 1:
        for r0, r1 in bounds:
            task(r0, r1)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(task, r0, r1) for r0, r1 in bounds]:
            future.result()


def _unit_profiles(mult: np.ndarray) -> np.ndarray:
    """The profile of each unit (units sorted by profile), in the narrowest integer type:
    the draws read it at random, so a smaller table stays in a closer cache."""
    dtype = np.uint16 if len(mult) <= 1 << 16 else np.int32
    return np.repeat(np.arange(len(mult), dtype=dtype), mult)


def draw_counts(multiplicity: np.ndarray, resamples: int, seed: int = 0) -> np.ndarray:
    """(resamples, P) counts of each profile in each resample: the draws `rank_bootstrap`
    uses for profiles of these multiplicities (a reference for tests).

    >>> rows = draw_counts(np.array([3, 1]), 4)
    >>> rows.shape, rows.sum(axis=1).tolist()
    ((4, 2), [4, 4, 4, 4])
    """
    mult = np.asarray(multiplicity, dtype=np.int64)
    out = np.zeros((resamples, len(mult)), dtype=np.int32)
    if mult.sum():
        unit_profile = _unit_profiles(mult)
        _parallel(lambda r0, r1: _draw_rows(seed, r0, r1, unit_profile, out[r0:r1]), resamples)
    return out


def rank_bootstrap(x: np.ndarray, y: np.ndarray, resamples: int = 2000,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(Spearman rho, Kendall tau-b) of each bootstrap resample of the (x, y) units; NaN
    where a resample is constant on one side. Profiles are the distinct (x, y) in sorted
    order, so `draw_counts` of their multiplicities gives the same resamples."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(np.unique(x)) < len(np.unique(y)):
        x, y = y, x  # the levels (Fenwick tree) on the side with fewer distinct values
    _, xcode = np.unique(x, return_inverse=True)
    _, ycode = np.unique(y, return_inverse=True)
    n_levels = int(ycode.max()) + 1 if len(y) else 0
    cell, mult = np.unique(xcode.astype(np.int64) * n_levels + ycode, return_counts=True)
    group = cell // n_levels
    level = (cell % n_levels).astype(np.int64)
    n_groups = int(group[-1]) + 1 if len(group) else 0
    rho, tau = np.full(resamples, np.nan), np.full(resamples, np.nan)
    if len(x):
        unit_profile = _unit_profiles(mult)
        _parallel(lambda r0, r1: _rank_rows(seed, r0, r1, unit_profile, group, level, n_groups, n_levels,
                                            rho[r0:r1], tau[r0:r1]), resamples)
    return rho, tau
