"""Spearman's rho and Kendall's tau-b of every bootstrap resample of n (x, y) units, in
compiled code (numba), so a report's 2,000-resample intervals over 300,000 items take
about a second instead of minutes.

The draw (a resample = how often each distinct profile is drawn; Poissonization, exact,
splitmix64 streams per resample so threads do not change the result) is described step by
step in docs/statistics.md, "The compiled bootstrap draw".

Per resample, with profiles in x order and y's distinct values as levels:
- Spearman: rho = sum_j w_j (rx_j - m)(ry_j - m) / sqrt(Vx Vy), midranks rx, ry,
  m = (n + 1) / 2, V = (n^3 - n - sum_t (t^3 - t)) / 12 over tied groups t;
- Kendall tau-b: S = sum_j w_j (L_j - H_j) over the profiles in that order, L_j / H_j the
  earlier units at a lower / higher level (running sums per level: a plain array up to 8
  levels, a Fenwick tree beyond), minus the pairs inside one x group, which that order
  counts as concordant: (W_g^2 - sum_{j in g} w_j^2) / 2 per group;
  tau = S / sqrt((n0 - n1)(n0 - n2)), n0 = n(n - 1)/2, n1, n2 the tied pairs.
Counts and S are exact integers. A resample constant on one side gives NaN.
"""
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np
from numba import njit
from scipy import stats

CHUNK = 64  # resamples per task when several threads share the work
DIRECT_BELOW = 3  # units per profile on average below which the unit indices are drawn directly
POISSON_STEP = 32  # Poisson(m) is drawn as m // 32 Poisson(32) and one Poisson(m % 32)
FEW_LEVELS = 8  # up to this many levels Kendall's running sums are a plain array, else a Fenwick tree


