"""Position bias of two-option choices (statistics.md, "Position bias").

The unit of the test is one screen (item, annotator): the choices on one screen share one
display order and are not independent, so a screen casts one vote: "first" when most of
its non-tie two-option choices picked the option shown first, "second" when most picked
the other, none when they split evenly. The share of "first" votes is tested against 0.5
with a two-sided exact binomial test.
"""
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import binom


def position_bias(chose_first: Sequence[bool | None] | np.ndarray) -> dict[str, Any]:
    """{"first_shown_rate", "n", "p_value"}: two-sided exact binomial test against 0.5.

    Entries that are None (ties, or no order recorded) are left out.

    >>> position_bias([True, True, True, None])
    {'first_shown_rate': 1.0, 'n': 3, 'p_value': 0.25}
    """
    if isinstance(chose_first, np.ndarray) and chose_first.dtype == bool:  # no None: count in C
        n, k = len(chose_first), int(np.count_nonzero(chose_first))
    else:
        flags = [bool(x) for x in chose_first if x is not None]
        n, k = len(flags), sum(flags)
    if n == 0:
        return {"first_shown_rate": None, "n": 0, "p_value": None}
    return {"first_shown_rate": k / n, "n": n, "p_value": float(binomial_p_half(np.array([k]), np.array([n]))[0])}


def binomial_p_half(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Two-sided exact binomial p-values of k successes in n trials against 0.5, for arrays
    at once: the distribution is symmetric, so p = min(1, 2 P(X <= min(k, n - k))), exactly 1
    when k is n / 2 or next to it (scipy's binomtest to 1e-14 relative:
    test_binomial_p_half_is_binomtest).

    >>> binomial_p_half(np.array([3, 2]), np.array([3, 4])).tolist()
    [0.25, 1.0]
    """
    k, n = np.asarray(k, dtype=np.int64), np.asarray(n, dtype=np.int64)
    return np.where(np.abs(2 * k - n) <= 1, 1.0, np.minimum(1.0, 2.0 * binom.cdf(np.minimum(k, n - k), n, 0.5)))


def screen_votes(screens: np.ndarray, chose_first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(screen ids that voted, True where the vote is "first"): one vote per screen from
    its choices (chose_first per choice); screens whose choices split evenly do not vote.

    >>> ids, first = screen_votes(np.array([1, 1, 1, 2, 2, 3]), np.array([1, 1, 0, 1, 0, 0], bool))
    >>> ids.tolist(), first.tolist()
    ([1, 3], [True, False])
    """
    ids, inverse = np.unique(np.asarray(screens), return_inverse=True)
    total = np.bincount(inverse.ravel(), minlength=len(ids))
    first = np.bincount(inverse.ravel(), weights=np.asarray(chose_first, dtype=float), minlength=len(ids))
    votes = 2 * first != total
    return ids[votes], (2 * first > total)[votes]
