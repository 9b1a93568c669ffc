"""Agreement statistics against published worked examples and reference packages."""
import math
import tracemalloc

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from evaluation.agreement import (
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    leave_one_out_agreement,
    pairwise_cohen_kappa,
    percent_agreement,
)
from tests.evaluation.cells import long_from_unit_rows

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the 4 coders x 12
# units example with missing data ("." = no value), typed in from the paper's table.
K2011 = {
    "A": "1 2 3 3 2 1 4 1 2 . . .",
    "B": "1 2 3 3 2 2 4 1 2 5 . 3",
    "C": ". 3 3 3 2 3 4 2 2 5 1 .",
    "D": "1 2 3 3 2 4 4 1 2 5 1 .",
}


def long_format(table):
    units, coders, values = [], [], []
    for coder, row in table.items():
        for unit, cell in enumerate(row.split(), start=1):
            if cell != ".":
                units.append(unit)
                coders.append(coder)
                values.append(int(cell))
    return units, coders, values


@pytest.mark.parametrize("level,published", [
    ("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797),
])
def test_krippendorff_2011_published_values(level, published):
    result = krippendorff_alpha(*long_format(K2011), level=level)
    assert round(result.value, 3) == published
    assert result.reason is None
    # Unit 12 has a single value: 11 pairable units holding 40 values.
    assert (result.n_units, result.n_values) == (11, 40)


def test_krippendorff_2011_exact_nominal():
    """Nominal: n = 40, sum_c n_c^2 = 9^2+10^2+13^2+5^2+3^2... computed in the paper as
    alpha = 1 - (n-1) * D_o / D_e = 1 - 39 * 10/3 ... = 0.743421...; the package agrees."""
    u, c, v = long_format(K2011)
    data = np.full((4, 12), np.nan)
    for unit, coder, value in zip(u, c, v):
        data["ABCD".index(coder), unit - 1] = value
    for level in ("nominal", "ordinal", "interval", "ratio"):
        ours = krippendorff_alpha(u, c, v, level).value
        assert ours == pytest.approx(krippendorff.alpha(data, level_of_measurement=level), abs=1e-12)


def test_fleiss_kappa_wikipedia_example():
    """Wikipedia 'Fleiss' kappa' worked example: 10 subjects, 14 raters, 5 categories.
    P-bar = 0.378, P_e = 0.213, kappa = (0.378 - 0.213) / (1 - 0.213) = 0.210."""
    table = [
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ]
    units, coders, values = [], [], []
    for subject, row in enumerate(table):
        rater = 0
        for category, count in enumerate(row, start=1):
            for _ in range(count):
                units.append(subject)
                coders.append(rater)
                values.append(category)
                rater += 1
    kappa, n_units = fleiss_kappa(units, coders, values)
    assert round(kappa, 3) == 0.210
    assert n_units == 10
    assert kappa == pytest.approx(sm_fleiss_kappa(np.array(table)), abs=1e-12)


def test_cohen_kappa_textbook():
    """Wikipedia 'Cohen's kappa' example: 50 proposals, yes/yes 20, yes/no 5, no/yes 10,
    no/no 15. p_o = 35/50 = 0.7; p_yes = 0.5*0.6 = 0.3, p_no = 0.5*0.4 = 0.2, p_e = 0.5;
    kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4."""
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-12)


def test_percent_agreement_hand_example():
    """Unit 1: values a,a,b -> agreeing ordered pairs 2*1 = 2 of 3*2 = 6 -> 1/3.
    Unit 2: a,a -> 1. Unit 3: one value, not pairable. Mean = (1/3 + 1) / 2 = 2/3."""
    units = [1, 1, 1, 2, 2, 3]
    coders = ["x", "y", "z", "x", "y", "x"]
    values = ["a", "a", "b", "a", "a", "b"]
    assert percent_agreement(units, coders, values) == pytest.approx(2 / 3)