@njit(inline="always")
def _mix(z: np.uint64) -> np.uint64:
    """splitmix64's output function."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always")
def _next(state: np.uint64) -> tuple[np.uint64, np.uint64]:
    """(next state, 64 random bits) of a splitmix64 stream."""
    state += np.uint64(0x9E3779B97F4A7C15)
    return state, _mix(state)


@njit(inline="always")
def _uniform_below(state: np.uint64, bound: int) -> tuple[np.uint64, int]:
    """(next state, an integer uniform in [0, bound)), bound < 2^32: Lemire's multiply-shift
    on 32 bits, rejecting the rare low products below 2^32 mod bound (exactly uniform)."""
    b = np.uint64(bound)
    reject = (np.uint64(1 << 32) - b) % b
    while True:
        state, word = _next(state)
        product = (word >> np.uint64(32)) * b
        if (product & np.uint64(0xFFFFFFFF)) >= reject:
            return state, int(product >> np.uint64(32))


@njit(inline="always")
def _poisson(state: np.uint64, lam: int, prob: np.ndarray, alias: np.ndarray,
             size: np.ndarray) -> tuple[np.uint64, int]:
    """(next state, a Poisson(lam) draw), 1 <= lam <= POISSON_STEP: a bucket and a coin from
    one 53-bit uniform through the alias table of that lam."""
    state, word = _next(state)
    x = np.int64(word >> np.uint64(11)) * (1.0 / 9007199254740992.0) * size[lam]
    k = min(int(x), int(size[lam]) - 1)  # x may round up to size itself (one time in 2^53)
    keep = (x - k) < prob[lam, k]
    return state, keep * k + (1 - keep) * alias[lam, k]  # no branch on the coin


@njit(nogil=True, cache=True)
def _draw(seed: int, r: int, mult: np.ndarray, cum: np.ndarray, prob: np.ndarray, alias: np.ndarray,
          size: np.ndarray, units: np.ndarray, counts: np.ndarray, tree: np.ndarray) -> None:
    """counts[p] = how often profile p is drawn in resample r: the n unit indices when
    `units` (each unit's profile) is given, else Poissonized and corrected to exactly
    n = cum[-1] units (see the module docstring)."""
    state = _mix(np.uint64(seed) * np.uint64(1 << 32) + np.uint64(r))
    if len(units):  # two separately compiled paths: with both inlined here, LLVM made the
        _draw_units(state, units, counts)  # unit draws 5x slower (1.8 vs 0.35 ms at n = 327,000)
    else:
        _draw_poisson(state, mult, cum, prob, alias, size, counts, tree)


@njit(nogil=True, cache=True)
def _draw_poisson(state: np.uint64, mult: np.ndarray, cum: np.ndarray, prob: np.ndarray, alias: np.ndarray,
                  size: np.ndarray, counts: np.ndarray, tree: np.ndarray) -> None:
    """counts[p] ~ Poisson(mult[p]), corrected to exactly n = cum[-1] units."""
    total = 0
    for p in range(len(mult)):
        c = 0
        for _ in range(mult[p] // POISSON_STEP):  # a constant power of two: shifts, not divisions
            state, k = _poisson(state, POISSON_STEP, prob, alias, size)
            c += k
        rest = mult[p] % POISSON_STEP
        if rest:
            state, k = _poisson(state, rest, prob, alias, size)
            c += k
        counts[p] = c
        total += c
    while total < cum[-1]:  # more units, drawn uniformly: unit u belongs to the profile whose range holds it
        state, u = _uniform_below(state, cum[-1])
        counts[np.searchsorted(cum, u, side="right")] += 1
        total += 1
    if total > cum[-1]:
        _remove(state, total - cum[-1], counts, tree)


@njit(nogil=True, cache=True)
def _draw_units(state: np.uint64, units: np.ndarray, counts: np.ndarray) -> None:
    """counts of n uniform unit indices, two per 64-bit output (a rejected half skipped)."""
    counts[:] = 0
    n = len(units)
    bound = np.uint64(n)
    reject = (np.uint64(1 << 32) - bound) % bound
    low = np.uint64(0xFFFFFFFF)
    identity = len(counts) == n  # every unit its own profile: units[u] is u
    drawn = 0
    while drawn < n:
        state, word = _next(state)
        for product in ((word & low) * bound, (word >> np.uint64(32)) * bound):
            if (product & low) >= reject and drawn < n:
                u = np.int64(product >> np.uint64(32))
                counts[u if identity else np.int64(units[u])] += 1
                drawn += 1


@njit(inline="always")
def _remove(state: np.uint64, extra: int, counts: np.ndarray, tree: np.ndarray) -> None:
    """Takes `extra` of the drawn units back out, uniformly without replacement, each one
    found through a Fenwick tree of the counts."""
    n_profiles = len(counts)
    tree[0] = 0
    tree[1:] = counts
    for i in range(1, n_profiles + 1):
        parent = i + (i & -i)
        if parent <= n_profiles:
            tree[parent] += tree[i]
    top = 1
    while top * 2 <= n_profiles:
        top *= 2
    total = counts.sum()
    for _ in range(extra):
        state, k = _uniform_below(state, total)
        pos = 0
        width = top
        while width:
            if pos + width <= n_profiles and tree[pos + width] <= k:
                pos += width
                k -= tree[pos]
            width //= 2
        counts[pos] -= 1
        i = pos + 1
        while i <= n_profiles:
            tree[i] -= 1
            i += i & -i
        total -= 1


@njit(nogil=True, cache=True)
def _draw_rows(seed: int, r0: int, r1: int, mult: np.ndarray, cum: np.ndarray, prob: np.ndarray,
               alias: np.ndarray, size: np.ndarray, units: np.ndarray, out: np.ndarray) -> None:
    tree = np.zeros(len(mult) + 1, np.int64)
    for r in range(r0, r1):
        _draw(seed, r, mult, cum, prob, alias, size, units, out[r - r0], tree)


@njit(inline="always")
def _prefix(tree: np.ndarray, k: int) -> int:
    """Sum of the first k levels in a Fenwick tree (1-based)."""
    total = 0
    while k > 0:
        total += tree[k]
        k -= k & -k
    return total


@njit(nogil=True, cache=True)
def _rank_rows(seed: int, r0: int, r1: int, mult: np.ndarray, cum: np.ndarray, prob: np.ndarray,
               alias: np.ndarray, size: np.ndarray, units: np.ndarray, group: np.ndarray, level: np.ndarray,
               n_groups: int, n_levels: int, rho: np.ndarray, tau: np.ndarray) -> None:
    """rho[r], tau[r] for the resamples r0 <= r < r1 (profiles sorted by x group, then level)."""
    counts = np.zeros(len(mult), np.int32)
    tree = np.zeros(len(mult) + 1, np.int64)
    scratch = (np.zeros(n_groups, np.int64), np.zeros(n_levels, np.int64), np.zeros(n_groups),
               np.zeros(n_levels), np.zeros(n_levels + 1, np.int64))
    k = n_levels if n_levels <= FEW_LEVELS else 0
    sign = np.zeros((k, k), np.int64)  # a unit at level b moves d[e] by sign[b, e] (few levels)
    for b in range(k):
        for e in range(k):
            sign[b, e] = (e > b) - (e < b)
    single = n_groups == len(mult) and k > 0  # every x value its own profile, few levels
    for r in range(r0, r1):
        _draw(seed, r, mult, cum, prob, alias, size, units, counts, tree)
        if single:
            rho[r - r0], tau[r - r0] = _rank_stats_single(cum[-1], counts, level, n_levels, sign, scratch)
        else:
            rho[r - r0], tau[r - r0] = _rank_stats(cum[-1], counts, group, level, n_groups, n_levels, sign, scratch)


@njit(inline="always")
def _rank_stats(n: int, counts: np.ndarray, group: np.ndarray, level: np.ndarray, n_groups: int, n_levels: int,
                sign: np.ndarray, scratch: tuple) -> tuple[float, float]:
    """(rho, tau) of one resample's profile counts (sorted by x group, then level).
    Kendall's S is summed over the profiles in that order, every earlier profile counting
    (d[b]: earlier units below level b minus above it), then the pairs inside one x group,
    which that order counts as concordant (their levels rise), are taken back out:
    (W_g^2 - sum of w^2) / 2 per group. No branch depends on the (random) counts."""
    tx, ty, rx, ry, d = scratch
    nf = float(n)
    mean = (nf + 1.0) / 2.0
    tx[:] = 0
    ty[:] = 0
    squares = np.int64(0)
    for j in range(len(counts)):
        tx[group[j]] += counts[j]
        ty[level[j]] += counts[j]
        squares += np.int64(counts[j]) * counts[j]
    ties_x, tied_x, group_squares = _midranks(tx, rx, mean)
    ties_y, tied_y, _ = _midranks(ty, ry, mean)
    d[:] = 0
    s = earlier = np.int64(0)
    cov = 0.0
    few = len(sign) > 0
    for j in range(len(counts)):
        w, b = np.int64(counts[j]), level[j]
        cov += w * rx[group[j]] * ry[b]
        if few:
            s += w * d[b]
            for e in range(n_levels):
                d[e] += w * sign[b, e]
        else:  # d is a Fenwick tree of the earlier units per level
            s += w * (_prefix(d, b) + _prefix(d, b + 1) - earlier)  # lower - (earlier - up to b)
            k = b + 1
            while k <= n_levels:
                d[k] += w
                k += k & -k
            earlier += w
    s -= (group_squares - squares) // 2
    cube = nf * nf * nf - nf
    vx, vy = (cube - ties_x) / 12.0, (cube - ties_y) / 12.0
    pairs = nf * (nf - 1.0) / 2.0
    den = (pairs - tied_x) * (pairs - tied_y)
    return (cov / np.sqrt(vx * vy) if vx > 0 and vy > 0 else np.nan,
            s / np.sqrt(den) if den > 0 else np.nan)


@njit(inline="always")
def _rank_stats_single(n: int, counts: np.ndarray, level: np.ndarray, n_levels: int, sign: np.ndarray,
                       scratch: tuple) -> tuple[float, float]:
    """`_rank_stats` when every x group is one profile and the levels are few (continuous
    scores): a profile's x midrank follows from the running count, no per-group arrays,
    and no pair sits inside an x group."""
    _, ty, _, ry, d = scratch
    nf = float(n)
    mean = (nf + 1.0) / 2.0
    ty[:] = 0
    for j in range(len(counts)):
        ty[level[j]] += counts[j]
    ties_y, tied_y, _ = _midranks(ty, ry, mean)
    d[:] = 0
    s = np.int64(0)
    cov = ties_x = tied_x = below = 0.0
    for j in range(len(counts)):
        w, b = np.int64(counts[j]), level[j]
        t = float(w)
        cov += t * (below + (t + 1.0) / 2.0 - mean) * ry[b]
        below += t
        ties_x += t * t * t - t
        tied_x += t * (t - 1.0) / 2.0
        s += w * d[b]
        for e in range(n_levels):
            d[e] += w * sign[b, e]
    cube = nf * nf * nf - nf
    vx, vy = (cube - ties_x) / 12.0, (cube - ties_y) / 12.0
    pairs = nf * (nf - 1.0) / 2.0
    den = (pairs - tied_x) * (pairs - tied_y)
    return (cov / np.sqrt(vx * vy) if vx > 0 and vy > 0 else np.nan,
            s / np.sqrt(den) if den > 0 else np.nan)


@njit(inline="always")
def _midranks(totals: np.ndarray, out: np.ndarray, mean: float) -> tuple[float, float, np.int64]:
    """out[g] = midrank of group g minus the mean rank; (sum t^3 - t, tied pairs, sum t^2)."""
    ties = tied = below = 0.0
    squares = np.int64(0)
    for g in range(len(totals)):
        squares += np.int64(totals[g]) * totals[g]
        t = float(totals[g])
        out[g] = below + (t + 1.0) / 2.0 - mean
        below += t
        ties += t * t * t - t
        tied += t * (t - 1.0) / 2.0
    return ties, tied, squares


def _parallel(task: Callable[[int, int], None], resamples: int, chunk: int = CHUNK) -> None:
    """task(r0, r1) over chunks of the resamples, on the machine's cores (the kernels
    release the GIL)."""
    bounds = [(r0, min(resamples, r0 + chunk)) for r0 in range(0, resamples, chunk)]
    workers = min(len(bounds), os.cpu_count() or 1)
    if workers <= 1:
        for r0, r1 in bounds:
            task(r0, r1)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(task, r0, r1) for r0, r1 in bounds]:
            future.result()


@lru_cache(maxsize=1)
def _poisson_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Walker alias tables (prob, alias, size) of Poisson(lam), lam = 1..POISSON_STEP, the pmf
    cut where the tail is below 1e-18 (row 0 unused)."""
    ks = np.arange(8 * POISSON_STEP)
    sizes = [int(np.argmax(stats.poisson.sf(ks, lam) < 1e-18)) + 1 for lam in range(1, POISSON_STEP + 1)]
    width = max(sizes)
    prob, alias = np.ones((POISSON_STEP + 1, width)), np.zeros((POISSON_STEP + 1, width), np.int64)
    size = np.ones(POISSON_STEP + 1)
    for lam, k in zip(range(1, POISSON_STEP + 1), sizes):
        pmf = stats.poisson.pmf(np.arange(k), lam)
        prob[lam, :k], alias[lam, :k] = _alias(pmf / pmf.sum())
        size[lam] = k
    for table in (prob, alias, size):
        table.setflags(write=False)
    return prob, alias, size


