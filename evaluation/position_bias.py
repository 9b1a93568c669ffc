"""Position bias of two-option choices (statistics.md, "Position bias").

The unit of the test is one screen (item, annotator): the choices on one screen share one
display order and are not independent, so a screen casts one vote: "first" when most of
its non-tie two-option choices picked the option shown first, "second" when most picked
the other, none when they split evenly.

Screens cluster in annotators (a personal habit of picking the first option makes one
annotator's screens alike), so the study-level test is over annotators (statistics.md,
"Clustered data"): a two-sided one-sample t-test of each annotator's share of "first"
votes against 0.5, over the annotators with at least MIN_SCREENS voting screens, n =
annotators (`annotator_test`). Each annotator's own share gets a two-sided exact binomial
test against 0.5, Holm-adjusted over the annotators (`per_annotator`).
"""
from collections.abc import Sequence
from typing import Any

import numpy as np

from evaluation.alignment import holm
from evaluation.intervals import t_interval

MIN_SCREENS = 5  # an annotator enters the study-level test with this many voting screens


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
    from scipy.stats import binom

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


def annotator_test(firsts: np.ndarray, votes: np.ndarray, min_screens: int = MIN_SCREENS) -> dict[str, Any]:
    """The study-level position-bias test over annotators: {"first_shown_rate" (mean of the
    tested annotators' shares), "n" (annotators tested), "p_value" (one-sample t-test
    against 0.5, two-sided), "ci95" (t interval), "sd", "n_screens" (their voting screens),
    "reason" (why p or the interval is missing, else absent)}. `firsts` / `votes`: each
    annotator's "first" votes and voting screens.

    >>> r = annotator_test(np.array([4, 6, 5, 7, 3, 1]), np.array([10, 10, 10, 10, 10, 4]))
    >>> r["n"], round(r["first_shown_rate"], 3), round(r["p_value"], 6), r["n_screens"]
    (5, 0.5, 1.0, 50)
    """
    firsts, votes = np.asarray(firsts, dtype=float), np.asarray(votes, dtype=np.int64)
    tested = votes >= min_screens
    shares = firsts[tested] / votes[tested]
    result = t_interval(shares, null=0.5)
    out: dict[str, Any] = {"first_shown_rate": result.mean, "n": int(result.n), "p_value": result.p_value,
                           "ci95": result.ci95, "sd": result.sd, "n_screens": int(votes[tested].sum())}
    if result.n < 2:
        out["reason"] = f"fewer than 2 annotators with >= {min_screens} voting screens"
    elif result.reason:
        out["reason"] = result.reason
    return out


def per_annotator(firsts: np.ndarray, votes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(exact binomial p of each annotator's share of "first" votes against 0.5, the same
    Holm-adjusted over the annotators), for annotators with at least one vote.

    >>> raw, adjusted = per_annotator(np.array([10, 5, 0]), np.array([10, 10, 10]))
    >>> [round(v, 6) for v in raw.tolist()], [round(v, 6) for v in adjusted.tolist()]
    ([0.001953, 1.0, 0.001953], [0.005859, 1.0, 0.005859])
    """
    raw = binomial_p_half(np.asarray(firsts), np.asarray(votes))
    return raw, np.array(holm(raw.tolist()) if len(raw) else [], dtype=float)
