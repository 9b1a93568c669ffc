"""The scalar_rating report (statistics.md, "Scalar rating" and "Clustered data") against an
independent computation: 6 items x 4 annotators with tied scores and one missing rating;
reviewer_avg, item_avg and reviewer_variance worked out with plain loops and `statistics`,
the three coefficients from scipy, and their intervals and p-values (one bootstrap over
items: pairs of one item are not independent) from a plain loop over the documented item
draws that expands each resample's pairs and asks scipy, then the report's interval rule
written out (tests/evaluation/test_clustered.py's reference_interval)."""
import statistics

import numpy as np
import pytest
from scipy import stats

from evaluation.report import build_report
from evaluation.report.inputs import ReportInput
from tests.evaluation.test_clustered import reference_interval

CI_METHOD = "bootstrap over items (2000 resamples, seed 0; bias-corrected, expanded percentile)"

ANNOTATORS = ("a", "b", "c", "d")
# SCORES[item][annotator]; None = no rating (item 5 by d). Ties across and within items.
SCORES = [[7, 4, 7, 5], [9, 4, 8, 5], [3, 4, 2, 2], [6, 6, 6, 7], [8, 5, 9, 4], [5, 5, 3, None]]
SYSTEM = ["plot-a", "plot-b"] * 3
METRIC = [0.30, 0.70, 0.10, 0.50, 0.80, 0.40]  # rougeL of each item's one candidate
JUDGE = {(0, "a"): 6, (0, "b"): 5, (1, "a"): 9, (1, "b"): 3, (2, "a"): 2, (2, "c"): 3, (3, "c"): 7, (3, "d"): 6,
         (4, "a"): 8, (4, "b"): 6, (4, "c"): 8, (5, "a"): 4}  # a personalized evaluator: its rows per annotator
FLAT = [6, 7, 3, 6, 7, 4]  # a non-personalized evaluator: one score per item, for every annotator


def report_input():
    j_item, j_annotator, j_value = [], [], []
    for i, row in enumerate(SCORES):
        for who, score in zip(ANNOTATORS, row):
            if score is not None:
                j_item.append(i)
                j_annotator.append(who)
                j_value.append(str(score))
    p_rows = [(i, "rougeL", "", SYSTEM[i], str(m)) for i, m in enumerate(METRIC)]
    p_rows += [(i, "judge", who, "score", str(v)) for (i, who), v in JUDGE.items()]
    p_rows += [(1, "judge", "d", "score", "")]  # unparsed
    p_rows += [(i, "flat", "", "score", str(v)) for i, v in enumerate(FLAT)]
    p_rows += [(3, "flat", "", "score", "N/A")]  # a later unparsed row for everybody: wins, not a number
    return ReportInput(
        slug="perse-mini", kind="scalar_rating", config={"scale": [1, 10]}, item_ids=[f"i{k}" for k in range(6)],
        is_gold=[False] * 6, gold=None, c_item=list(range(6)), c_id=SYSTEM,
        j_item=j_item, j_annotator=j_annotator, j_question=["score"] * len(j_item), j_value=j_value,
        j_shown=[""] * len(j_item), j_seconds=[10.0] * len(j_item),
        p_item=[r[0] for r in p_rows], p_evaluator=[r[1] for r in p_rows], p_annotator=[r[2] for r in p_rows],
        p_question=[r[3] for r in p_rows], p_value=[r[4] for r in p_rows])


def pairs():
    """[(item, annotator, score)] in (item, annotator) order."""
    return [(i, who, s) for i, row in enumerate(SCORES) for who, s in zip(ANNOTATORS, row) if s is not None]


def by_hand():
    """{evaluator: [(item, predicted, human)]}, computed with loops."""
    out = {"reviewer_avg": [], "item_avg": [], "rougeL": [], "judge": [], "flat": []}
    for i, who, s in pairs():
        mine = [t for k, w, t in pairs() if w == who and k != i]
        others = [t for k, w, t in pairs() if k == i and w != who]
        if mine:
            out["reviewer_avg"].append((i, sum(mine) / len(mine), s))
        if others:
            out["item_avg"].append((i, sum(others) / len(others), s))
        out["rougeL"].append((i, METRIC[i], s))
        if (i, who) in JUDGE:
            out["judge"].append((i, JUDGE[(i, who)], s))
        if i != 3:  # item 3's later row for everybody is "N/A"
            out["flat"].append((i, FLAT[i], s))
    return out