def _alias(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias table of the distribution p: bucket k keeps k with probability prob[k],
    else gives alias[k]."""
    k = len(p)
    scaled = p * k
    prob, alias = np.ones(k), np.arange(k)
    small = [i for i in range(k) if scaled[i] < 1.0]
    large = [i for i in range(k) if scaled[i] >= 1.0]
    while small and large:
        s, big = small.pop(), large.pop()
        prob[s], alias[s] = scaled[s], big
        scaled[big] -= 1.0 - scaled[s]
        (small if scaled[big] < 1.0 else large).append(big)
    return prob, alias


def _draw_args(mult: np.ndarray) -> tuple[np.ndarray, ...]:
    """(mult, its running sum, the Poisson alias tables, each unit's profile or nothing):
    what every draw reads. With fewer than DIRECT_BELOW units per profile on average,
    drawing the n unit indices is cheaper than a Poisson draw per profile."""
    mult = np.asarray(mult, dtype=np.int64)
    prob, alias, size = _poisson_tables()
    direct = len(mult) * DIRECT_BELOW > mult.sum()
    units = np.repeat(np.arange(len(mult), dtype=np.int32), mult) if direct else np.zeros(0, np.int32)
    return mult, np.cumsum(mult), prob, alias, size, units


def draw_counts(multiplicity: np.ndarray, resamples: int, seed: int = 0) -> np.ndarray:
    """(resamples, P) counts of each profile in each resample: the draws `rank_bootstrap`
    uses for profiles of these multiplicities (a reference for tests).

    >>> rows = draw_counts(np.array([3, 1]), 4)
    >>> rows.shape, rows.sum(axis=1).tolist()
    ((4, 2), [4, 4, 4, 4])
    """
    mult, cum, prob, alias, size, units = _draw_args(multiplicity)
    out = np.zeros((resamples, len(mult)), dtype=np.int64)
    if cum.size and cum[-1]:
        _parallel(lambda r0, r1: _draw_rows(seed, r0, r1, mult, cum, prob, alias, size, units, out[r0:r1]),
                  resamples)
    return out


def reduce_draws(multiplicity: np.ndarray, resamples: int, reduce: Callable[[np.ndarray], np.ndarray],
                 seed: int = 0) -> np.ndarray:
    """reduce(rows) for the rows of `draw_counts(multiplicity, resamples, seed)`, drawn and
    reduced a chunk of CHUNK rows at a time on the machine's cores (never all rows at once:
    a (resamples, P) count matrix is 2,000 x P int64s). `reduce` maps a (k, P) int64 block
    to a (k, ...) array (e.g. a product with per-profile statistics) and must release the
    GIL to run in parallel (NumPy's matmul does).

    >>> mult = np.array([3, 1])
    >>> (reduce_draws(mult, 4, lambda rows: rows * 2) == 2 * draw_counts(mult, 4)).all()
    np.True_
    """
    mult, cum, prob, alias, size, units = _draw_args(multiplicity)
    first = reduce(np.zeros((1, len(mult)), dtype=np.int64))
    out = np.zeros((resamples,) + first.shape[1:], dtype=first.dtype)

    def task(r0: int, r1: int) -> None:
        rows = np.zeros((r1 - r0, len(mult)), dtype=np.int64)
        if cum.size and cum[-1]:
            _draw_rows(seed, r0, r1, mult, cum, prob, alias, size, units, rows)
        out[r0:r1] = reduce(rows)

    _parallel(task, resamples)
    return out


class Cells:
    """The distinct (x, y) values ("profiles", "cells") of paired numbers, sorted by x group
    then y level: `group`, `level` of each cell, `mult` (units per cell), `of_unit` (each
    unit's cell). y is the side with fewer distinct values (the levels of Kendall's running
    sums; both coefficients are symmetric), so x and y may be swapped."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        if len(np.unique(x)) < len(np.unique(y)):
            x, y = y, x
        _, xcode = np.unique(x, return_inverse=True)
        _, ycode = np.unique(y, return_inverse=True)
        self.n_levels = int(ycode.max()) + 1
        cell, of_unit, mult = np.unique(xcode.ravel().astype(np.int64) * self.n_levels + ycode.ravel(),
                                        return_inverse=True, return_counts=True)
        self.group = (cell // self.n_levels).astype(np.int32)
        self.level = (cell % self.n_levels).astype(np.int32)
        self.mult, self.of_unit = mult, of_unit.ravel()
        self.n_groups = int(self.group[-1]) + 1


def rank_bootstrap(x: np.ndarray, y: np.ndarray, resamples: int = 2000,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(Spearman rho, Kendall tau-b) of each bootstrap resample of the (x, y) units; NaN
    where a resample is constant on one side. Profiles are the distinct (x, y), sorted
    (`Cells`), so `draw_counts` of their multiplicities gives the same resamples."""
    rho, tau = np.full(resamples, np.nan), np.full(resamples, np.nan)
    if not len(x):
        return rho, tau
    cells = Cells(x, y)
    group, level, n_groups, n_levels = cells.group, cells.level, cells.n_groups, cells.n_levels
    mult, cum, prob, alias, size, units = _draw_args(cells.mult)
    _parallel(lambda r0, r1: _rank_rows(seed, r0, r1, mult, cum, prob, alias, size, units, group, level,
                                        n_groups, n_levels, rho[r0:r1], tau[r0:r1]), resamples)
    return rho, tau


@njit(nogil=True, cache=True)
def _rank_rows_of_counts(counts: np.ndarray, group: np.ndarray, level: np.ndarray, n_groups: int,
                         n_levels: int, rho: np.ndarray, tau: np.ndarray) -> None:
    """rho[r], tau[r] of given cell counts (one resample a row, n = the row's sum)."""
    scratch = (np.zeros(n_groups, np.int64), np.zeros(n_levels, np.int64), np.zeros(n_groups),
               np.zeros(n_levels), np.zeros(n_levels + 1, np.int64))
    k = n_levels if n_levels <= FEW_LEVELS else 0
    sign = np.zeros((k, k), np.int64)
    for b in range(k):
        for e in range(k):
            sign[b, e] = (e > b) - (e < b)
    single = n_groups == counts.shape[1] and k > 0
    for r in range(counts.shape[0]):
        row = counts[r]
        n = row.sum()
        if single:
            rho[r], tau[r] = _rank_stats_single(n, row, level, n_levels, sign, scratch)
        else:
            rho[r], tau[r] = _rank_stats(n, row, group, level, n_groups, n_levels, sign, scratch)


def rank_stats_of_counts(cells: Cells, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Spearman rho, Kendall tau-b) of each row of `counts` (k, cells): how often each cell
    is in one resample (any n; e.g. the units of resampled clusters). NaN where a row is
    constant on one side. Rows in chunks on the machine's cores, as `rank_bootstrap`."""
    counts = np.ascontiguousarray(counts, dtype=np.int32)
    rho, tau = np.full(len(counts), np.nan), np.full(len(counts), np.nan)
    _parallel(lambda r0, r1: _rank_rows_of_counts(counts[r0:r1], cells.group, cells.level, cells.n_groups,
                                                  cells.n_levels, rho[r0:r1], tau[r0:r1]), len(counts),
              chunk=max(1, -(-len(counts) // (os.cpu_count() or 1))))
    return rho, tau


@njit(nogil=True, cache=True)
def weighted_profiles(counts: np.ndarray, indptr: np.ndarray, columns: np.ndarray, values: np.ndarray,
                       out: np.ndarray) -> None:
    """out[r] = sum_p counts[r, p] * W(profile p), the profiles' W as sparse rows (a profile
    touches few cells): evaluation.bradley_terry's item bootstrap. Compiled and without the GIL, so
    the draw's threads run it side by side (a BLAS product there would start threads inside
    threads)."""
    for r in range(counts.shape[0]):
        for p in range(counts.shape[1]):
            c = counts[r, p]
            if c:
                for k in range(indptr[p], indptr[p + 1]):
                    out[r, columns[k]] += c * values[k]


def warm_up() -> float:
    """Compiles the kernels (or loads them from numba's on-disk cache, NUMBA_CACHE_DIR or
    __pycache__) and returns the seconds it took: about 10 s the first time on a machine,
    0.3 s after. Setup and benchmarks call it so no report pays for it."""
    import time

    start = time.perf_counter()
    rank_bootstrap(np.arange(30.0), np.arange(30.0) % 4, 4)
    rank_bootstrap(np.arange(30.0), np.arange(30.0) % 10, 4)
    draw_counts(np.array([2, 1]), 2)
    weighted_profiles(np.ones((1, 1), np.int64), np.array([0, 1], np.int64), np.zeros(1, np.int64),
                      np.ones(1), np.zeros((1, 1)))  # evaluation.bradley_terry's bootstrap sums
    for levels in (4, 10):
        cells = Cells(np.arange(30.0), np.arange(30.0) % levels)
        rank_stats_of_counts(cells, np.ones((2, len(cells.mult)), np.int32))
    return time.perf_counter() - start
