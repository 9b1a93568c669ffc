"""Strict majority label per unit (statistics.md, "Majority label")."""
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.tabulate import tabulate, top_three


@dataclass(frozen=True)
class Majority:
    """labels: {unit: majority value or None} for every unit with a vote; no_majority:
    units whose top count is shared; too_few_votes: units with fewer than min_votes
    votes (no majority either); votes: {number of votes: units with a majority}."""

    labels: dict[Any, Any]
    no_majority: int
    too_few_votes: int
    votes: dict[int, int]


@dataclass(frozen=True)
class MajorityCodes:
    """Majority as arrays (no Python loop per unit): the units with a vote (`units`,
    sorted labels) and each one's majority as an index into `value_labels`, -1 for none."""

    units: np.ndarray
    value_labels: np.ndarray
    value: np.ndarray
    no_majority: int
    too_few_votes: int
    votes: dict[int, int]


def majority_codes(units: Sequence[Any] | np.ndarray, values: Sequence[Any] | np.ndarray,
                   min_votes: int = 2) -> MajorityCodes:
    """`majority` as arrays: the one computation behind it."""
    c = tabulate(units, np.arange(len(units)), values, check_coders=False)  # one vote, one coder
    v1, c1, _, c2, _ = top_three(c)
    voted = c.m > 0
    few = voted & (c.m < min_votes)
    won = voted & ~few & (c1 > c2)
    n = np.bincount(c.m[won])
    m = np.flatnonzero(n)
    return MajorityCodes(c.unit_labels[voted], c.value_labels, np.where(won, v1, -1)[voted],
                         int(np.count_nonzero(voted & ~few & ~won)), int(np.count_nonzero(few)),
                         dict(zip(m.tolist(), n[m].tolist())))


def majority(units: Sequence[Any] | np.ndarray, values: Sequence[Any] | np.ndarray, min_votes: int = 2) -> Majority:
    """The value chosen by strictly more votes than any other, per unit, when the unit has
    at least `min_votes` votes. Missing values (None, NaN, "") are not votes; a unit with
    only missing values is left out.

    >>> m = majority(["i1", "i1", "i1", "i2", "i2", "i3"], ["a", "a", "b", "a", "b", "a"])
    >>> m.labels, m.no_majority, m.too_few_votes, m.votes
    ({'i1': 'a', 'i2': None, 'i3': None}, 1, 1, {3: 1})
    """
    r = majority_codes(units, values, min_votes)
    labels = r.value_labels.tolist() + [None]  # index -1: no majority
    return Majority(dict(zip(r.units.tolist(), [labels[v] for v in r.value.tolist()])),
                    r.no_majority, r.too_few_votes, r.votes)


def majority_labels(units: Sequence[Any] | np.ndarray, values: Sequence[Any] | np.ndarray,
                    min_votes: int = 1) -> dict[Any, Any]:
    """{unit: value chosen by strictly more judgments than any other, else None}.

    >>> majority_labels([1, 1, 2], ["a", "a", "b"])
    {1: 'a', 2: 'b'}
    """
    return majority(units, values, min_votes).labels
