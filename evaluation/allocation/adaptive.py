"""Adaptive allocation of system pairs (statistics.md, "Adaptive allocation", revised
2026-12-05) and the win rates it needs (inverse-probability weighted).

The rule (docs/statistics.md, "Adaptive allocation", says the same in words):
- n[a, b] = comparisons of a with b so far (W + W^T: a tie is one comparison); the
  K = S (S - 1) / 2 pairs are numbered (0, 1), (0, 2), ..., (S - 2, S - 1) (`pair_codes`).
- Cold start: while some pair has fewer than `min_per_pair` comparisons, the target q is
  uniform over the pairs with the fewest.
- Active: the strengths theta are the Bradley-Terry MLE of W + PRIOR_TIE (one pseudo tie
  per pair, so that they are finite from the first judgment on; used for allocation only,
  never reported). The Fisher information of the BT MLE is the Laplacian
  L = sum_{a<b} n[a, b] p_ab (1 - p_ab) (e_a - e_b)(e_a - e_b)^T (`information_matrix`);
  under the mean-0 constraint the strengths' covariance is its pseudo-inverse
  L^+ = (L + 11^T / S)^-1 - 11^T / S. One more comparison of (a, b) adds
  w d d^T (w = p_ab (1 - p_ab), d = e_a - e_b), which lowers trace(L^+) by
  w |L^+ d|^2 / (1 + w d^T L^+ d) (Sherman-Morrison; `expected_reductions`). q is uniform
  over the pairs with the largest reduction (Chiang et al. 2024's active rule: the pair
  that most reduces the summed variance of the strengths).
- The probabilities: pi = (1 - uniform_share) q + uniform_share / K, so every pair keeps at
  least uniform_share / K (a deterministic argmax would leave no probability to weight by).

`ipw_win_rates` weights each judgment by 1 / pi of its pair when it was drawn (Hajek: the
weighted wins over the weights), which estimates the win rate a uniform choice of pairs
would have; with equal pi it is the plain win rate. Bradley-Terry stays the unweighted MLE
(`evaluation.bradley_terry`): its likelihood is valid under a design that depends on past
outcomes only.
"""
from typing import Any

import numpy as np

from evaluation.bootstrap import RESAMPLES, bootstrap_interval, bootstrap_method, interval_refusal, ratio_samples
from evaluation.bradley_terry import Comparisons, fit_batch, win_matrix

MIN_PER_PAIR = 10  # statistics.md: the cold start ends when every pair has this many comparisons
UNIFORM_SHARE = 0.2  # share of the probability spread uniformly over all pairs (the floor is this / K)
PRIOR_TIE = 0.5  # pseudo wins of each side of every pair in the strengths used to allocate
TIE_TOL = 1e-12  # relative: reductions this close to the largest share the target
IPW_NOTE = ("inverse-probability weighted (Hajek): each judgment weighted by 1 / the probability with which its "
            "pair was chosen, estimating the win rate under a uniform choice of pairs (adaptive allocation)")


