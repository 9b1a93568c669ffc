"""Active statistical inference (Zrnic & Candès 2024): humans label item i with a recorded
probability pi_i that rises with the evaluator's uncertainty about it, and the mean over
all N items is estimated by inverse-probability weighting, PPI style.

With prediction f_i, label indicator xi_i (drawn by `human_subset.active_draw`) and human
mean y_i where xi_i = 1, each item contributes
    z_i = lambda f_i + (y_i - lambda f_i) xi_i / pi_i = A_i - lambda B_i,
    A_i = xi_i y_i / pi_i,  B_i = f_i (xi_i / pi_i - 1),
unbiased for y_i whatever lambda is (E[xi_i / pi_i] = 1). estimate = mean(z); se = sd(z) /
sqrt(N) (divisor N, as ppi_py); ci95 = estimate -+ 1.96 se. lambda (power tuning, as PPI++)
minimises the variance of z: cov(A, B) / var(B) (divisor N), clipped to [0, 1]; 0 when B
does not vary (every pi_i = 1: the predictions are never used). lambda = 1 is the paper's
plain active estimator.

`sampling_probabilities` turns uncertainties into the pi_i: proportional to the
uncertainty (the variance-optimal rule is pi_i proportional to sqrt(E[(y - f)^2 | item])),
never below a floor (so no item's weight 1 / pi_i explodes), at most 1, summing to the
budget (the expected number of labeled items).
"""
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.bootstrap import Z975
from evaluation.prediction_powered.ppi import MIN_LABELED, item_means
from evaluation.tabulate import factorize

METHOD = "active inference: inverse-probability-weighted PPI++, normal interval over items (Zrnic & Candes 2024)"


def bernoulli_uncertainty(p: Sequence[float] | np.ndarray) -> np.ndarray:
    """sqrt(p (1 - p)): the sd of a 0/1 human label that a calibrated judge puts at
    probability p (a pairwise win, say), the uncertainty the optimal pi_i is proportional to.

    >>> bernoulli_uncertainty([0.5, 0.9, 1.0]).round(3).tolist()
    [0.5, 0.3, 0.0]
    """
    q = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    return np.sqrt(q * (1 - q))


def sampling_probabilities(uncertainty: Sequence[float] | np.ndarray, budget: float,
                           floor: float) -> np.ndarray:
    """pi_i = clip(c u_i, floor, 1) with the c that makes sum(pi) = budget (the expected
    number of human-labeled items); uniform budget / N when no uncertainty is positive.

    Raises ValueError unless the uncertainties are finite and >= 0, 0 < floor <= 1 and
    floor * N <= budget <= N.

    >>> sampling_probabilities([1.0, 1.0, 2.0, 4.0], budget=2.0, floor=0.2).tolist()
    [0.25, 0.25, 0.5, 1.0]
    >>> sampling_probabilities([0.0, 1.0, 3.0], budget=1.5, floor=0.25).tolist()
    [0.25, 0.3125, 0.9375]
    """
    u = np.asarray(uncertainty, dtype=float)
    n = len(u)
    if n == 0 or not np.all(np.isfinite(u)) or u.min() < 0:
        raise ValueError("uncertainties must be finite numbers >= 0, at least one")
    if not 0 < floor <= 1:
        raise ValueError(f"the floor must be in (0, 1], got {floor!r}")
    if not floor * n - 1e-9 <= budget <= n + 1e-9:
        raise ValueError(f"the budget must lie between floor * N = {floor * n:g} and N = {n}, got {budget!r}")
    if u.max() == 0:
        return np.full(n, budget / n)

    def total(c: float) -> float:
        return float(np.clip(c * u, floor, 1.0).sum())

    lo, hi = 0.0, 1.0 / float(u[u > 0].min())  # total(hi) = N >= budget
    for _ in range(200):  # bisection for the sets at the floor and at 1 ...
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total(mid) < budget else (lo, mid)
    c = (lo + hi) / 2
    at_floor, at_one = c * u <= floor, c * u >= 1.0
    middle = ~at_floor & ~at_one
    if middle.any():  # ... then c solved exactly on them
        c = (budget - floor * at_floor.sum() - at_one.sum()) / float(u[middle].sum())
    return np.clip(c * u, floor, 1.0)


