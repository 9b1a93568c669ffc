"""Majority labels, metric alignment, McNemar/Holm, bootstrap, correlations, position bias."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evaluation.alignment import (
    compare_metrics,
    holm,
    mcnemar_exact,
    metric_alignment,
    metric_pick,
    win_rate,
)
from evaluation.bootstrap import bootstrap_ci, bootstrap_interval, bootstrap_weights, resample_blocks
from evaluation.correlation import correlations, system_correlations
from evaluation.majority import majority_labels
from evaluation.position_bias import position_bias, screen_votes
from evaluation.rank_bootstrap import draw_counts


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
    # Wilson score intervals (statsmodels) at x = 3 (half-credit) and x = 2 (strict) of 5.
    assert result["ci95"] == pytest.approx(list(proportion_confint(3, 5, method="wilson")), abs=1e-12)
    assert result["ci95_strict"] == pytest.approx(list(proportion_confint(2, 5, method="wilson")), abs=1e-12)
    assert metric_alignment({1: None}, {1: "A"}) == {
        "alignment": None, "alignment_strict": None, "agree": 0, "ties": 0, "n": 0, "ci95": None, "ci95_strict": None,
        "ci_method": "Wilson score interval over items", "n_clusters": 0, "ci_reason": "fewer than 5 clusters (0)"}
    four = metric_alignment({k: "A" for k in range(4)}, {k: "A" for k in range(4)})  # no interval below 5 items
    assert (four["alignment"], four["ci95"], four["ci_reason"]) == (1.0, None, "fewer than 5 clusters (4)")


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


def test_bootstrap_weights_are_the_unit_bootstrap():
    """Few profiles: the rows are multinomial(n, shares) drawn with default_rng(seed). Many:
    the rows count n uniform index draws per profile (here 3 units, 1 each)."""
    rows = np.vstack(list(bootstrap_weights([60, 30, 9], 50)))
    expected = np.random.default_rng(0).multinomial(99, np.array([60, 30, 9]) / 99, size=50)
    assert (rows == expected).all() and (rows.sum(axis=1) == 99).all()
    rows = np.vstack(list(bootstrap_weights([1, 1, 1], 40, seed=3)))
    draws = np.random.default_rng(3).integers(0, 3, (40, 3), dtype=np.uint32)
    counts = np.array([np.bincount(idx, minlength=3) for idx in draws])
    assert (rows == counts).all()


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
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=10, max_size=30))
def test_correlations_match_scipy(pairs):
    """n >= 10: coefficients and p-values are scipy's."""
    x = [p[0] for p in pairs]
    y = [p[1] for p in pairs]
    result = correlations(x, y, resamples=50)
    if len(set(x)) == 1 or len(set(y)) == 1:
        assert {k: result["pearson"][k] for k in ("r", "p_value", "ci95")} == {"r": None, "p_value": None, "ci95": None}
        return
    for method, test in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                         ("kendall", stats.kendalltau)):
        expected = test(x, y)
        assert result[method]["r"] == pytest.approx(expected.statistic, abs=1e-9)
        assert result[method]["p_value"] == pytest.approx(expected.pvalue, abs=1e-9)


@pytest.mark.parametrize("x, y", [
    ([1, 2, 3], [10, 20, 30]),  # perfectly ranked: every coefficient 1, p = 2/3! = 1/3
    ([1, 2, 3, 4], [2, 1, 4, 3]),
    ([1, 1, 2, 3, 5], [3, 1, 2, 2, 6]),  # ties on both sides (the enumerated path)
    ([0.5, 0.1, 0.9, 0.3, 0.7, 0.2], [1, 0, 1, 1, 0, 1]),
    ([3, 1, 4, 1, 5, 9, 2], [2, 7, 1, 8, 2, 8, 1]),
])
def test_exact_permutation_p_values_small_n(x, y):
    """n <= 9: the share of all n! orderings of y whose |coefficient| >= the observed one,
    by brute force with scipy's coefficients (not the t approximation)."""
    result = correlations(x, y)
    for method, f in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                      ("kendall", lambda a, b: stats.kendalltau(a, b, variant="b"))):
        observed = f(x, y).statistic
        null = [f(x, [y[i] for i in p]).statistic for p in itertools.permutations(range(len(x)))]
        assert result[method]["r"] == pytest.approx(observed)
        assert result[method]["p_value"] == pytest.approx(np.mean([abs(v) >= abs(observed) - 1e-12 for v in null]))
    assert correlations([1, 2, 3], [10, 20, 30])["kendall"]["p_value"] == pytest.approx(1 / 3)


def test_undefined_correlations_are_null():
    """n < 3, a constant side, and n = 2 (NaN in scipy) give null everywhere."""
    for x, y in (([1, 2], [1, 2]), ([1, 2, 3], [5, 5, 5]), ([1, None, 3], [2, 3, float("nan")])):
        result = correlations(x, y)
        for method in ("pearson", "spearman", "kendall"):
            entry = result[method]
            assert (entry["r"], entry["p_value"], entry["ci95"]) == (None, None, None) and entry["ci_reason"]


