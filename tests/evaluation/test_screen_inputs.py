"""Several outputs on one screen (studies.md; issue 33): the input checks every answer path
will call, and the balanced best-worst tuple design."""
import math
from itertools import combinations

import numpy as np
import pytest

from evaluation.screens.answer_checks import InputError, check_best_worst, check_order, check_retest, check_tuple_size
from evaluation.screens.tuple_design import co_occurrence, default_tuple_count, design_tuples, is_even


@pytest.mark.parametrize("best,worst,message", [
    ("b", "b", "best and worst must be two different outputs (both are 'b')"),
    ("x", "a", "best 'x' is not one of the shown outputs"),
    ("a", None, "worst is missing: pick one of the shown outputs"),
])
def test_best_worst_refusals(best, worst, message):
    with pytest.raises(InputError) as err:
        check_best_worst(best, worst, ["a", "b", "c"])
    assert str(err.value) == message


@pytest.mark.parametrize("order,ties,message", [
    (["a", "b"], False, "the order is partial: it leaves out 'c' (rank every output once)"),
    (["a", "b", "b", "c"], False, "the order repeats 'b' (rank every output once)"),
    (["a", ["b", "c"]], False, "ties are not allowed in this study: list each output on its own"),
    ([["a", "b"], ["a", "c"]], True, "the order repeats 'a' (rank every output once)"),
    (["a", "b", "z"], False, "the order names 'z', which is not one of the shown outputs"),
    ([["a"], []], True, "the order holds an empty group"),
    ("abc", False, "the order must be a non-empty list of outputs, best first"),
    ([], False, "the order must be a non-empty list of outputs, best first"),
])
def test_order_refusals(order, ties, message):
    with pytest.raises(InputError) as err:
        check_order(order, ["a", "b", "c"], ties)
    assert str(err.value) == message


def test_orders_accepted():
    assert check_order(["c", "a", "b"], ["a", "b", "c"]) == [["c"], ["a"], ["b"]]
    assert check_order([["c", "a"], "b"], ["a", "b", "c"], ties=True) == [["c", "a"], ["b"]]


@pytest.mark.parametrize("value", [2, 7, 4.0, True, "4", None])
def test_tuple_size_refusals(value):
    with pytest.raises(InputError) as err:
        check_tuple_size(value)
    assert str(err.value) == f"tuple_size must be a whole number from 3 to 6, got {value!r}"


def test_tuple_sizes_accepted():
    assert [check_tuple_size(k) for k in range(3, 7)] == [3, 4, 5, 6]


@pytest.mark.parametrize("value,message", [
    ({"share": 0}, "retest.share must be above 0 and at most 0.5, got 0"),
    ({"share": 0.51}, "retest.share must be above 0 and at most 0.5, got 0.51"),
    ({"share": -0.1}, "retest.share must be above 0 and at most 0.5, got -0.1"),
    ({"share": "0.1"}, "retest.share must be above 0 and at most 0.5, got '0.1'"),
    ({"share": 0.1, "after": -1}, "retest.after must be a whole number of items, 0 or more, got -1"),
    ({"share": 0.1, "every": 3}, "retest has unknown key(s) 'every' (known: 'share', 'after')"),
    (0.1, 'retest must be an object such as {"share": 0.1, "after": 5}'),
])
def test_retest_refusals(value, message):
    with pytest.raises(InputError) as err:
        check_retest(value)
    assert str(err.value) == message


def test_retest_accepted():
    assert check_retest({"share": 0.5, "after": 0}) == {"share": 0.5, "after": 0}


@pytest.mark.parametrize("n,k", [(n, k) for n in range(4, 13) for k in range(3, min(6, n - 1) + 1)])
def test_designs_are_even(n, k):
    """Every system in r or r+1 tuples, every pair together lambda or lambda+1 times."""
    design = design_tuples(n, k)
    assert len(design) == default_tuple_count(n, k)
    assert all(len(t) == k == len(set(t)) and list(t) == sorted(t) for t in design)
    c = co_occurrence(design, n)
    # the co-occurrence matrix counted independently, pair by pair
    pairs = {p: sum(set(p) <= set(t) for t in design) for p in combinations(range(n), 2)}
    assert all(c[a, b] == m for (a, b), m in pairs.items())
    assert max(pairs.values()) - min(pairs.values()) <= 1 and is_even(c)


@pytest.mark.parametrize("n,k,b,lam", [(7, 3, 7, 1), (7, 4, 7, 2), (6, 3, 10, 2), (9, 3, 12, 1), (8, 4, 14, 3),
                                       (13, 4, 13, 1), (11, 5, 11, 2)])
def test_bibd_found_where_one_exists(n, k, b, lam):
    """Known BIBDs (Fano plane, its complement, the affine plane of order 3, the projective
    plane of order 3, ...): b = lambda n (n - 1) / (k (k - 1)), every pair exactly lambda."""
    assert b == lam * n * (n - 1) // (k * (k - 1))
    design = design_tuples(n, k)
    assert len(design) == b
    c = co_occurrence(design, n)
    assert set(c[np.triu_indices(n, 1)].tolist()) == {lam}
    assert set(np.diag(c).tolist()) == {b * k // n}


def test_design_is_deterministic_and_small_cases():
    assert design_tuples(8, 3) == design_tuples(8, 3)
    assert design_tuples(4, 4) == [(0, 1, 2, 3)] and design_tuples(3, 5) == [(0, 1, 2)]
    assert default_tuple_count(8, 3) == 16 and math.comb(8, 3) == 56  # the complete design is too long
    with pytest.raises(InputError):
        design_tuples(8, 7)
