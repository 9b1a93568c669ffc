"""Exact values of the clustered-data rules (statistics.md, "Clustered data"; issue 24),
each against an independent computation: scipy / statsmodels, a plain loop over the
documented draws, or a hand-worked case. No Django.
"""
import math
import re

import krippendorff
import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evaluation.alignment import metric_alignment
from evaluation.alpha_ci import krippendorff_alpha_ci95
from evaluation.bootstrap import bootstrap_interval, clustered_mean
from evaluation.correlation import correlations
from evaluation.intervals import CONSTANT, t_interval
from evaluation.personalization.egises import EPS, egises_hj, egises_interval
from evaluation.personalization.paradoxes import paradox_tests
from evaluation.position_bias import annotator_test, per_annotator
from evaluation.rank_bootstrap import draw_counts
from evaluation.report import build_report, render
from evaluation.report.inputs import ReportInput

Z975 = stats.norm.ppf(0.975)


def reference_interval(samples, estimate, n_clusters, p_value=False):
    """The report's interval rule written out from docs/statistics.md: bias-corrected
    percentile interval with the small-sample expansion, over the defined resamples."""
    kept = np.array([s for s in samples if s is not None and np.isfinite(s)], dtype=float)

    def smoothed(t):  # ties: within a relative 1e-12 (float noise is no side)
        tie = np.abs(kept - t) <= 1e-12 * max(abs(t), 1e-300)
        return (np.sum((kept < t) & ~tie) + 0.5 * np.sum(tie) + 0.5) / (len(kept) + 1)

    z0 = stats.norm.ppf(smoothed(estimate))
    ze = math.sqrt(n_clusters / (n_clusters - 1)) * stats.t.ppf(0.975, n_clusters - 1)
    ci = list(np.percentile(kept, [100 * stats.norm.cdf(2 * z0 - ze), 100 * stats.norm.cdf(2 * z0 + ze)]))
    if not p_value:
        return ci
    distance = abs(2 * z0 - stats.norm.ppf(smoothed(0.0)))
    return ci, min(1.0, 2 * stats.t.sf(distance * math.sqrt((n_clusters - 1) / n_clusters), n_clusters - 1))


def documented_cluster_draws(n_clusters, resamples, seed=0):
    """docs/statistics.md: numpy default_rng(seed).integers(0, C, (B, C)); counts per cluster."""
    idx = np.random.default_rng(seed).integers(0, n_clusters, (resamples, n_clusters))
    return np.array([np.bincount(row, minlength=n_clusters) for row in idx])


# ------------------------------------------------------------------ position bias over annotators
FIRSTS = np.array([14, 9, 17, 6, 11, 3])
VOTES = np.array([20, 18, 20, 12, 15, 4])  # the last annotator has < 5 screens: not in the t-test


def test_annotator_t_test_equals_scipy():
    shares = FIRSTS[:5] / VOTES[:5]
    expected = stats.ttest_1samp(shares, 0.5)
    ci = stats.t.interval(0.95, 4, loc=shares.mean(), scale=stats.sem(shares))
    result = annotator_test(FIRSTS, VOTES)
    assert (result["n"], result["n_screens"]) == (5, 85)
    assert result["first_shown_rate"] == pytest.approx(shares.mean(), abs=1e-15)
    assert result["p_value"] == pytest.approx(expected.pvalue, rel=1e-12)
    assert result["ci95"] == pytest.approx(list(ci), rel=1e-12)


def test_per_annotator_binomial_p_is_holm_adjusted_like_statsmodels():
    raw, adjusted = per_annotator(FIRSTS, VOTES)
    scipy_raw = [stats.binomtest(int(k), int(n), 0.5).pvalue for k, n in zip(FIRSTS, VOTES)]
    assert raw.tolist() == pytest.approx(scipy_raw, rel=1e-12)
    assert adjusted.tolist() == pytest.approx(multipletests(scipy_raw, method="holm")[1].tolist(), rel=1e-12)


def position_input():
    """A pairwise study where annotator k judged VOTES[k] items and chose the option shown
    first (x, shown x|y) on FIRSTS[k] of them: one choice per screen."""
    item, who, value = [], [], []
    for k, (firsts, votes) in enumerate(zip(FIRSTS, VOTES)):
        for i in range(votes):
            item.append(i)
            who.append(f"ann{k}")
            value.append("x" if i < firsts else "y")
    n_items = int(VOTES.max())
    return ReportInput(slug="pb", kind="pairwise_alignment", config={}, item_ids=[f"i{i:02d}" for i in range(n_items)],
                       is_gold=[False] * n_items, gold=None,
                       candidates=np.array([["x", "y"]] * n_items, dtype=object), j_item=item, j_annotator=who,
                       j_question=["choice"] * len(item), j_value=value, j_shown=["x|y"] * len(item))