def pair_codes(n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) of the K pairs a < b, in the order (0, 1), (0, 2), ..., (S - 2, S - 1).

    >>> [(int(a), int(b)) for a, b in zip(*pair_codes(3))]
    [(0, 1), (0, 2), (1, 2)]
    """
    a, b = np.triu_indices(n_systems, 1)
    return a, b


def information_matrix(n: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Fisher information (..., S, S) of the BT strengths: the Laplacian of n p (1 - p),
    n (..., S, S) comparisons per pair (symmetric), theta (..., S) strengths.

    >>> information_matrix(np.array([[0.0, 4.0], [4.0, 0.0]]), np.zeros(2)).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    from scipy.special import expit  # heavy: docs/architecture.md, "Heavy imports"

    diff = theta[..., :, None] - theta[..., None, :]
    q = n * expit(diff) * expit(-diff)
    lap = -q
    idx = np.arange(n.shape[-1])
    lap[..., idx, idx] = q.sum(axis=-1) - q[..., idx, idx]
    return lap


def constrained_covariance(information: np.ndarray) -> np.ndarray:
    """L^+ = (L + 11^T / S)^-1 - 11^T / S: the covariance of mean-0 strengths (the
    comparison graph must be connected)."""
    s = information.shape[-1]
    j = np.full((s, s), 1.0 / s)
    return np.linalg.inv(information + j) - j


def expected_reductions(n: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """(..., K) decrease of trace(L^+) that one more comparison of each pair brings (module
    docstring; pairs in `pair_codes` order)."""
    from scipy.special import expit

    s = n.shape[-1]
    a, b = pair_codes(s)
    cov = constrained_covariance(information_matrix(n, theta))
    cols = cov[..., :, a] - cov[..., :, b]  # (..., S, K): L^+ d per pair
    spread = cov[..., a, a] + cov[..., b, b] - 2 * cov[..., a, b]  # d^T L^+ d
    p = expit(theta[..., a] - theta[..., b])
    w = p * (1 - p)
    return np.asarray(w * (cols**2).sum(axis=-2) / (1 + w * spread))


def allocation_strengths(w: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """BT strengths (B, S) of W + PRIOR_TIE (off the diagonal) for B win matrices (B, S, S):
    finite at any stage, for choosing pairs only."""
    b, s, _ = w.shape
    prior = PRIOR_TIE * (1 - np.eye(s))
    return fit_batch(w + prior, np.zeros((b, s)) if start is None else start.copy())


def _uniform_over_max(score: np.ndarray) -> np.ndarray:
    """Rows of 1 / m on the m entries within TIE_TOL (relative) of the row's largest, else 0."""
    top = score.max(axis=-1, keepdims=True)
    best = score >= top - TIE_TOL * np.abs(top)
    return np.asarray(best / best.sum(axis=-1, keepdims=True))


