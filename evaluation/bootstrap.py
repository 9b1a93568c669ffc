"""Seeded percentile bootstrap over item indices, drawn and evaluated a block at a time."""
import numpy as np

BLOCK_ENTRIES = 1 << 20  # indices per block: ~8 MB, whatever n is


def resample_blocks(n, resamples=2000, seed=0, block=None):
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


def percentile_ci(samples, alpha=0.05):
    """[lo, hi] percentile interval of the finite samples; None if there are none."""
    arr = np.asarray([np.nan if s is None else s for s in samples], dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return None
    lo, hi = np.percentile(arr, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return [float(lo), float(hi)]


def bootstrap_ci(stat, n, resamples=2000, seed=0, alpha=0.05, rows=False):
    """Percentile CI of stat(idx) over `resamples` resamples of range(n); None if n = 0.

    rows=False: stat takes one index vector and returns a number (or None).
    rows=True: stat takes a (k, n) block of index rows and returns k numbers at once,
    which is what keeps a 100k-judgment report fast.
    Resamples where stat gives None or NaN are left out (e.g. a constant resample).
    """
    if n <= 0:
        return None
    samples = []
    for block in resample_blocks(n, resamples, seed):
        if rows:
            samples.extend(np.asarray(stat(block), dtype=float).tolist())
        else:
            samples.extend(stat(idx) for idx in block)
    return percentile_ci(samples, alpha)


def bootstrap_mean_ci(values, resamples=2000, seed=0, alpha=0.05):
    """Percentile CI of the mean of `values` (one per item) over item resamples; None if empty.

    A resample's mean depends only on how often each distinct value is drawn, and those
    counts are multinomial(n, shares of the distinct values). Drawing the counts directly
    gives the same bootstrap distribution as drawing n indices per resample, at a cost of
    resamples x distinct values instead of resamples x n: alignment credits take 3 values,
    so a 300,000-item CI costs milliseconds.
    """
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    distinct, counts = np.unique(values, return_counts=True)
    rng = np.random.default_rng(seed)
    drawn = rng.multinomial(values.size, counts / values.size, size=resamples)
    return percentile_ci(drawn @ distinct / values.size, alpha)