def test_report_position_bias_is_the_t_test_over_annotators_with_holm_per_annotator():
    report = build_report(position_input())
    bias = report["position_bias"]
    shares = FIRSTS[:5] / VOTES[:5]
    keys = ("n", "n_clusters", "unit", "test_unit", "n_screens", "n_screens_all")
    assert tuple(bias[k] for k in keys) == (5, 5, "screen", "annotator", 85, 89)
    assert bias["annotator_mean_rate"] == pytest.approx(shares.mean())
    assert bias["p_value"] == pytest.approx(stats.ttest_1samp(shares, 0.5).pvalue, rel=1e-12)
    assert bias["first_shown_rate"] == pytest.approx(FIRSTS.sum() / VOTES.sum())
    holm = multipletests([stats.binomtest(int(k), int(n)).pvalue for k, n in zip(FIRSTS, VOTES)], method="holm")[1]
    got = [report["annotators"][f"ann{k}"]["first_shown_p"] for k in range(6)]
    assert got == pytest.approx(holm.tolist(), rel=1e-12)
    assert [report["annotators"][f"ann{k}"]["n_screens"] for k in range(6)] == VOTES.tolist()


def test_constant_shares_give_no_t_test():
    result = annotator_test(np.array([10, 10, 10, 10, 10]), np.array([20, 20, 20, 20, 20]))
    assert (result["p_value"], result["ci95"], result["reason"]) == (None, None, CONSTANT)


