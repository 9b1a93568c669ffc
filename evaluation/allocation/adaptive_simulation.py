"""Seeded simulation of many studies allocated by `evaluation.allocation.adaptive`'s rule (or the
balanced least-judged-pair rule), all studies advanced one judgment at a time together,
so that the tests and bench/adaptive_bench.py measure the allocation the product uses.

Data-generating model: Bradley-Terry with known strengths, no ties; every judgment is its
own item (one annotator, one pair per item), so the item bootstrap resamples judgments.
"""
from dataclasses import dataclass

import numpy as np

from evaluation.allocation.adaptive import MIN_PER_PAIR, UNIFORM_SHARE, pair_codes, pair_probabilities
from evaluation.bradley_terry import Comparisons


@dataclass(frozen=True)
class SimulatedStudies:
    """B studies of T judgments: `first`, `second` (T, B) system codes, `credit` (T, B) of
    the first (1 = it won), `probability` (T, B) with which the judgment's pair was chosen."""

    systems: list[str]
    first: np.ndarray
    second: np.ndarray
    credit: np.ndarray
    probability: np.ndarray

    def study(self, k: int) -> Comparisons:
        """Study k as the report's comparisons (item t = judgment t)."""
        return Comparisons(self.systems, np.arange(len(self.first)), self.first[:, k], self.second[:, k],
                           self.credit[:, k])


def true_win_rates(theta: np.ndarray) -> np.ndarray:
    """Per system, the mean over the other systems of P(it beats that one): the win rate of
    a uniform choice of pairs (what `ipw_win_rates` estimates).

    >>> true_win_rates(np.array([np.log(3), 0.0])).tolist()
    [0.75, 0.25]
    """
    from scipy.special import expit

    p = expit(theta[:, None] - theta[None, :])
    np.fill_diagonal(p, 0.0)
    return np.asarray(p.sum(axis=1) / (len(theta) - 1))


def simulate(theta: np.ndarray, budget: int, studies: int, seed: int = 0, adaptive: bool = True,
             min_per_pair: int = MIN_PER_PAIR, uniform_share: float = UNIFORM_SHARE) -> SimulatedStudies:
    """`studies` studies of `budget` judgments each, systems of true strengths `theta`.
    adaptive=False: the balanced rule, a uniform choice among the least-judged pairs
    (the cold start that never ends), every probability recorded as well."""
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    s = len(theta)
    a, b = pair_codes(s)
    w = np.zeros((studies, s, s))
    shape = (budget, studies)
    first, second = np.zeros(shape, np.int64), np.zeros(shape, np.int64)
    credit, probability = np.zeros(shape), np.zeros(shape)
    start = None
    rows = np.arange(studies)
    for t in range(budget):
        if adaptive:
            pi, start = pair_probabilities(w, min_per_pair, uniform_share, start)
        else:
            pi, _ = pair_probabilities(w, budget + 1, 0.0)
        pick = (pi.cumsum(axis=1) < rng.random((studies, 1)) * pi.sum(axis=1, keepdims=True)).sum(axis=1)
        pick = np.minimum(pick, len(a) - 1)
        x, y = a[pick], b[pick]
        won = rng.random(studies) < expit(theta[x] - theta[y])
        first[t], second[t], credit[t], probability[t] = x, y, won, pi[rows, pick]
        w[rows, x, y] += won
        w[rows, y, x] += ~won
    return SimulatedStudies([f"s{k}" for k in range(s)], first, second, credit, probability)
