"""Intervals that are not bootstraps, under the small-n rules of statistics.md ("Clustered
data"): no interval from fewer than 5 clusters, and no t interval for a constant sample
(its standard error is 0, so it would print as [m, m] as if m were certain).

`t_interval` is the one t interval of a report: a mean over independent values (one per
cluster: an item's score, an annotator's share), mean -+ t(0.975, n - 1) sd / sqrt(n), sd
with n - 1.
"""
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evaluation.bootstrap import MIN_CLUSTERS

CONSTANT = "constant sample (sd = 0): no t interval"


@dataclass(frozen=True)
class TResult:
    """mean, sd (n - 1), n; ci95 [lo, hi] or None with `reason`; p_value of the two-sided
    one-sample t-test against `null` (None where it is undefined, same reason)."""

    mean: float | None
    sd: float | None
    n: int
    ci95: list[float] | None
    p_value: float | None
    reason: str | None


def t_interval(values: Sequence[float] | np.ndarray, null: float | None = None) -> TResult:
    """The t interval of the mean of `values` (one per cluster), and with `null` the
    one-sample t-test of mean = null.

    >>> r = t_interval([0.4, 0.6, 0.5, 0.7, 0.3], null=0.5)
    >>> round(r.mean, 3), [round(v, 4) for v in r.ci95], round(r.p_value, 6)
    (0.5, [0.3037, 0.6963], 1.0)
    >>> t_interval([0.5] * 6, null=0.5).reason
    'constant sample (sd = 0): no t interval'
    >>> t_interval([0.1, 0.9], null=0.5).ci95, t_interval([0.1, 0.9]).reason
    (None, 'fewer than 5 clusters (2)')
    """
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        return TResult(None, None, 0, None, None, "no values")
    mean = float(np.mean(x))
    if n < 2:
        return TResult(mean, None, 1, None, None, "one value")
    sd = float(np.std(x, ddof=1))
    if sd == 0.0 or not math.isfinite(sd) or np.all(x == x[0]):
        return TResult(mean, 0.0, n, None, None, CONSTANT)
    from scipy.stats import t as student_t

    se = sd / math.sqrt(n)
    p = None
    if null is not None:
        p = float(2 * student_t.sf(abs((mean - null) / se), n - 1))
    if n < MIN_CLUSTERS:
        return TResult(mean, sd, n, None, p, f"fewer than {MIN_CLUSTERS} clusters ({n})")
    half = float(student_t.ppf(0.975, n - 1)) * se
    return TResult(mean, sd, n, [mean - half, mean + half], p, None)
