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


def majority(units: Sequence[Any] | np.ndarray, values: Sequence[Any] | np.ndarray, min_votes: int = 2) -> Majority:
    """The value chosen by strictly more votes than any other, per unit, when the unit has
    at least `min_votes` votes. Missing values (None, NaN, "") are not votes; a unit with
    only missing values is left out.

    >>> m = majority(["i1", "i1", "i1", "i2", "i2", "i3"], ["a", "a", "b", "a", "b", "a"])
    >>> m.labels, m.no_majority, m.too_few_votes, m.votes
    ({'i1': 'a', 'i2': None, 'i3': None}, 1, 1, {3: 1})
    """
    c = tabulate(units, np.arange(len(units)), values)
    v1, c1, _, c2, _ = top_three(c)
    labels = c.value_labels.tolist()
    out: dict[Any, Any] = {}
    no_majority = too_few = 0
    votes: dict[int, int] = {}
    for unit, v, first, second, m in zip(c.unit_labels.tolist(), v1.tolist(), c1.tolist(), c2.tolist(),
                                         c.m.tolist()):
        if m == 0:
            continue
        if m < min_votes:
            out[unit] = None
            too_few += 1
        elif first > second:
            out[unit] = labels[v]
            votes[m] = votes.get(m, 0) + 1
        else:
            out[unit] = None
            no_majority += 1
    return Majority(out, no_majority, too_few, dict(sorted(votes.items())))


def majority_labels(units: Sequence[Any] | np.ndarray, values: Sequence[Any] | np.ndarray,
                    min_votes: int = 1) -> dict[Any, Any]:
    """{unit: value chosen by strictly more judgments than any other, else None}.

    >>> majority_labels([1, 1, 2], ["a", "a", "b"])
    {1: 'a', 2: 'b'}
    """
    return majority(units, values, min_votes).labels