def draws(n_items, resamples=2000):
    """The documented item draws (docs/statistics.md): default_rng(0).integers(0, C, (B, C)),
    items numbered in item order."""
    return np.random.default_rng(0).integers(0, n_items, (resamples, n_items))


def bootstrap_by_hand(rows):
    """{method: (ci95, the possible p-values, dropped)} of the item bootstrap: each
    resample's drawn items bring all their pairs (as often as drawn), scipy computes the
    coefficient (a resample constant on a side has none: dropped), then the report's interval
    rule and its test of r = 0. A resample whose r is 0 in exact arithmetic (two items with
    equal mean scores drawn alone) comes out as +-1e-19 in floats, on a side that depends on
    the order of the sums (or exactly 0, a tie, from Kendall's integer counts): the p-value is
    one of those that k of them below 0 and t of them at 0 give."""
    items = sorted({i for i, _, _ in rows})
    x, y = [p for _, p, _ in rows], [h for _, _, h in rows]
    out = {}
    for method, f in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                      ("kendall", lambda a, b: stats.kendalltau(a, b, variant="b"))):
        samples = []
        for draw in draws(len(items)):
            xs = [p for k in draw for i, p, _ in rows if i == items[k]]
            ys = [h for k in draw for i, _, h in rows if i == items[k]]
            samples.append(None if len(set(xs)) < 2 or len(set(ys)) < 2 else f(xs, ys).statistic)
        estimate = f(x, y).statistic
        ci = reference_interval(samples, estimate, len(items))
        noise = [k for k, v in enumerate(samples) if v is not None and abs(v) < 1e-12]
        p_values = []
        for below in range(len(noise) + 1):
            for tied in range(len(noise) + 1 - below):  # exactly 0 (Kendall's integer S): a tie, half below
                signed = list(samples)
                for n, k in enumerate(noise):
                    signed[k] = -1e-30 if n < below else 0.0 if n < below + tied else 1e-30
                p_values.append(reference_interval(signed, estimate, len(items), p_value=True)[1])
        out[method] = (ci, p_values, sum(s is None for s in samples))
    return out


def mean_interval_by_hand(values_by_item):
    """The bootstrap interval over items of the mean of every value: each resample's mean
    over the values of its drawn items."""
    items = sorted(values_by_item)
    samples = [statistics.mean([v for k in draw for v in values_by_item[items[k]]]) for draw in draws(len(items))]
    every = [v for i in items for v in values_by_item[i]]
    return reference_interval(samples, statistics.mean(every), len(items))


@pytest.fixture(scope="module")
def report():
    return build_report(report_input())


def test_scores_and_reviewer_variance(report):
    scores = [s for _, _, s in pairs()]
    assert len(scores) == 23
    assert report["scores"]["mean"] == pytest.approx(statistics.mean(scores), abs=1e-12)
    assert report["scores"]["sd"] == pytest.approx(statistics.stdev(scores), abs=1e-12)
    assert report["scores"]["n"] == 23 and report["scores"]["n_clusters"] == 6
    by_item = {i: [s for s in row if s is not None] for i, row in enumerate(SCORES)}
    assert report["scores"]["ci95"] == pytest.approx(mean_interval_by_hand(by_item), abs=1e-10)
    assert report["scores"]["ci_method"] == CI_METHOD and report["scores"]["dropped_resamples"] == 0
    variances = [statistics.variance(by_item[i]) for i in range(6)]
    variance = report["reviewer_variance"]
    assert variance["value"] == pytest.approx(statistics.mean(variances), abs=1e-12)
    assert variance["n_items"] == variance["n_clusters"] == 6
    assert variance["ci95"] == pytest.approx(mean_interval_by_hand({i: [v] for i, v in enumerate(variances)}),
                                             abs=1e-10)
    # item 0: 7, 4, 7, 5 -> mean 5.75, variance (1.5625 + 3.0625 + 1.5625 + 0.5625) / 3 = 2.25
    assert variances[0] == 2.25