def test_fisher_z_interval():
    """Pearson's 95% interval: tanh(atanh(r) -+ 1.959964 / sqrt(n - 3)) (statsmodels-free,
    by hand), equal to scipy's own pearsonr(...).confidence_interval()."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=12)
    y = x + rng.normal(size=12)
    result = correlations(x, y)
    r = stats.pearsonr(x, y).statistic
    by_hand = [np.tanh(np.arctanh(r) + s * 1.959963984540054 / np.sqrt(9)) for s in (-1, 1)]
    assert result["pearson"]["ci95"] == pytest.approx(by_hand)
    ci = stats.pearsonr(x, y).confidence_interval(0.95)
    assert result["pearson"]["ci95"] == pytest.approx([ci.low, ci.high])
    assert result["spearman"]["ci95"] is None and result["kendall"]["ci95"] is None  # n < 20


@pytest.mark.parametrize("kind", ["levels", "continuous", "ties", "over 8 levels", "few profiles"])
def test_rank_bootstrap_matches_scipy_on_the_same_resamples(kind):
    """n >= 20: Spearman's and Kendall's intervals equal a plain scipy loop over the same
    resamples (each count row expanded back into units) through the report's interval rule
    (bootstrap.bootstrap_interval, checked on its own in test_clustered.py); with more than 8
    distinct values on both sides Kendall's running sums use the Fenwick tree; with many
    units per profile the resamples are Poissonized draws."""
    rng = np.random.default_rng(7)
    n = {"over 8 levels": 80, "few profiles": 150}.get(kind, 30)
    if kind == "few profiles":
        x, y = rng.integers(1, 5, n).astype(float), rng.integers(0, 3, n).astype(float)
    elif kind in ("continuous", "over 8 levels"):
        x, y = rng.random(n), rng.random(n)
    elif kind == "levels":
        x, y = rng.random(n), rng.integers(0, 4, n) / 3
    else:
        x = rng.integers(1, 6, n).astype(float)
        y = x + rng.integers(0, 3, n)
    result = correlations(x, y, resamples=300, seed=0)
    a, b = (y, x) if len(np.unique(x)) < len(np.unique(y)) else (x, y)
    keys, mult = np.unique(np.c_[a, b], axis=0, return_counts=True)
    rho, tau = [], []
    for row in draw_counts(mult, 300, 0):
        xa, ya = np.repeat(keys[:, 0], row), np.repeat(keys[:, 1], row)
        constant = len(set(xa)) == 1 or len(set(ya)) == 1
        rho.append(np.nan if constant else stats.spearmanr(xa, ya).statistic)
        tau.append(np.nan if constant else stats.kendalltau(xa, ya).statistic)
    spearman, kendall = stats.spearmanr(x, y).statistic, stats.kendalltau(x, y).statistic
    assert result["spearman"]["ci95"] == pytest.approx(bootstrap_interval(rho, spearman, n).ci95, abs=1e-12)
    assert result["kendall"]["ci95"] == pytest.approx(bootstrap_interval(tau, kendall, n).ci95, abs=1e-12)
    assert result["spearman"]["dropped_resamples"] == int(np.isnan(rho).sum())


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


def test_screen_votes():
    """Screen 1: 2 of 3 choices first -> "first"; screen 2: 1 of 2 -> no vote; screen 3:
    0 of 1 -> "second"; screen 4: 3 of 5 -> "first"."""
    screens = np.array([1, 1, 1, 2, 2, 3, 4, 4, 4, 4, 4])
    first = np.array([1, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1], dtype=bool)
    ids, votes = screen_votes(screens, first)
    assert ids.tolist() == [1, 3, 4] and votes.tolist() == [True, False, True]


@pytest.mark.parametrize("mult", [[2, 1], [20, 10]], ids=["unit indices", "Poissonized"])
def test_draw_counts_are_binomial_for_two_profiles(mult):
    """Both ways of drawing a resample are the unit bootstrap: with two profiles of 2 and 1
    units (few units per profile: n unit indices are drawn) or 20 and 10 (a Poisson draw per
    profile, corrected to n), profile 0's count is Binomial(n, 2/3): every probability
    within 4 standard errors over 40,000 resamples, and every row sums to n."""
    rows = draw_counts(np.array(mult), 40_000)
    n = sum(mult)
    assert (rows.sum(axis=1) == n).all()
    expected = stats.binom.pmf(np.arange(n + 1), n, mult[0] / n)
    seen = np.bincount(rows[:, 0], minlength=n + 1) / 40_000
    assert (np.abs(seen - expected) <= 4 * np.sqrt(expected * (1 - expected) / 40_000) + 1e-4).all()


def test_draw_counts_are_multinomial_whatever_the_threads(monkeypatch):
    """n = 100 in profiles 60/30/9/1: multinomial means and variances; the rows are the
    same whatever the chunking over threads (each resample has its own stream); seed 1
    differs."""
    from evaluation import rank_bootstrap

    mult = np.array([60, 30, 9, 1])
    rows = draw_counts(mult, 20_000)
    assert (rows.sum(axis=1) == 100).all()
    variance = 100 * (mult / 100) * (1 - mult / 100)
    assert (np.abs(rows.mean(axis=0) - mult) < 4 * np.sqrt(variance / 20_000)).all()
    assert np.allclose(rows.var(axis=0), variance, rtol=0.05)
    monkeypatch.setattr(rank_bootstrap, "CHUNK", 7)
    assert (draw_counts(mult, 20_000) == rows).all()
    assert not (draw_counts(mult, 20_000, seed=1) == rows).all()


def test_binomial_p_half_is_binomtest():
    """The vectorized two-sided exact p-value against 0.5 equals scipy's binomtest for every
    k of every n up to 120 (to 1e-14 relative)."""
    from evaluation.position_bias import binomial_p_half

    for n in range(1, 121):
        k = np.arange(n + 1)
        expected = [stats.binomtest(int(j), n, 0.5).pvalue for j in k]
        assert binomial_p_half(k, np.full(n + 1, n)) == pytest.approx(expected, rel=1e-14, abs=0)