def test_leave_one_out_hand_example():
    """Unit 1: x=a, y=a, z=b. For x the others (a, b) tie -> not counted; y likewise;
    z: others a, a -> majority a != b -> 0. Unit 2: x=a, y=a, z=a: everyone agrees.
    Unit 3: x=a, y=b: the single other value is the majority -> both disagree.
    x: unit 2 (1), unit 3 (0) -> 1/2. y: same 1/2. z: unit 1 (0), unit 2 (1) -> 1/2."""
    units = [1, 1, 1, 2, 2, 2, 3, 3]
    coders = ["x", "y", "z", "x", "y", "z", "x", "y"]
    values = ["a", "a", "b", "a", "a", "a", "a", "b"]
    assert leave_one_out_agreement(units, coders, values) == {"x": 0.5, "y": 0.5, "z": 0.5}
    assert leave_one_out_agreement([1], ["x"], ["a"]) == {"x": None}


def test_pairwise_kappa_min_shared_and_values():
    rng = np.random.default_rng(3)
    units, coders, values = [], [], []
    for unit in range(30):
        for coder in ("ann", "bob", "cy"):
            if coder == "cy" and unit >= 5:  # cy shares only 5 units with the others
                continue
            units.append(unit)
            coders.append(coder)
            values.append(int(rng.integers(0, 3)))
    result = pairwise_cohen_kappa(units, coders, values, min_shared=10)
    assert set(result) == {("ann", "bob")}
    a = [v for u, c, v in zip(units, coders, values) if c == "ann"]
    b = [v for u, c, v in zip(units, coders, values) if c == "bob"]
    assert result[("ann", "bob")] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


@pytest.mark.parametrize("units,coders,values,reason", [
    ([1], ["a"], [3], "no unit has two or more values"),
    ([], [], [], "no unit has two or more values"),
    ([1, 1, 2, 2], ["a", "b", "a", "b"], [4, 4, 4, 4], "identical"),
    ([1, 2, 3], ["a", "a", "a"], [1, 2, 3], "no unit has two or more values"),
])
def test_alpha_undefined_cases(units, coders, values, reason):
    for level in ("nominal", "ordinal", "interval", "ratio"):
        result = krippendorff_alpha(units, coders, values, level)
        assert result.value is None and reason in result.reason


def test_other_statistics_undefined_cases():
    assert fleiss_kappa([1], ["a"], ["x"]) == (None, 0)
    assert fleiss_kappa([1, 1], ["a", "b"], ["x", "x"]) == (None, 1)  # P_e = 1
    assert percent_agreement([1], ["a"], ["x"]) is None
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["x", "x"], ["x", "x"]) is None


def test_bad_input_raises_clear_errors():
    with pytest.raises(ValueError, match="more than one value for the same unit"):
        krippendorff_alpha([1, 1], ["a", "a"], [1, 2])
    with pytest.raises(ValueError, match="level must be one of"):
        krippendorff_alpha([1], ["a"], [1], level="cardinal")
    with pytest.raises(ValueError, match="non-negative"):
        krippendorff_alpha([1, 1], ["a", "b"], [-1, 2], level="ratio")
    with pytest.raises(ValueError, match="'x' is not a number"):
        krippendorff_alpha([1, 1], ["a", "b"], ["x", "y"], level="interval")
    with pytest.raises(ValueError, match="differ in length"):
        krippendorff_alpha([1, 1], ["a"], [1, 2])


def test_missing_values_are_ignored():
    """None / NaN values are missing, exactly as if the judgment were absent."""
    u, c, v = long_format(K2011)
    with_missing = (u + [12, 12], c + ["A", "C"], v + [None, float("nan")])
    assert krippendorff_alpha(*with_missing, level="interval").value == pytest.approx(
        krippendorff_alpha(u, c, v, level="interval").value)


def test_interval_alpha_memory_many_distinct_values():
    """5 coders x 20,000 units with 1,000 distinct continuous values stays small."""
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 1000, 20_000)
    values = np.clip(truth[None, :] + rng.integers(-30, 31, (5, 20_000)), 0, 999) / 10.0
    units = np.tile(np.arange(20_000), 5)
    coders = np.repeat(np.arange(5), 20_000)
    tracemalloc.start()
    result = krippendorff_alpha(units, coders, values.ravel(), "interval")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert 0.9 < result.value < 1.0
    assert peak < 60 * 2**20