# ------------------------------------------------------------------ the small-n rules
def test_no_interval_from_fewer_than_5_clusters():
    assert bootstrap_interval([0.1, 0.2, 0.3], 0.2, n_clusters=4).reason == "fewer than 5 clusters (4)"
    four = krippendorff_alpha_ci95([1, 1, 2, 2, 3, 3, 4, 4], list("abababab"), [1, 2, 2, 2, 3, 4, 5, 5], "interval")
    assert (four.ci95, four.n_clusters, four.reason) == (None, 4, "fewer than 5 clusters (4)")
    # 8 (item, pair) units in 4 items: the items are what is resampled.
    units, coders, values, items = [], [], [], []
    for u in range(8):
        units += [u, u]
        coders += ["a", "b"]
        values += [u % 5 + 1, (u + 1) % 5 + 1]
        items += [u // 2] * 2
    nested = krippendorff_alpha_ci95(units, coders, values, "interval", clusters=items)
    assert (nested.ci95, nested.n_clusters, nested.clustered) == (None, 4, True)
    assert clustered_mean([1.0, 2.0, 3.0, 4.0], [0, 1, 2, 3])[1].reason == "fewer than 5 clusters (4)"
    assert t_interval([0.1, 0.4, 0.2, 0.3]).ci95 is None
    four_items = metric_alignment({k: "a" for k in range(4)}, {k: "a" for k in range(4)})
    five_items = metric_alignment({k: "a" for k in range(5)}, {k: "a" if k else "b" for k in range(5)})
    assert four_items["ci95"] is None and four_items["ci_reason"] == "fewer than 5 clusters (4)"
    assert five_items["ci95"] == pytest.approx(list(proportion_confint(4, 5, method="wilson")), abs=1e-12)


def test_no_fisher_z_below_10():
    rng = np.random.default_rng(3)
    x = rng.normal(size=10)
    y = x + rng.normal(size=10)
    nine = correlations(x[:9], y[:9])["pearson"]
    assert (nine["ci95"], nine["ci_reason"]) == (None, "Fisher z needs n >= 10")
    ten = correlations(x, y)["pearson"]
    r = stats.pearsonr(x, y).statistic
    assert ten["ci95"] == pytest.approx([math.tanh(math.atanh(r) + s * Z975 / math.sqrt(7)) for s in (-1, 1)])
    assert ten["ci_method"] == "Fisher z over units"


def test_a_constant_sample_gets_no_t_interval():
    """[0.5, 0.5] from six equal values was printed as an interval; now none, with the
    reason. A varying sample gets scipy's t interval."""
    assert t_interval([0.5] * 6).ci95 is None and t_interval([0.5] * 6).reason == CONSTANT
    values = [0.2, 0.5, 0.4, 0.9, 0.3, 0.6]
    expected = stats.t.interval(0.95, 5, loc=np.mean(values), scale=stats.sem(values))
    assert t_interval(values).ci95 == pytest.approx(list(expected), rel=1e-12)
    n = 6  # the per-system table: a metric constant over six items
    inp = ReportInput(slug="c", kind="pairwise_alignment", config={}, item_ids=[f"i{k}" for k in range(n)],
                      is_gold=[False] * n, gold=None, candidates=np.array([["A", "B"]] * n, dtype=object),
                      j_item=[], s_item=list(range(n)) * 2, s_metric=["m"] * 2 * n,
                      s_candidate=["A"] * n + ["B"] * n, s_value=[0.5] * n + [0.1 * k for k in range(n)])
    metrics = build_report(inp)["systems"]
    assert (metrics["A"]["metrics"]["m"]["ci95"], metrics["A"]["metrics"]["m"]["ci_reason"]) == (None, CONSTANT)
    b = [0.1 * k for k in range(n)]
    assert metrics["B"]["metrics"]["m"]["ci95"] == pytest.approx(
        list(stats.t.interval(0.95, n - 1, loc=np.mean(b), scale=stats.sem(b))))


# ------------------------------------------------------------------ dropped resamples
def test_rank_bootstrap_reports_its_dropped_resamples_and_gives_no_interval_above_10_percent():
    """n = 20 with a single y = 1: a resample that misses that unit is constant in y, so
    Spearman and Kendall are undefined there. The count equals the rows of the documented
    draws (rank_bootstrap.draw_counts over the 20 cells, cell 7 holding the y = 1 unit)
    without it: about (19/20)^20 = 36% of 2,000, so no interval."""
    x, y = np.arange(20.0), np.zeros(20)
    y[7] = 1
    result = correlations(x, y)
    expected = int(np.sum(draw_counts(np.ones(20, dtype=np.int64), 2000, 0)[:, 7] == 0))
    assert 600 < expected < 850
    for method in ("spearman", "kendall"):
        assert result[method]["dropped_resamples"] == expected
        assert result[method]["ci95"] is None
        assert result[method]["ci_reason"] == (f"over 10% of the resamples dropped ({expected} of 2000): the statistic "
                                               "is undefined there")


def test_cluster_bootstrap_counts_the_resamples_that_miss_the_one_varying_item():
    """Clustered units (3 per item, 8 items): only item 5 has y = 1. Resamples without
    item 5 are constant in y: dropped, counted exactly from the documented draws."""
    items = np.repeat(np.arange(8), 3)
    x = np.arange(24.0)
    y = (items == 5).astype(float)
    result = correlations(x, y, clusters=items)
    misses = int(np.sum(documented_cluster_draws(8, 2000)[:, 5] == 0))
    assert result["pearson"]["dropped_resamples"] == result["kendall"]["dropped_resamples"] == misses
    assert result["pearson"]["ci95"] is None and "over 10% of the resamples dropped" in result["pearson"]["ci_reason"]


# ------------------------------------------------------------------ reproducible from the docs
def test_clustered_alpha_interval_is_a_plain_loop_over_the_documented_draws():
    """(item, pair) units resampled by item: rng.integers(0, C, (B, C)) item draws, each
    drawn item bringing all its units (renumbered), alpha by the `krippendorff` package,
    then the report's interval rule."""
    rng = np.random.default_rng(11)
    n_items, pairs = 8, 3
    ratings = np.clip(np.rint(3.5 + rng.normal(0, 1, n_items)[:, None, None] + rng.normal(0, 0.9, (n_items, pairs, 2))),
                      1, 6)
    units = np.repeat(np.arange(n_items * pairs), 2)
    coders = np.tile([0, 1], n_items * pairs)
    items = np.repeat(np.arange(n_items), pairs * 2)
    ours = krippendorff_alpha_ci95(units, coders, ratings.ravel(), "interval", resamples=300, clusters=items)
    samples = []
    for row in np.random.default_rng(0).integers(0, n_items, (300, n_items)):
        drawn = ratings[row].reshape(-1, 2)  # every unit of every drawn item, copies kept apart
        samples.append(None if len(np.unique(drawn)) < 2 else
                       krippendorff.alpha(drawn.T, level_of_measurement="interval"))
    estimate = krippendorff.alpha(ratings.reshape(-1, 2).T, level_of_measurement="interval")
    assert ours.ci95 == pytest.approx(reference_interval(samples, estimate, n_items), abs=1e-10)
    assert ours.n_clusters == n_items


def test_clustered_correlations_are_a_scipy_loop_over_the_documented_draws():
    rng = np.random.default_rng(12)
    items = np.repeat(np.arange(9), 3)
    effect = rng.normal(size=9)[items]
    x = np.round(effect + rng.normal(size=27), 1)
    y = np.round(effect + rng.normal(size=27))
    result = correlations(x, y, clusters=items, resamples=400)
    draws = np.random.default_rng(0).integers(0, 9, (400, 9))
    for method, f in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                      ("kendall", lambda a, b: stats.kendalltau(a, b, variant="b"))):
        samples = []
        for row in draws:
            rows = np.concatenate([np.flatnonzero(items == i) for i in row])
            xs, ys = x[rows], y[rows]
            samples.append(None if np.all(xs == xs[0]) or np.all(ys == ys[0]) else f(xs, ys).statistic)
        ci, p = reference_interval(samples, f(x, y).statistic, 9, p_value=True)
        assert result[method]["ci95"] == pytest.approx(ci, abs=1e-10), method
        assert result[method]["p_value"] == pytest.approx(p, rel=1e-9), method
        assert result[method]["n_clusters"] == 9


