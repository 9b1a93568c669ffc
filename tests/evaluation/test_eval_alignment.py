"""Majority labels, metric alignment, McNemar/Holm, bootstrap, correlations, position bias."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from evaluation.alignment import (
    compare_metrics, holm, mcnemar_exact, metric_alignment, metric_pick, win_rate,
)
from evaluation.bootstrap import bootstrap_ci, bootstrap_mean_ci, resample_blocks
from evaluation.correlation import correlations, system_correlations
from evaluation.majority import majority_labels
from evaluation.position_bias import position_bias, position_bias_by


def test_majority_labels_strict_with_ties():
    units = ["i1", "i1", "i1", "i2", "i2", "i3", "i3", "i3", "i4"]
    values = ["A", "A", "B", "A", "B", "B", "B", "B", None]
    assert majority_labels(units, values) == {"i1": "A", "i2": None, "i3": "B"}


def test_metric_pick():
    assert metric_pick({"A": 0.3, "B": 0.1}) == "A"
    assert metric_pick({"A": 0.2, "B": 0.2}) == "tie"
    assert metric_pick({"A": 0.2}) is None
    assert metric_pick({"A": 0.2, "B": float("nan")}) is None


def test_metric_alignment_hand_example():
    """Items 1-5 have a majority, item 6 has none, item 7 has no pick.
    Picks vs majority: 1 agree, 2 agree, 3 tie, 4 wrong, 5 tie -> agree 2, ties 2, n 5:
    alignment = (2 + 0.5*2)/5 = 0.6; strict = 2/5 = 0.4."""
    majority = {1: "A", 2: "B", 3: "A", 4: "A", 5: "B", 6: None, 7: "A"}
    picks = {1: "A", 2: "B", 3: "tie", 4: "B", 5: "tie", 6: "A"}
    result = metric_alignment(majority, picks)
    assert {k: result[k] for k in ("alignment", "alignment_strict", "agree", "ties", "n")} == {
        "alignment": 0.6, "alignment_strict": 0.4, "agree": 2, "ties": 2, "n": 5}
    lo, hi = result["ci95"]
    assert 0.0 <= lo <= 0.6 <= hi <= 1.0
    assert metric_alignment(majority, picks) == result  # seeded: identical on a rerun
    assert metric_alignment({1: None}, {1: "A"}) == {
        "alignment": None, "alignment_strict": None, "agree": 0, "ties": 0, "n": 0, "ci95": None}


def test_bootstrap_ci_matches_a_plain_loop():
    """Same seed, same resamples: percentile CI equals numpy on a hand-written loop."""
    x = np.arange(10.0)
    rng = np.random.default_rng(0)
    means = [x[rng.integers(0, 10, 10)].mean() for _ in range(500)]
    expected = np.percentile(means, [2.5, 97.5]).tolist()
    assert bootstrap_ci(lambda idx: float(x[idx].mean()), 10, resamples=500) == expected
    assert bootstrap_ci(lambda idx: 1.0, 0) is None
    assert bootstrap_ci(lambda idx: None, 5) is None


def test_row_block_bootstrap_equals_the_plain_loop():
    """The block path (rows=True) draws the same resamples as one index vector at a time,
    whatever the block size."""
    x = np.array([1.0, 0.5, 0.0, 1.0, 1.0, 0.0, 0.5, 1.0, 0.0, 1.0, 1.0])
    rng = np.random.default_rng(0)
    means = [x[rng.integers(0, 11, 11)].mean() for _ in range(2000)]
    expected = np.percentile(means, [2.5, 97.5]).tolist()
    assert bootstrap_ci(lambda idx: x[idx].mean(axis=1), 11, rows=True) == pytest.approx(expected, abs=1e-12)
    blocks = [b.shape[0] for b in resample_blocks(11, 2000, 0, block=7)]
    assert sum(blocks) == 2000 and max(blocks) == 7
    stacked = np.vstack(list(resample_blocks(11, 50, 0, block=7)))
    assert (stacked == np.vstack(list(resample_blocks(11, 50, 0)))).all()


def test_mean_bootstrap_draws_value_counts():
    """bootstrap_mean_ci draws how often each distinct value is picked (multinomial), the
    same distribution as index resampling: here the exact computation, and on 400 items the
    interval of index resampling to within a few thousandths."""
    x = np.array([1.0, 0.5, 0.0, 1.0, 1.0, 0.0, 0.5, 1.0, 0.0, 1.0, 1.0])
    counts = np.random.default_rng(0).multinomial(11, [3 / 11, 2 / 11, 6 / 11], size=2000)
    expected = np.percentile(counts @ np.array([0.0, 0.5, 1.0]) / 11, [2.5, 97.5]).tolist()
    assert bootstrap_mean_ci(x) == expected
    big = np.random.default_rng(3).choice([0.0, 0.5, 1.0], size=400, p=[0.3, 0.1, 0.6])
    by_index = bootstrap_ci(lambda idx: big[idx].mean(axis=1), 400, resamples=20000, rows=True)
    assert bootstrap_mean_ci(big, resamples=20000) == pytest.approx(by_index, abs=0.006)
    assert bootstrap_mean_ci([1.0] * 5) == [1.0, 1.0]
    assert bootstrap_mean_ci([]) is None


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 30), st.integers(0, 30))
def test_mcnemar_matches_statsmodels(b, c):
    expected = mcnemar([[5, b], [c, 7]], exact=True).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=20, deadline=None)  # statsmodels' multipletests is slow per call
@given(st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_holm_matches_statsmodels(pvalues):
    expected = multipletests(pvalues, method="holm")[1]
    assert holm(pvalues) == pytest.approx(list(expected), abs=1e-12)


def test_compare_metrics_and_win_rate():
    """m1 agrees on items 1-4, m2 only on item 1 (item 2 is a tie for m2, which counts
    as disagreement): a_only = 3, b_only = 0, p = 2 * 0.5^3 = 0.25. m1 vs m3 is the same
    (p = 0.25), m2 vs m3 has p = 1. Holm over the sorted (.25, .25, 1): 3 * .25 = .75,
    max(.75, 2 * .25) = .75, max(.75, 1 * 1) = 1."""
    majority = {1: "A", 2: "A", 3: "B", 4: "B", 5: None}
    picks = {"m1": {1: "A", 2: "A", 3: "B", 4: "B"},
             "m2": {1: "A", 2: "tie", 3: "A", 4: "A"},
             "m3": {1: "A", 2: "B", 3: "A", 4: "A"}}
    rows = {(r["a"], r["b"]): r for r in compare_metrics(majority, picks)}
    assert rows[("m1", "m2")]["p_value"] == pytest.approx(0.25)
    assert rows[("m1", "m2")]["p_holm"] == pytest.approx(0.75)
    assert rows[("m1", "m3")]["p_holm"] == pytest.approx(0.75)
    assert rows[("m2", "m3")]["p_value"] == 1.0 and rows[("m2", "m3")]["p_holm"] == 1.0
    assert win_rate(majority) == {"A": 0.5, "B": 0.5}
    assert win_rate({1: None}) == {}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=3, max_size=30))
def test_correlations_match_scipy(pairs):
    x = [p[0] for p in pairs]
    y = [p[1] for p in pairs]
    result = correlations(x, y, resamples=50)
    if len(set(x)) == 1 or len(set(y)) == 1:
        assert result["pearson"] == {"r": None, "p_value": None, "ci95": None}
        return
    for method, test in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                         ("kendall", stats.kendalltau)):
        expected = test(x, y)
        assert result[method]["r"] == pytest.approx(expected.statistic, abs=1e-9)
        assert result[method]["p_value"] == pytest.approx(expected.pvalue, abs=1e-9)


def test_correlation_ci_matches_scipy_on_the_same_resamples():
    """The vectorized bootstrap gives the CI a plain scipy loop gives on the same indices."""
    rng = np.random.default_rng(7)
    x = rng.integers(1, 6, 25).astype(float)
    y = x + rng.integers(0, 3, 25)
    result = correlations(x, y, resamples=300, seed=0)
    for method, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                       ("kendall", stats.kendalltau)):
        def stat(idx, fn=fn):
            a, b = x[idx], y[idx]
            return None if len(set(a)) == 1 or len(set(b)) == 1 else float(fn(a, b).statistic)
        assert result[method]["ci95"] == pytest.approx(
            bootstrap_ci(stat, 25, resamples=300, seed=0), abs=1e-9)


def test_system_correlations_and_constant_input():
    """System means: s1 (1, 2), s2 (2, 4), s3 (3, 5) -> Pearson of (1,2,3) vs (2,4,5)."""
    result = system_correlations(["s1", "s1", "s2", "s3"], [0, 2, 2, 3], [1, 3, 4, 5],
                                 resamples=20)
    assert result["n"] == 3 and result["systems"] == ["s1", "s2", "s3"]
    assert result["pearson"]["r"] == pytest.approx(stats.pearsonr([1, 2, 3], [2, 4, 5])[0])
    assert correlations([1, 2, 3], [5, 5, 5])["kendall"]["r"] is None
    assert correlations([1, None], [2, 3])["n"] == 1


def test_position_bias_hand_example():
    """8 of 10 chose the first-shown option (2 ties dropped): two-sided binomial
    p = 2 * P(X >= 8 | n=10, 0.5) = 2 * 56/1024 = 0.109375."""
    flags = [True] * 8 + [False] * 2 + [None, None]
    assert position_bias(flags) == {"first_shown_rate": 0.8, "n": 10, "p_value": 0.109375}
    assert position_bias([]) == {"first_shown_rate": None, "n": 0, "p_value": None}
    assert position_bias_by(["a", "b"], [True, False])["a"]["first_shown_rate"] == 1.0
