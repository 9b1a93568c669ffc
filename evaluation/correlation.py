"""Pearson, Spearman and Kendall tau-b with p-values and seeded bootstrap CIs."""
import math

import numpy as np
from scipy import stats

from evaluation.bootstrap import percentile_ci, resample_blocks

METHODS = ("pearson", "spearman", "kendall")


def _clean(x, y):
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} vs {len(y)})")
    pairs = [(float(a), float(b)) for a, b in zip(x, y)
             if a is not None and b is not None and not math.isnan(float(a))
             and not math.isnan(float(b))]
    arr = np.array(pairs, dtype=float).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]


def _row_pearson(a, b):
    """Pearson r of each row pair; NaN where a row is constant."""
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    den = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (a * b).sum(axis=1) / np.where(den > 0, den, 1.0), np.nan)


def _row_kendall_b(a, b, cells=2_000_000):
    """Kendall tau-b of each row pair (NaN where a row is constant).

    Small n: pairwise sign matrices in row chunks of about `cells` entries; large n:
    scipy's O(n log n) routine row by row.
    """
    n = a.shape[1]
    if n > 150:
        return [stats.kendalltau(x, y, variant="b").statistic
                if not (_is_constant(x) or _is_constant(y)) else np.nan
                for x, y in zip(a, b)]
    out = []
    pairs = n * (n - 1) / 2.0
    step = max(1, cells // (n * n))
    for lo in range(0, len(a), step):
        sa = np.sign(a[lo:lo + step, :, None] - a[lo:lo + step, None, :])
        sb = np.sign(b[lo:lo + step, :, None] - b[lo:lo + step, None, :])
        concordance = (sa * sb).sum(axis=(1, 2)) / 2.0
        ties_a = ((sa == 0).sum(axis=(1, 2)) - n) / 2.0
        ties_b = ((sb == 0).sum(axis=(1, 2)) - n) / 2.0
        den = np.sqrt((pairs - ties_a) * (pairs - ties_b))
        with np.errstate(invalid="ignore", divide="ignore"):
            out.extend(np.where(den > 0, concordance / np.where(den > 0, den, 1), np.nan).tolist())
    return out


def _is_constant(v):
    return v.size == 0 or np.all(v == v[0])


def correlations(x, y, resamples=2000, seed=0):
    """{"pearson"|"spearman"|"kendall": {"r", "p_value", "ci95"}, "n"}.

    Pairs with a missing value are dropped. Fewer than 2 pairs or a constant side give
    None values. Bootstrap resamples that come out constant are left out of the CI.
    """
    x, y = _clean(x, y)
    n = len(x)
    empty = {"r": None, "p_value": None, "ci95": None}
    if n < 2 or _is_constant(x) or _is_constant(y):
        return {**{m: dict(empty) for m in METHODS}, "n": n}
    out = {"n": n}
    tests = {"pearson": stats.pearsonr, "spearman": stats.spearmanr,
             "kendall": lambda a, b: stats.kendalltau(a, b, variant="b")}
    for method, test in tests.items():
        res = test(x, y)
        out[method] = {"r": float(res.statistic), "p_value": float(res.pvalue)}
    samples = {m: [] for m in METHODS}
    for idx in resample_blocks(n, resamples, seed):
        xs, ys = x[idx], y[idx]
        samples["pearson"].extend(_row_pearson(xs, ys).tolist())
        rx, ry = stats.rankdata(xs, axis=1), stats.rankdata(ys, axis=1)
        samples["spearman"].extend(_row_pearson(rx, ry).tolist())
        samples["kendall"].extend(_row_kendall_b(xs, ys))
    for method in METHODS:
        out[method]["ci95"] = percentile_ci(samples[method])
    return out


def system_correlations(systems, x, y, resamples=2000, seed=0):
    """`correlations` of per-system means of x and y (n = number of systems)."""
    if not (len(systems) == len(x) == len(y)):
        raise ValueError("systems, x and y differ in length")
    by = {}
    for s, a, b in zip(systems, x, y):
        if a is None or b is None or math.isnan(float(a)) or math.isnan(float(b)):
            continue
        by.setdefault(s, []).append((float(a), float(b)))
    names = sorted(by, key=str)
    means = np.array([np.mean(by[s], axis=0) for s in names]).reshape(-1, 2)
    result = correlations(means[:, 0], means[:, 1], resamples, seed)
    result["systems"] = names
    return result