def pair_probabilities(w: np.ndarray, min_per_pair: int = MIN_PER_PAIR, uniform_share: float = UNIFORM_SHARE,
                       start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(pi (B, K), strengths (B, S)) for B studies' win matrices W (B, S, S): the rule of
    the module docstring. Strengths are NaN rows for studies still in the cold start;
    `start` (B, S) warm-starts the fit (it changes nothing but the speed)."""
    b, s, _ = w.shape
    if s < 3:
        raise ValueError(f"adaptive allocation needs 3 or more systems ({s} given)")
    if min_per_pair < 1:
        raise ValueError(f"min_per_pair must be at least 1 ({min_per_pair} given)")
    if not 0 <= uniform_share <= 1:
        raise ValueError(f"uniform_share must be in [0, 1] ({uniform_share} given)")
    a, c = pair_codes(s)
    n = (w + w.transpose(0, 2, 1))
    counts = n[:, a, c]
    cold = counts.min(axis=1) < min_per_pair
    target = np.empty((b, len(a)))
    theta = np.full((b, s), np.nan)
    target[cold] = _uniform_over_max(-counts[cold])
    active = ~cold
    if active.any():
        theta[active] = allocation_strengths(w[active], None if start is None else np.nan_to_num(start[active]))
        target[active] = _uniform_over_max(expected_reductions(n[active], theta[active]))
    return (1 - uniform_share) * target + uniform_share / len(a), theta


def available_pair_probabilities(w: np.ndarray, n: np.ndarray, available: np.ndarray,
                                 min_per_pair: int = MIN_PER_PAIR, uniform_share: float = UNIFORM_SHARE) -> np.ndarray:
    """pi (K,) for one study's next judgment when only the `available` pairs (K bools: the
    pairs of the item being served) can be shown, with the pairs' counts `n` (S, S)
    given: the engine counts shown assignments, open ones included, so that annotators
    served at once do not all get the same pair. The cold start holds while any pair of the
    study has fewer than `min_per_pair`; the target (fewest shown, or the largest reduction
    at the strengths of W + PRIOR_TIE) and the floor uniform_share / k are taken over the k
    available pairs; 0 elsewhere. With every pair available and n = W + W^T it is
    `pair_probabilities`.

    >>> w = np.zeros((3, 3)); n = np.array([[0, 2, 1], [2, 0, 1], [1, 1, 0]])
    >>> available_pair_probabilities(w, n, np.array([True, True, False]), 10).round(4).tolist()
    [0.1, 0.9, 0.0]
    """
    s = w.shape[0]
    if s < 3:
        raise ValueError(f"adaptive allocation needs 3 or more systems ({s} given)")
    a, c = pair_codes(s)
    avail = np.asarray(available, dtype=bool)
    counts = n[a, c].astype(float)
    if counts.min() < min_per_pair:
        score = -counts
    else:
        score = expected_reductions(n.astype(float), allocation_strengths(w[None].astype(float))[0])
    target = _uniform_over_max(np.where(avail, score, -np.inf)[None])[0]
    return np.where(avail, (1 - uniform_share) * target + uniform_share / max(int(avail.sum()), 1), 0.0)


def next_pair_probabilities(c: Comparisons, min_per_pair: int = MIN_PER_PAIR,
                            uniform_share: float = UNIFORM_SHARE) -> dict[tuple[str, str], float]:
    """{(system a, system b): probability of choosing that pair for the next judgment}
    from the comparisons so far (3+ systems; module docstring).

    >>> c = Comparisons(["x", "y", "z"], np.array([0]), np.array([0]), np.array([1]), np.array([1.0]))
    >>> {k: round(v, 4) for k, v in next_pair_probabilities(c).items()}
    {('x', 'y'): 0.0667, ('x', 'z'): 0.4667, ('y', 'z'): 0.4667}
    """
    pi, _ = pair_probabilities(win_matrix(c)[None], min_per_pair, uniform_share)
    a, b = pair_codes(len(c.systems))
    return {(c.systems[i], c.systems[j]): float(p) for i, j, p in zip(a, b, pi[0])}


def _check_probability(probability: np.ndarray, n: int) -> None:
    if probability.shape != (n,):
        raise ValueError(f"one probability per comparison is needed ({probability.shape[0]} for {n})")
    bad = np.flatnonzero(~((probability > 0) & (probability <= 1)))
    if len(bad):
        k = int(bad[0])
        raise ValueError(f"comparison {k + 1}: probability {probability[k]} is not in (0, 1]")


def ipw_win_rates(c: Comparisons, probability: np.ndarray, resamples: int = RESAMPLES,
                  seed: int = 0) -> list[dict[str, Any]]:
    """Per system (in `systems` order): {"n", "n_clusters", "win_rate" (Hajek-weighted,
    a tie half a win), "ci95", "ci_method", "note", "ci_reason"?}; `probability[i]` = the
    probability with which comparison i's pair was chosen. Interval: the report's item
    bootstrap (`bootstrap.ratio_samples` over items in sorted code order, then
    `bootstrap_interval`), weights fixed at their recorded values.

    >>> c = Comparisons(["x", "y", "z"], np.arange(3), np.array([0, 0, 1]), np.array([1, 2, 2]), np.ones(3))
    >>> [r["win_rate"] for r in ipw_win_rates(c, np.array([0.5, 0.25, 0.25]))]
    [1.0, 0.6666666666666666, 0.0]
    """
    s = len(c.systems)
    probability = np.asarray(probability, dtype=float)
    _check_probability(probability, len(c))
    weight = 1.0 / probability
    _, item = np.unique(c.item, return_inverse=True)
    item = item.ravel()
    n_items = int(item.max()) + 1 if len(item) else 0
    num, den = np.zeros((s, n_items)), np.zeros((s, n_items))
    for side, credit in ((c.first, c.credit), (c.second, 1.0 - c.credit)):
        np.add.at(num, (side, item), weight * credit)
        np.add.at(den, (side, item), weight)
    n = np.bincount(np.concatenate([c.first, c.second]), minlength=s)
    n_clusters = (den > 0).sum(axis=1)
    method = bootstrap_method("items", resamples, seed)
    needed = [k for k in range(s) if interval_refusal(int(n_clusters[k])) is None]
    samples = ratio_samples(num[needed], den[needed], resamples, seed) if needed else np.zeros((0, 0))
    out = []
    for k in range(s):
        total = den[k].sum()
        rate = float(num[k].sum() / total) if total > 0 else None
        row: dict[str, Any] = {"n": int(n[k]), "n_clusters": int(n_clusters[k]), "win_rate": rate, "ci95": None,
                               "ci_method": method, "note": IPW_NOTE}
        if k in needed:
            interval = bootstrap_interval(samples[:, needed.index(k)], rate, int(n_clusters[k]))
            row["ci95"] = interval.ci95
            if interval.ci95 is None:
                row["ci_reason"] = interval.reason
        else:
            row["ci_reason"] = interval_refusal(int(n_clusters[k])) if n[k] else "no comparisons"
        out.append(row)
    return out
