"""Which items humans are offered when evaluators score them all (statistics.md,
"Prediction-powered estimates"): a seeded random share of the items (`human_share`), or
independent draws with recorded probabilities (active inference, `active_inference`).
PPI's guarantee rests on this draw being random, so it is done here, once, from a seed the
study records; the same (items, share, seed) always gives the same subset, whatever order
the items come in.
"""
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from evaluation.tabulate import factorize


def subset_size(n_items: int, share: float) -> int:
    """How many of n_items a share of them is: ceil(share * n_items) (at least one item of a
    non-empty study), with share * n rounded to 9 decimals first so that 0.3 * 10 is 3.

    >>> subset_size(10, 0.3), subset_size(7, 0.5), subset_size(3, 0.01), subset_size(5, 1.0)
    (3, 4, 1, 5)
    """
    if not 0 < share <= 1:
        raise ValueError(f"human_share must be in (0, 1], got {share!r}")
    return min(n_items, math.ceil(round(share * n_items, 9)))


def human_subset(items: Sequence[Any] | np.ndarray, share: float, seed: int) -> list[Any]:
    """The items (sorted, distinct) humans are offered: subset_size(distinct items, share)
    of them, drawn without replacement by numpy's default_rng(seed).permutation over the
    sorted distinct items.

    >>> human_subset(["d", "a", "c", "b", "a"], 0.5, seed=1)
    ['a', 'b']
    >>> human_subset(["a", "b", "c", "d"], 0.5, seed=1) == human_subset(["c", "a", "d", "b"], 0.5, seed=1)
    True
    """
    labels = factorize(np.asarray(list(items), dtype=object))[0] if len(items) else np.asarray([])
    k = subset_size(len(labels), share)
    chosen = np.sort(np.random.default_rng(seed).permutation(len(labels))[:k])
    return [labels[i] for i in chosen.tolist()]


def active_draw(probabilities: Sequence[float] | np.ndarray, seed: int) -> np.ndarray:
    """Which items humans label under active sampling: item i independently with its
    probability pi_i (one uniform draw per item from default_rng(seed), labeled when it is
    below pi_i). Record pi_i with the draw: `active_inference.active_mean` weights by it.

    >>> active_draw([1.0, 0.0, 0.5, 0.5], seed=0).tolist()
    [True, False, True, True]
    """
    pi = np.asarray(probabilities, dtype=float)
    if pi.size and (not np.all(np.isfinite(pi)) or pi.min() < 0 or pi.max() > 1):
        raise ValueError("sampling probabilities must lie in [0, 1]")
    return np.asarray(np.random.default_rng(seed).random(len(pi)) < pi)