@dataclass(frozen=True)
class ActiveResult:
    """The weighted estimate of the mean over items: estimate, ci95, lam, se, n_labeled,
    n_items, expected_labels (sum of pi); None with `reason` where there is none."""

    n_labeled: int
    n_items: int
    expected_labels: float
    estimate: float | None = None
    ci95: list[float] | None = None
    lam: float | None = None
    se: float | None = None
    reason: str | None = None


def active_arrays(f: np.ndarray, pi: np.ndarray, labeled: np.ndarray, y: np.ndarray,
                  lam: float | None = None) -> tuple[float, float, float]:
    """(estimate, se, lambda) over N items (module docstring); y is read where labeled.

    >>> est, se, lam = active_arrays(np.array([0.5, 0.5]), np.array([1.0, 0.5]),
    ...                              np.array([True, False]), np.array([1.0, np.nan]), lam=1.0)
    >>> est, round(se, 4), lam
    (0.75, 0.1768, 1.0)
    """
    w = np.where(labeled, 1.0 / pi, 0.0)
    a = w * np.where(labeled, y, 0.0)
    b = f * (w - 1.0)
    if lam is None:
        var_b = float(np.var(b))
        lam = 0.0 if var_b <= 0 else min(1.0, max(0.0, float(np.mean((a - a.mean()) * (b - b.mean()))) / var_b))
    z = a - lam * b
    return float(z.mean()), float(np.std(z)) / math.sqrt(len(z)), float(lam)


def active_mean(items: Sequence[Any] | np.ndarray, probabilities: Sequence[float] | np.ndarray,
                pred_items: Sequence[Any] | np.ndarray, pred_values: Sequence[Any] | np.ndarray,
                human_items: Sequence[Any] | np.ndarray, human_values: Sequence[Any] | np.ndarray,
                lam: float | None = None, min_labeled: int = MIN_LABELED) -> ActiveResult:
    """The active-inference estimate of the mean over `items` of a human quantity.

    items / probabilities: every item once, with the pi_i it was drawn with; predictions
    and human judgments in long format (averaged per item first); lam: None = tuned.
    """
    labels, codes = factorize(np.asarray(list(items), dtype=object))
    pi_rows = np.asarray(probabilities, dtype=float)
    n = len(labels)
    if len(pi_rows) != len(codes) or len(codes) != n:
        return ActiveResult(0, n, math.nan, reason="items must be listed once each, with one probability each")
    pi = np.empty(n)
    pi[codes] = pi_rows
    expected = float(pi.sum())
    position = {item: k for k, item in enumerate(labels.tolist())}
    predicted, f_means = item_means(pred_items, pred_values)
    human, y_means = item_means(human_items, human_values)
    f = np.full(n, np.nan)
    y = np.full(n, np.nan)
    strangers = [i for i in predicted.tolist() + human.tolist() if i not in position]
    for item, value in zip(predicted.tolist(), f_means.tolist()):
        if item in position:
            f[position[item]] = value
    for item, value in zip(human.tolist(), y_means.tolist()):
        if item in position:
            y[position[item]] = value
    labeled = np.isfinite(y)
    n_labeled = int(labeled.sum())
    reason = None
    if strangers:
        reason = f"{len(strangers)} judged item(s) are not among the sampled items ({strangers[0]}, ...)"
    elif not np.all(np.isfinite(pi)) or pi.min() <= 0 or pi.max() > 1:
        reason = "every sampling probability must be in (0, 1]: an item that cannot be drawn biases the estimate"
    elif not np.all(np.isfinite(f)):
        reason = f"{int((~np.isfinite(f)).sum())} item(s) have no prediction"
    elif n_labeled < min_labeled:
        reason = f"fewer than {min_labeled} labeled items ({n_labeled})"
    if reason is not None:
        return ActiveResult(n_labeled, n, expected, reason=reason)
    estimate, se, tuned = active_arrays(f, pi, labeled, y, lam)
    if not se > 0:
        return ActiveResult(n_labeled, n, expected, reason="the standard error is 0: no interval")
    return ActiveResult(n_labeled, n, expected, estimate, [estimate - Z975 * se, estimate + Z975 * se], tuned, se)
