"""The statistics revised on 2026-11-23 (issue 13), one test per item where the statistic
lives in evaluation/ (report-level checks are in tests/test_report_revised.py), each
against an independent value: a published one, a reference package, or by hand."""
import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa
from statsmodels.stats.proportion import proportion_confint
from test_eval_agreement import K2011, long_format

from evaluation.agreement import fleiss_kappa, krippendorff_alpha, leave_one_out_rating_difference, percent_agreement
from evaluation.alignment import compare_metrics, metric_alignment, wilson_ci, win_rate
from evaluation.alpha_ci import krippendorff_alpha_ci95
from evaluation.bootstrap import bootstrap_interval, bootstrap_weights
from evaluation.majority import majority
from evaluation.position_bias import position_bias, screen_votes
from evaluation.tabulate import tabulate
from tests.evaluation.cells import long_from_unit_rows


def test_item04_wilson_interval_12_of_12():
    """statistics.md: 12 of 12 gives [0.7575, 1.0] (a percentile bootstrap gives [1, 1])."""
    assert [round(v, 4) for v in wilson_ci(12, 12)] == [0.7575, 1.0]
    for x, n in ((12, 12), (9, 10), (0, 7), (10.5, 20), (33, 40)):
        assert wilson_ci(x, n) == pytest.approx(list(proportion_confint(x, n, method="wilson")), abs=1e-12)
    assert wilson_ci(0, 0) is None


def test_item08_fleiss_generalised_krippendorff_2011():
    """Krippendorff (2011) nominal reliability data (12 units, 4 coders, unit 12 has one
    value): irrCAC's fleiss.kappa.raw gives 0.7612 over the 11 units with >= 2 ratings
    (the modal-n rule used only the units with 4 ratings)."""
    kappa, n_units = fleiss_kappa(*long_format(K2011))
    assert round(kappa, 4) == 0.7612 and n_units == 11


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 5), st.lists(st.lists(st.integers(0, 2), min_size=5, max_size=5), min_size=2, max_size=12))
def test_item08_fleiss_balanced_equals_statsmodels(raters, rows):
    units, coders, values, table = [], [], [], []
    for unit, row in enumerate(rows):
        labels = row[:raters]
        table.append([labels.count(k) for k in range(3)])
        units += [unit] * raters
        coders += list(range(raters))
        values += labels
    kappa, _ = fleiss_kappa(units, coders, values)
    expected = sm_fleiss_kappa(np.array(table))
    assert kappa is None if np.isnan(expected) else kappa == pytest.approx(expected, abs=1e-9)


def test_item09_numbers_compare_as_numbers_and_missing_texts():
    """At numeric levels "1", "1.0" and " 1" are one rating for every statistic; "nan",
    "NA", "null" and "" are missing at every level (never a category). Units: u1 ("1",
    "1.0"), u2 ("2", " 2"), u3 ("1", "2"), u4 ("2", "nan"): as numbers Fleiss = 13/45
    (hand-worked in test_eval_commands), percent 2/3; as labels u1 and u2 disagree."""
    units = ["u1", "u1", "u2", "u2", "u3", "u3", "u4", "u4", "u5"]
    coders = ["a", "b"] * 4 + ["a"]
    values = ["1", "1.0", "2", " 2", "1", "2", "2", "nan", "NA"]
    assert fleiss_kappa(units, coders, values, "interval") == (pytest.approx(13 / 45), 3)
    assert percent_agreement(units, coders, values, "interval") == pytest.approx(2 / 3)
    assert percent_agreement(units, coders, values) == 0.0  # nominal: "1" != "1.0", "2" != " 2"
    alpha = krippendorff_alpha(units, coders, values, "interval")
    data = np.array([[1, 2, 1, 2], [1, 2, 2, np.nan]])
    assert alpha.value == pytest.approx(krippendorff.alpha(data, level_of_measurement="interval"))
    assert (alpha.n_units, alpha.n_values) == (3, 6)
    nominal = tabulate(units, coders, values)
    assert sorted(nominal.value_labels.tolist()) == [" 2", "1", "1.0", "2"]  # nan, NA: not categories


def test_item13_alpha_undefined_does_not_depend_on_scale():
    """Krippendorff (2011) values squeezed into 1e-7 (x * 1e-7 + 5): alpha is invariant to
    an affine rescaling at the interval level, so it stays 0.849, as the package says; only
    identical values make it undefined."""
    u, c, v = long_format(K2011)
    tiny = [x * 1e-7 + 5 for x in v]
    result = krippendorff_alpha(u, c, tiny, "interval")
    assert round(result.value, 3) == 0.849
    data = np.full((4, 12), np.nan)
    for unit, coder, x in zip(u, c, tiny):
        data["ABCD".index(coder), unit - 1] = x
    assert result.value == pytest.approx(krippendorff.alpha(data, level_of_measurement="interval"), abs=1e-6)
    for level in ("nominal", "ordinal", "ratio"):
        assert krippendorff_alpha(u, c, tiny, level).value is not None
    assert krippendorff_alpha([1, 1, 2, 2], list("abab"), [5e-9] * 4, "interval").value is None