def _matrix_strategy():
    return st.integers(2, 5).flatmap(lambda coders: st.integers(2, 12).flatmap(
        lambda units: st.lists(
            st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=units, max_size=units),
            min_size=coders, max_size=coders)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_matrix_strategy(), st.sampled_from(["nominal", "ordinal", "interval", "ratio"]))
def test_alpha_matches_krippendorff_package(matrix, level):
    data = np.array([[np.nan if x is None else x for x in row] for row in matrix], float)
    units, coders, values = [], [], []
    for coder, row in enumerate(matrix):
        for unit, x in enumerate(row):
            if x is not None:
                units.append(unit)
                coders.append(f"c{coder}")
                values.append(x)
    ours = krippendorff_alpha(units, coders, values, level)
    pairable = [col for col in data.T if np.sum(~np.isnan(col)) >= 2]
    pooled = np.concatenate(pairable) if pairable else np.array([])
    assume(len(np.unique(pooled[~np.isnan(pooled)])) >= 2)
    assert ours.value == pytest.approx(
        krippendorff.alpha(data, level_of_measurement=level), abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 6), st.lists(st.lists(st.integers(0, 3), min_size=3, max_size=3),
                                   min_size=2, max_size=15))
def test_fleiss_matches_statsmodels(raters, rows):
    """Every unit gets `raters` ratings; statsmodels takes the units x categories table."""
    units, coders, values, table = [], [], [], []
    for unit, seed in enumerate(rows):
        labels = [(seed[r % 3] + r) % 4 for r in range(raters)]
        table.append([labels.count(k) for k in range(4)])
        units += [unit] * raters
        coders += list(range(raters))
        values += labels
    kappa, n_units = fleiss_kappa(units, coders, values)
    expected = sm_fleiss_kappa(np.array(table))
    if math.isnan(expected):
        assert kappa is None
    else:
        assert kappa == pytest.approx(expected, abs=1e-9)
        assert n_units == len(rows)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=40))
def test_cohen_matches_sklearn(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    ours = cohen_kappa(a, b)
    if len(set(a) | set(b)) == 1:
        assert ours is None
    else:
        assert ours == pytest.approx(cohen_kappa_score(a, b), abs=1e-9)


def _brute_majority(values):
    from collections import Counter
    counts = Counter(values).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), st.sampled_from("abc")), min_size=4, max_size=4),
                min_size=1, max_size=10))
def test_leave_one_out_and_majority_match_brute_force(rows):
    """rows[unit][coder]: compare against direct Counter-based definitions."""
    from evaluation.majority import majority_labels

    units, coders, values = long_from_unit_rows(rows)
    expected = {}
    for coder in set(coders):
        hits = []
        for row in rows:
            if row[coder] is None:
                continue
            others = [x for c, x in enumerate(row) if c != coder and x is not None]
            majority = _brute_majority(others)
            if majority is not None:
                hits.append(row[coder] == majority)
        expected[coder] = sum(hits) / len(hits) if hits else None
    assert leave_one_out_agreement(units, coders, values) == pytest.approx(expected)
    present = {u: [x for x in row if x is not None] for u, row in enumerate(rows)}
    assert majority_labels(units, values) == {
        u: _brute_majority(xs) for u, xs in present.items() if xs}


def test_distinct_sorted_equals_numpy_unique():
    from evaluation.tabulate import distinct_sorted

    keys = np.random.default_rng(1).integers(0, 50, 500) * 60 + 7
    assert distinct_sorted(keys).tolist() == np.unique(keys).tolist()
    assert distinct_sorted(np.array([3.0, 1.0, 3.0])).tolist() == [1.0, 3.0]
    assert distinct_sorted(np.zeros(0, np.int64)).size == 0
