"""Seeded percentile bootstrap over units, drawn and evaluated a block at a time.

Two ways to draw the same thing. `resample_blocks` draws n unit indices per resample.
`bootstrap_weights` draws how often each distinct unit *profile* (units that are equal for
the statistic, e.g. the same value counts) is picked: those counts are multinomial(n,
profile shares), which is exactly the distribution of the index draw, at a cost of
resamples x profiles instead of resamples x n. Statistics written over per-profile weights
are then vectorized over a whole block of resamples.
"""
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

BLOCK_ENTRIES = 1 << 20  # draws per block: ~8 MB, whatever n is
# Drawing a multinomial costs about a binomial draw per profile, ~12x an index draw plus
# its count: below n / 12 profiles the multinomial is cheaper.
MULTINOMIAL_BELOW = 1 / 12


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