@pytest.mark.parametrize("name", ["reviewer_avg", "item_avg", "rougeL", "judge", "flat"])
def test_each_evaluator_against_scipy(report, name):
    rows = by_hand()[name]
    x, y = [p for _, p, _ in rows], [h for _, _, h in rows]
    entry = report["evaluators"][name]
    assert (entry["n_pairs"], entry["n_items"]) == (len(rows), len({i for i, _, _ in rows}))
    for method, result in (("pearson", stats.pearsonr(x, y)), ("spearman", stats.spearmanr(x, y)),
                           ("kendall", stats.kendalltau(x, y, variant="b"))):
        assert entry[method]["r"] == pytest.approx(result.statistic, abs=1e-12), method
        assert entry[method]["n_clusters"] == entry["n_items"]


def test_coverage_and_unparsed(report):
    evaluators = report["evaluators"]
    assert set(evaluators) == {"reviewer_avg", "item_avg", "rougeL", "judge", "flat"}
    assert (evaluators["judge"]["n_pairs"], evaluators["judge"]["n_unparsed"]) == (12, 1)
    assert (evaluators["flat"]["n_pairs"], evaluators["flat"]["n_unparsed"]) == (19, 1)
    assert evaluators["reviewer_avg"]["n_pairs"] == evaluators["item_avg"]["n_pairs"] == 23
    assert report["correlations"]["rougeL"]["n"] == 23 and list(report["correlations"]) == ["rougeL"]
    # reviewer_avg of (item 5, a): a's other ratings 7, 9, 3, 6, 8 -> 6.6; item_avg: b, c -> 4.0
    rows = by_hand()
    assert (5, 6.6, 5) in [(i, round(p, 10), h) for i, p, h in rows["reviewer_avg"]]
    assert (5, 4.0, 5) in rows["item_avg"]


@pytest.mark.parametrize("name", ["reviewer_avg", "rougeL"])
def test_intervals_and_p_values_resample_items(report, name):
    """23 pairs in 6 items: the pairs cluster in items, so intervals and p-values come from
    the item bootstrap (a metric's score is the same for every pair of its item)."""
    expected = bootstrap_by_hand(by_hand()[name])
    entry = report["evaluators"][name]
    for method in ("pearson", "spearman", "kendall"):
        ci, p_values, dropped = expected[method]
        assert entry[method]["ci95"] == pytest.approx(ci, abs=1e-10), method
        assert any(entry[method]["p"] == pytest.approx(p, rel=1e-9) for p in p_values), (method, p_values)
        assert entry[method]["dropped_resamples"] == dropped, method
        assert entry[method]["ci_method"] == CI_METHOD
        assert entry[method]["p_method"] == f"{CI_METHOD}: the interval's test of r = 0"
    if name == "rougeL":  # the metric's entry under `correlations` is the same numbers
        correlation = report["correlations"]["rougeL"]
        assert (correlation["n"], correlation["n_clusters"], correlation["unit"]) == (23, 6, "(item, annotator)")
        assert correlation["pearson"]["p_value"] == entry["pearson"]["p"]


def test_too_few_pairs_for_the_item_bootstrap(report):
    """judge: 12 pairs in 6 items (clustered, under 20 pairs): r, but no interval and no p
    (the permutation / scipy p assume independent pairs, which these are not)."""
    entry = report["evaluators"]["judge"]
    for method in ("pearson", "spearman", "kendall"):
        assert entry[method]["r"] is not None and entry[method]["ci95"] is None and entry[method]["p"] is None
        assert entry[method]["ci_reason"] == ("clustered units: intervals and p-values need n >= 20 and >= 5 items")


def test_agreement_is_interval_and_ordinal_alpha(report):
    import krippendorff

    data = np.array([[np.nan if row[k] is None else row[k] for row in SCORES] for k in range(4)], dtype=float)
    agreement = report["agreement"]["score"]
    assert agreement["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval"), abs=1e-9)
    assert agreement["krippendorff_alpha_ordinal"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"), abs=1e-9)
    assert agreement["n_clusters"] == 6
    assert agreement["ci_method"] == CI_METHOD.replace("2000", "1000")
