"""Seeded percentile bootstrap over item indices."""
import math

import numpy as np


def resample_blocks(n, resamples=2000, seed=0, block=256):
    """Yield (k, n) index arrays; the rows are the same for a given (n, seed) whatever
    `block` is, so every statistic of a report resamples the same items."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < resamples:
        k = min(block, resamples - done)
        yield np.stack([rng.integers(0, n, n) for _ in range(k)])
        done += k


def percentile_ci(samples, alpha=0.05):
    """[lo, hi] percentile interval of the finite samples; None if there are none."""
    arr = np.asarray([s for s in samples if s is not None], dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return None
    lo, hi = np.percentile(arr, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return [float(lo), float(hi)]


def bootstrap_ci(stat, n, resamples=2000, seed=0, alpha=0.05):
    """Percentile CI of stat(idx) over `resamples` resamples of range(n); None if n = 0.

    Resamples where stat returns None or NaN are left out (e.g. a constant resample).
    """
    if n <= 0:
        return None
    samples = []
    for block in resample_blocks(n, resamples, seed):
        for idx in block:
            value = stat(idx)
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                samples.append(value)
    return percentile_ci(samples, alpha)