# ------------------------------------------------------------------ EGISES-HJ over documents
def two_user_document(doc_id, reference_rating, model_rating):
    """Two users: the softmax has one term (weight 1), so DEGRESS(d) = (min(s_ref, s_model)
    + 1e-5) / (max + 1e-5) with s = (6 - rating) / 5."""
    return {"doc_id": doc_id, "text": "harbour boats weather fishing", "references": {"a": "harbour boats",
                                                                                      "b": "weather fishing"},
            "summaries": {"a": "harbour", "b": "fishing"}, "reference_ratings": {("a", "b"): [reference_rating]},
            "model_ratings": {("a", "b"): [model_rating]}}


def degress_by_hand(reference_rating, model_rating):
    s_ref, s_model = (6 - reference_rating) / 5, (6 - model_rating) / 5
    return (min(s_ref, s_model) + EPS) / (max(s_ref, s_model) + EPS)


RATINGS = {"d1": (2, 3), "d2": (1, 1), "d3": (3, 5), "d4": (2, 2), "d5": (4, 2), "d6": (1, 4)}


def test_egises_hj_interval_over_documents_by_hand():
    result = egises_hj([two_user_document(d, *r) for d, r in RATINGS.items()])
    degress = {d: degress_by_hand(*r) for d, r in RATINGS.items()}
    assert result["per_document"] == pytest.approx(degress, rel=1e-12)
    interval = egises_interval(result["per_document"])
    values = np.array([degress[d] for d in sorted(degress)])
    egises = 1 - values.mean()
    assert interval["egises"] == pytest.approx(egises) == pytest.approx(result["egises_hj"])
    draws = np.random.default_rng(0).integers(0, 6, (2000, 6))
    samples = 1 - values[draws].mean(axis=1)
    assert interval["ci95"] == pytest.approx(reference_interval(samples, egises, 6), abs=1e-12)
    assert (interval["n_documents"], interval["n_clusters"], interval["dropped_resamples"]) == (6, 6, 0)


