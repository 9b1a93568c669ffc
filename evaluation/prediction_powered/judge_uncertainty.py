"""How uncertain an evaluator (an LLM judge, a metric) is about each item, from its stored
scores, and the offer probabilities `allocation: "judge_uncertain"` draws humans' items with
(issue 35; active statistical inference, Zrnic & Candes 2024). Django-free.

The rule, per item, from the evaluator's parsed numeric values on it (one per candidate):

- two values or more (a pairwise item: one score per candidate): the margin m_i is the
  smallest gap between two of them (the closest pair, the hardest call a human is asked);
  the study's scale s is the median of the positive margins (1 when none is positive), and
  the judge's implied probability that the higher-scored candidate wins is
  p_i = 1 / (1 + 3^(-m_i / s)): a tie is 0.5, the median margin 3:1 odds. Scale-free: the
  same for a 0-100 GEMBA score and a 1-5 G-Eval score;
- one value in [0, 1]: a probability the evaluator gave (a win probability): p_i = it;
- anything else (no parsed value, one value outside [0, 1]): p_i = 0.5, the most
  uncertain: the evaluator tells nothing about the item.

The uncertainty is u_i = sqrt(p_i (1 - p_i)) (`active_inference.bernoulli_uncertainty`:
the sd of a human 0/1 answer if the judge were calibrated; the variance-optimal pi_i is
proportional to it, i.e. to the square root of the answer's variance), and the offer
probabilities pi_i = `active_inference.sampling_probabilities(u, budget x N, floor)`:
proportional to u_i, at least `floor`, at most 1, summing to budget x N (the expected
number of items humans are offered). The floor is FLOOR_SHARE x budget: no item's weight
1 / pi_i exceeds 1 / floor, and every item can be drawn (the estimate stays unbiased).
"""
import math
from collections.abc import Sequence

import numpy as np

from evaluation.prediction_powered.active_inference import bernoulli_uncertainty, sampling_probabilities

FLOOR_SHARE = 0.2  # the smallest offer probability, as a share of the budget
ODDS_AT_MEDIAN = 3.0  # the judge's implied odds at the study's median margin


def implied_probabilities(values: Sequence[Sequence[float]]) -> np.ndarray:
    """p_i per item (module docstring) from each item's parsed numeric values.

    >>> implied_probabilities([[60, 50], [50, 50], [50, 60], [0.9], [], [4.0]]).tolist()
    [0.75, 0.5, 0.75, 0.9, 0.5, 0.5]
    """
    margins = [min(np.diff(sorted(v))) if len(v) >= 2 else math.nan for v in values]
    positive = [m for m in margins if m > 0]
    scale = float(np.median(positive)) if positive else 1.0
    p = np.full(len(values), 0.5)
    for i, (v, m) in enumerate(zip(values, margins)):
        if len(v) >= 2:
            p[i] = 1.0 / (1.0 + ODDS_AT_MEDIAN ** (-m / scale))
        elif len(v) == 1 and 0.0 <= v[0] <= 1.0:
            p[i] = v[0]
    return p


def offer_probabilities(values: Sequence[Sequence[float]], budget: float) -> np.ndarray:
    """pi_i per item: rising with the judge's uncertainty, mean `budget` (0 < budget <= 1),
    floor FLOOR_SHARE x budget (module docstring).

    u = sqrt(p (1 - p)) = sqrt(3) / 4, 1 / 2, sqrt(3) / 4, 0.3, 1 / 2, 1 / 2; pi = 3 u / sum(u):

    >>> offer_probabilities([[60, 50], [50, 50], [50, 60], [0.9], [], [4.0]], 0.5).round(4).tolist()
    [0.4873, 0.5626, 0.4873, 0.3376, 0.5626, 0.5626]
    """
    if not 0 < budget <= 1:
        raise ValueError(f"the budget must be in (0, 1], got {budget!r}")
    n = len(values)
    if n == 0:
        return np.zeros(0)
    return sampling_probabilities(bernoulli_uncertainty(implied_probabilities(values)), budget * n,
                                  FLOOR_SHARE * budget)