def _package_ci(units, coders, values, level, resamples, seed=0):
    """The reference: for every resample drawn by bootstrap_weights, expand the drawn
    profiles back into units and ask the `krippendorff` package; undefined ones dropped."""
    c = tabulate(units, coders, values, numeric=level != "nominal")
    keep = c.m >= 2
    new = np.cumsum(keep) - 1
    rows = keep[c.unit]
    unit, value, count = new[c.unit[rows]], c.value[rows], c.count[rows]
    x = c.value_labels.astype(float) if level != "nominal" else np.arange(len(c.value_labels), dtype=float)
    dense = np.zeros((keep.sum(), len(c.value_labels)), dtype=int)
    dense[unit, value] = count
    if len(c.value_labels) <= 64:
        profiles, first, mult = np.unique(dense, axis=0, return_index=True, return_counts=True)
    else:
        first, mult = np.arange(len(dense)), np.ones(len(dense), dtype=int)
    samples, undefined = [], 0
    width = int(dense.sum(axis=1).max())
    for w in bootstrap_weights(mult, resamples, seed):
        for row in w.astype(int):
            columns = []
            for p, k in enumerate(row):
                cells = np.repeat(x, dense[first[p]])
                columns += [np.r_[cells, np.full(width - len(cells), np.nan)]] * k
            data = np.array(columns).T
            if len(np.unique(data[~np.isnan(data)])) < 2:
                undefined += 1
                samples.append(None)
            else:
                samples.append(krippendorff.alpha(data, level_of_measurement=level))
    estimate = krippendorff.alpha(np.array([np.r_[np.repeat(x, row), np.full(width - row.sum(), np.nan)]
                                            for row in dense]).T, level_of_measurement=level)
    return bootstrap_interval(samples, estimate, n_clusters=len(dense)).ci95, undefined


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_ci95_krippendorff_2011_against_the_package(level):
    """1,000 unit resamples (seed 0) of Krippendorff (2011): our vectorized interval equals
    the `krippendorff` package run on every resample."""
    u, c, v = long_format(K2011)
    ours = krippendorff_alpha_ci95(u, c, v, level)
    ci, undefined = _package_ci(u, c, v, level, 1000)
    assert ours.ci95 == pytest.approx(ci, abs=1e-12)
    assert (ours.resamples, ours.undefined) == (1000, undefined)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_ci95_many_values_and_undefined_resamples(level):
    """Many distinct values (unit-per-profile draws, sparse counts, the ordinal loop) and
    a study where most units agree fully, so some resamples draw only identical values:
    those are dropped and counted, exactly as with the package."""
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 90, 40)
    units, coders, values = [], [], []
    for i in range(40):
        for k in range(3):
            if rng.random() < 0.85:
                units.append(i)
                coders.append(k)
                values.append(int(min(99, max(0, truth[i] + rng.integers(-10, 11)))))
    ours = krippendorff_alpha_ci95(units, coders, values, level, resamples=200)
    assert ours.ci95 == pytest.approx(_package_ci(units, coders, values, level, 200)[0], abs=1e-12)
    agree = ([1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6], list("ab" * 6), [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 9])
    ours = krippendorff_alpha_ci95(*agree, level, resamples=500)
    ci, undefined = _package_ci(*agree, level, 500)
    assert ours.undefined == undefined > 0
    assert ours.ci95 == pytest.approx(ci, abs=1e-12)


def test_item07_leave_one_out_rating_difference_by_hand():
    """Unit 1 ratings x=5, y=4, z=2: x vs median(4, 2) = 3 -> 2; y vs median(5, 2) = 3.5 ->
    .5; z vs median(5, 4) = 4.5 -> 2.5. Unit 2 x=3, y=3, z=4: .5, .5, 1. Unit 3 (two
    ratings): skipped. Means: x 1.25, y .5, z 1.75."""
    units = [1, 1, 1, 2, 2, 2, 3, 3]
    coders = list("xyzxyzxy")
    values = [5, 4, 2, 3, 3, 4, 1, 2]
    assert leave_one_out_rating_difference(units, coders, values) == {"x": 1.25, "y": 0.5, "z": 1.75}


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), st.integers(1, 6)), min_size=5, max_size=5), min_size=1, max_size=8))
def test_item07_leave_one_out_rating_difference_brute_force(rows):
    units, coders, values = long_from_unit_rows(rows)
    expected = {}
    for coder in set(coders):
        diffs = []
        for row in rows:
            others = [x for c, x in enumerate(row) if c != coder and x is not None]
            if row[coder] is not None and len(others) >= 2:
                diffs.append(abs(row[coder] - float(np.median(others))))
        expected[coder] = float(np.mean(diffs)) if diffs else None
    assert leave_one_out_rating_difference(units, coders, values) == pytest.approx(expected)