def test_paradox_flag_is_set_only_when_the_difference_interval_excludes_zero():
    """PX-1-c: richer C-2-shot w/o hist, plainer C-0-shot. Richer DEGRESS 0.1 lower on every
    document: EGISES(richer) - EGISES(plainer) = 0.1 in every resample: true. A difference
    whose sign depends on the documents drawn: not resolved (None)."""
    plain = {d: degress_by_hand(*r) for d, r in RATINGS.items()}
    richer = {d: v - 0.1 for d, v in plain.items()}
    test = paradox_tests({"C-0-shot": plain, "C-2-shot w/o hist": richer}, ["PX-1-c"])["PX-1-c"]
    assert test["holds"] is True and test["difference"] == pytest.approx(0.1)
    assert test["ci95"] == pytest.approx([0.1, 0.1])
    mixed = {d: v + (0.2 if k % 2 else -0.19) for k, (d, v) in enumerate(sorted(plain.items()))}
    undecided = paradox_tests({"C-0-shot": plain, "C-2-shot w/o hist": mixed}, ["PX-1-c"])["PX-1-c"]
    docs = sorted(plain)
    diff = np.array([plain[d] - mixed[d] for d in docs])  # EGISES(richer) - EGISES(plainer) per document
    samples = documented_cluster_draws(6, 2000) @ diff / 6
    assert undecided["difference"] == pytest.approx(diff.mean())
    assert undecided["ci95"] == pytest.approx(reference_interval(samples, diff.mean(), 6), abs=1e-12)
    assert undecided["ci95"][0] < 0 < undecided["ci95"][1] and undecided["holds"] is None
    few = paradox_tests({"C-0-shot": {"d1": 0.5}, "C-2-shot w/o hist": {"d1": 0.1}}, ["PX-1-c"])["PX-1-c"]
    assert few["holds"] is None and few["reason"] == "fewer than 5 clusters (1)"


# ------------------------------------------------------------------ HTML p-values
ZERO = re.compile(r"(?<![\d.])-?0\.000(?![\d])")


def test_html_never_prints_0_000_and_shows_tiny_p_values_as_below_0_001():
    """60 items where rougeL always sides with a clear majority and bleu never does: the
    correlations and the McNemar test have p-values far below 0.001."""
    n = 60
    rng = np.random.default_rng(4)
    item, who, value, s_item, s_metric, s_candidate, s_value = [], [], [], [], [], [], []
    for i in range(n):
        winner = "x" if i % 2 else "y"
        for k in range(3):
            item.append(i)
            who.append(f"ann{k}")
            value.append(winner if k < 2 or i % 3 else ("y" if winner == "x" else "x"))
        gap = rng.random() + 0.1
        for metric, sign in (("rougeL", 1), ("bleu", -1)):
            s_item += [i, i]
            s_metric += [metric, metric]
            s_candidate += ["x", "y"]
            s_value += ([sign * gap, 0.0] if winner == "x" else [0.0, sign * gap])
    inp = ReportInput(slug="tiny", kind="pairwise_alignment", config={}, item_ids=[f"i{i:02d}" for i in range(n)],
                      is_gold=[False] * n, gold=None, candidates=np.array([["x", "y"]] * n, dtype=object),
                      j_item=item, j_annotator=who, j_question=["choice"] * len(item), j_value=value,
                      j_shown=["x|y"] * len(item), s_item=s_item, s_metric=s_metric, s_candidate=s_candidate,
                      s_value=s_value)
    report = build_report(inp)
    assert report["correlations"]["rougeL"]["pearson"]["p_value"] < 1e-6
    assert report["metric_comparisons"][0]["p_value"] < 1e-6
    html = render(report, inp, "html")
    assert "&lt; 0.001" in html  # "< 0.001", escaped
    assert not ZERO.findall(html)


def test_infinite_scores_are_no_scores_for_picks_correlations_and_means_alike():
    """Issue 24: +-inf scores counted as alignment picks but left the correlations. A score
    that is not a finite number is now no score everywhere, and counted in coverage."""
    n = 6
    first = [0.9, 0.2, float("inf"), 0.7, float("-inf"), 0.4]
    inp = ReportInput(slug="inf", kind="pairwise_alignment", config={}, item_ids=[f"i{k}" for k in range(n)],
                      is_gold=[False] * n, gold=None, candidates=np.array([["x", "y"]] * n, dtype=object),
                      j_item=[k for k in range(n) for _ in range(3)], j_annotator=["a", "b", "c"] * n,
                      j_question=["choice"] * 3 * n, j_value=["x", "x", "y"] * n, j_shown=["x|y"] * 3 * n,
                      s_item=list(range(n)) * 2, s_metric=["m"] * 2 * n, s_candidate=["x"] * n + ["y"] * n,
                      s_value=first + [0.5] * n)
    report = build_report(inp)
    assert report["alignment"]["m"]["n"] == 4 == report["correlations"]["m"]["n"]
    assert report["coverage"]["m"]["n_nonfinite"] == 2 and report["coverage"]["m"]["n_scored"] == 4
    assert report["systems"]["x"]["metrics"]["m"]["n"] == 4
    assert "m: 2 items have a score of +-inf, left out as no score" in report["warnings"]