def test_item10_min_votes_and_tie_majority():
    """Majority needs min_votes judgments: i3 (one vote) has none and is counted in
    too_few_votes; majority_votes counts items with a majority by their number of votes.
    A `tie` majority (i4) is left out of alignment (n), McNemar and win rate."""
    units = ["i1"] * 3 + ["i2"] * 2 + ["i3"] + ["i4"] * 3 + ["i5"] * 2
    values = ["x", "x", "y", "y", "y", "x", "tie", "tie", "x", "x", "y"]
    m = majority(units, values, min_votes=2)
    assert m.labels == {"i1": "x", "i2": "y", "i3": None, "i4": "tie", "i5": None}
    assert (m.no_majority, m.too_few_votes, m.votes) == (1, 1, {2: 1, 3: 2})
    assert majority(units, values, min_votes=1).labels["i3"] == "x"
    picks = {"i1": "x", "i2": "x", "i3": "x", "i4": "tie"}
    a = metric_alignment(m.labels, picks)
    assert (a["agree"], a["ties"], a["n"], a["alignment"]) == (1, 0, 2, 0.5)
    assert win_rate(m.labels) == {"x": 0.5, "y": 0.5}
    [row] = compare_metrics(m.labels, {"m1": picks, "m2": {"i1": "y", "i2": "y", "i4": "x"}})
    assert (row["a_only"], row["b_only"]) == (1, 1)  # i4 (tie majority) is not a discordant item


def test_item02_screen_votes_hand_example():
    """Two annotators x 3 items, 5 aspect choices per screen: a screen votes with the
    majority of its choices; 3-2 and 4-1 splits vote, an even split (one tie dropped:
    2-2) does not. Votes: first, first, second, first, second -> 3 of 5, p = 1."""
    screens = np.repeat(np.arange(6), 5)
    first = np.array([1, 1, 1, 0, 0,  1, 1, 1, 1, 0,  0, 0, 0, 1, 1,
                      1, 1, 1, 0, 0,  0, 0, 0, 0, 1,  1, 1, 0, 0, 0], bool)
    ok = np.ones(30, bool)
    ok[29] = False  # a tie: screen 5 has 1, 1, 0, 0 -> no vote
    ids, votes = screen_votes(screens[ok], first[ok])
    assert ids.tolist() == [0, 1, 2, 3, 4] and votes.tolist() == [True, True, False, True, False]
    assert position_bias(votes.tolist()) == {"first_shown_rate": 0.6, "n": 5, "p_value": 1.0}


def test_item02_screen_level_test_keeps_its_size_without_bias():
    """No position bias, but the five choices of a screen follow one display order and a
    per-screen lean: over 400 simulated studies (seed 1) the pooled binomial test over
    choices rejects 74 times (18.5%), the screen-level test 10 times (2.5%, below 5%)."""
    rng = np.random.default_rng(1)
    pooled = screen = 0
    for _ in range(400):
        lean = rng.choice([0.2, 0.8], size=60)  # each screen leans to one side; no overall bias
        choices = rng.random((60, 5)) < lean[:, None]
        k = int(choices.sum())
        pooled += binomtest(k, choices.size, 0.5).pvalue < 0.05
        votes = choices.sum(axis=1) >= 3
        screen += binomtest(int(votes.sum()), 60, 0.5).pvalue < 0.05
    assert (pooled, screen) == (74, 10)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), min_size=2, max_size=30))
def test_pairwise_kappa_quadratic_for_ratings_matches_sklearn(pairs):
    """Rating scales get quadratic-weighted Cohen's kappa (statistics.md), as sklearn's
    cohen_kappa_score(weights="quadratic")."""
    from sklearn.metrics import cohen_kappa_score

    from evaluation.agreement import pairwise_cohen_kappa, quadratic_kappa

    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    expected = cohen_kappa_score(a, b, weights="quadratic")
    ours = quadratic_kappa(a, b)
    assert ours is None if np.isnan(expected) else ours == pytest.approx(expected, abs=1e-9)
    units = list(range(len(pairs))) * 2
    coders = ["p"] * len(pairs) + ["q"] * len(pairs)
    result = pairwise_cohen_kappa(units, coders, a + b, min_shared=2, weights="quadratic")
    assert result[("p", "q")] == ours
