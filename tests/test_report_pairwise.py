"""pairwise_alignment report on a hand-worked study (every number worked out below)."""
import csv
import io
import itertools
import json

import numpy as np
import pytest
from django.core.management import call_command
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from annotate.reports.data import fetch_report_input
from evaluation.alignment import wilson_ci
from evaluation.report import build_report
from tests.factories import make_judged_study, two

pytestmark = pytest.mark.django_db

# Items i1..i4 (candidates x, y) and the gold item g1 (gold answer "x").
#   item  ann1           ann2           ann3           majority
#   i1    x  (x|y) 10s   x  (y|x) 4s    y  (x|y) 3s    x
#   i2    y  (y|x) 20s   y  (x|y) 6s    y  (y|x) 1s    y
#   i3    x  (x|y) 30s   y  (x|y) 8s    -              none (1-1)
#   i4    x  (x|y) 40s   x  (x|y) 10s   x  (y|x) 2s    x
#   g1    x  (x|y)  5s   y  (x|y) 12s   -              (gold, left out)
JUDGMENTS = [
    ("i1", "ann1", "x", "x|y", 10), ("i1", "ann2", "x", "y|x", 4), ("i1", "ann3", "y", "x|y", 3),
    ("i2", "ann1", "y", "y|x", 20), ("i2", "ann2", "y", "x|y", 6), ("i2", "ann3", "y", "y|x", 1),
    ("i3", "ann1", "x", "x|y", 30), ("i3", "ann2", "y", "x|y", 8),
    ("i4", "ann1", "x", "x|y", 40), ("i4", "ann2", "x", "x|y", 10), ("i4", "ann3", "x", "y|x", 2),
    ("g1", "ann1", "x", "x|y", 5), ("g1", "ann2", "y", "x|y", 12),
]
ROUGE = {"i1": {"x": 0.5, "y": 0.3}, "i2": {"x": 0.2, "y": 0.4}, "i3": {"x": 0.1, "y": 0.2},
         "i4": {"x": 0.3, "y": 0.3}, "g1": {"x": 0.9, "y": 0.1}}
PREDICTIONS = [  # bleu scores as predictions rows; gemba as predicted choices
    ("i1", "bleu", "", "x", "1"), ("i1", "bleu", "", "y", "2"),
    ("i2", "bleu", "", "x", "1"), ("i2", "bleu", "", "y", "2"),
    ("i4", "bleu", "", "x", "5"), ("i4", "bleu", "", "y", "1"),
    ("i1", "gemba", "", "choice", "x"), ("i2", "gemba", "", "choice", "N/A"), ("i4", "gemba", "", "choice", ""),
]


def pairwise_study(slug="pw"):
    items = [(i, {"input": f"request {i}", "reference": f"ref {i}", "candidates": two(),
                  "metric_scores": {"rougeL": ROUGE[i]}}, "x" if i == "g1" else None)
             for i in ("i1", "i2", "i3", "i4", "g1")]
    judgments = [(i, who, "choice", v, shown, s) for i, who, v, shown, s in JUDGMENTS]
    return make_judged_study(slug, "pairwise_alignment", items, judgments, PREDICTIONS)


@pytest.fixture
def report():
    return build_report(fetch_report_input(pairwise_study()))


def test_header_counts(report):
    # 5 items (1 gold), 13 judgments, 3 annotators; i1, i2, i4 have 3 annotators each.
    assert {k: report[k] for k in ("study", "kind", "n_items", "n_gold_items", "n_judgments", "n_annotators",
                                   "complete_items")} == {
        "study": "pw", "kind": "pairwise_alignment", "n_items": 5, "n_gold_items": 1, "n_judgments": 13,
        "n_annotators": 3, "complete_items": 3}


def test_agreement(report):
    """Values per unit: i1 (x,x,y), i2 (y,y,y), i3 (x,y), i4 (x,x,x); n_x = 6, n_y = 5, n = 11.
    alpha: disagreeing coincidences o_xy + o_yx = i1 2*1*2/(3-1) + i3 1*1*2/(2-1) = 4;
           1 - (n-1) * 4 / (2 n_x n_y) = 1 - 10*4/60 = 1/3.
    Fleiss (generalised, every unit with >= 2 ratings): pi_x = (2/3 + 0 + 1/2 + 1)/4 = 13/24,
           pi_y = 11/24, P_e = 290/576; P_a = (1/3 + 1 + 0 + 1)/4 = 7/12;
           kappa = (168/288 - 145/288) / (143/288) = 23/143 over 4 units.
    percent: (1/3 + 1 + 0 + 1) / 4 = 7/12."""
    a = report["agreement"]["choice"]
    assert a["level"] == "nominal"
    assert a["krippendorff_alpha"] == pytest.approx(1 / 3)
    assert a["fleiss_kappa"] == pytest.approx(23 / 143)
    assert a["fleiss_n_units"] == 4
    assert a["percent_agreement"] == pytest.approx(7 / 12)
    assert a["n_units"] == 4
    assert list(report["agreement"]) == ["choice"]


def test_majority_and_win_rate(report):
    # majorities i1 x, i2 y, i4 x -> x wins 2/3, y 1/3; i3 has none; gold g1 is left out.
    assert report["majority"] == {"i1": "x", "i2": "y", "i3": None, "i4": "x"}
    assert report["no_majority"] == 1
    assert (report["too_few_votes"], report["tie_majority"], report["min_votes"]) == (0, 0, 2)
    assert report["majority_votes"] == {"3": 3}
    assert report["win_rate"] == {"x": pytest.approx(2 / 3), "y": pytest.approx(1 / 3)}


def test_alignment(report):
    """rougeL (from items): i1 x agree, i2 y agree, i4 0.3 = 0.3 tie -> (2 + 0.5)/3, strict 2/3.
    bleu (prediction rows): i1 y disagree, i2 y agree, i4 x agree -> 2/3.
    gemba (predicted choices): i1 x agree; N/A and unparsed left out -> 1/1."""
    al = report["alignment"]
    assert set(al) == {"rougeL", "bleu", "gemba"}
    assert al["rougeL"]["alignment"] == pytest.approx(2.5 / 3)
    assert al["rougeL"]["alignment_strict"] == pytest.approx(2 / 3)
    assert (al["rougeL"]["agree"], al["rougeL"]["ties"], al["rougeL"]["n"]) == (2, 1, 3)
    assert al["bleu"]["alignment"] == pytest.approx(2 / 3)
    assert (al["bleu"]["agree"], al["bleu"]["ties"], al["bleu"]["n"]) == (2, 0, 3)
    assert (al["gemba"]["alignment"], al["gemba"]["n"]) == (1.0, 1)
    # No interval from fewer than 5 items (statistics.md, "Clustered data"); the Wilson score
    # interval itself (statsmodels' proportion_confint) is checked in tests/evaluation.
    for metric, n in {"rougeL": 3, "bleu": 3, "gemba": 1}.items():
        assert (al[metric]["ci95"], al[metric]["ci95_strict"]) == (None, None)
        assert (al[metric]["ci_method"], al[metric]["n_clusters"], al[metric]["ci_reason"]) == (
            "Wilson score interval over items", n, f"fewer than 5 clusters ({n})")
    # One agreeing item is not [1, 1] (a percentile bootstrap's answer): Wilson gives [0.2065, 1].
    assert [round(v, 4) for v in wilson_ci(1, 1)] == [0.2065, 1.0]
    assert wilson_ci(2.5, 5) == pytest.approx(list(proportion_confint(2.5, 5, method="wilson")), abs=1e-12)


def test_metric_comparisons(report):
    """rougeL vs bleu on i1, i2, i4: only rougeL agrees on i1, only bleu on i4 (the rougeL tie
    counts as disagreement) -> b = c = 1, exact McNemar p = min(1, 2 * P(X <= 1 | 2, .5)) = 1.
    Pairs with gemba share only i1, where both agree -> b = c = 0 -> p = 1."""
    comps = {(c["a"], c["b"]): c for c in report["metric_comparisons"]}
    assert set(comps) == {("bleu", "gemba"), ("bleu", "rougeL"), ("gemba", "rougeL")}
    for c in comps.values():
        assert c["p_value"] == 1.0 and c["p_holm"] == 1.0


def test_position_bias(report):
    """One choice per screen, so each screen votes with its choice. Chose the first-shown
    option: ann1 i1 i2 i3 i4 (4/4), ann2 i4 (1/4), ann3 i2 (1/3): 6 of 11 screens. No
    annotator has the 5 voting screens the study-level t-test over annotators needs, so it
    has n = 0 and no p. Per annotator, exact binomial: 4/4 -> 2/16; 1/4 -> 2 * 5/16; 1/3 ->
    1; Holm over the three: .125 x 3 = .375, then max(.625 x 2, .375) = 1, 1."""
    bias = report["position_bias"]
    assert {k: bias[k] for k in ("first_shown_rate", "annotator_mean_rate", "n", "p_value", "ci95", "unit",
                                 "test_unit", "n_screens_all", "reason")} == {
        "first_shown_rate": pytest.approx(6 / 11), "annotator_mean_rate": None, "n": 0, "p_value": None, "ci95": None,
        "unit": "screen", "test_unit": "annotator", "n_screens_all": 11,
        "reason": "fewer than 2 annotators with >= 5 voting screens"}
    assert bias["per_question"]["choice"]["n_judgments"] == 11 and bias["per_question"]["choice"]["p_value"] is None
    rates = {name: (a["first_shown_rate"], a["first_shown_p_raw"], a["first_shown_p"], a["n_screens"])
             for name, a in report["annotators"].items()}
    assert rates == {"ann1": (1.0, 0.125, 0.375, 4), "ann2": (0.25, 0.625, 1.0, 4),
                     "ann3": (pytest.approx(1 / 3), pytest.approx(1.0), 1.0, 3)}


def test_annotators(report):
    """Median seconds over the judged items (gold too): ann1 5,10,20,30,40 -> 20;
    ann2 4,6,8,10,12 -> 8; ann3 1,2,3 -> 2. Gold g1 ("x"): ann1 right, ann2 wrong, ann3 none.
    Agreement with the others' strict majority, per question: ann1: i1 others x,y (none),
    i2 y=y, i3 others y != x, i4 x=x -> 2/3; ann2: i2 agree, i3 others x != y, i4 agree
    -> 2/3; ann3: i1 others x,x != y, i2, i4 agree -> 2/3."""
    a = report["annotators"]
    assert {n: v["judgments"] for n, v in a.items()} == {"ann1": 5, "ann2": 5, "ann3": 3}
    assert {n: v["median_seconds"] for n, v in a.items()} == {"ann1": 20.0, "ann2": 8.0, "ann3": 2.0}
    assert {n: v["gold_accuracy"] for n, v in a.items()} == {"ann1": 1.0, "ann2": 0.0, "ann3": None}
    assert {n: v["loo"] for n, v in a.items()} == {n: {"choice": pytest.approx(2 / 3)}
                                                   for n in ("ann1", "ann2", "ann3")}


def test_command_prints_one_json_document(capsys):
    pairwise_study("pw-cmd")
    call_command("report", "pw-cmd")
    printed = json.loads(capsys.readouterr().out)
    assert printed["study"] == "pw-cmd" and printed["n_judgments"] == 13
    assert printed["alignment"]["rougeL"]["alignment"] == pytest.approx(2.5 / 3)


def test_command_unknown_study_fails():
    from django.core.management.base import CommandError
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        call_command("report", "nope")


def test_csv_table():
    """One row per judged (item, question): counts per value, majority, metric picks; then an
    empty line and the correlation table (one row per metric and coefficient); then an empty
    line and the per-system table (issue 22)."""
    from evaluation.report import render
    inp = fetch_report_input(pairwise_study("pw-csv"))
    report = build_report(inp)
    text = render(report, inp, "csv")
    lines = text.strip().split("\n")
    assert lines[0] == "item_id,question,is_gold,n_judgments,majority,n_x,n_y,pick_bleu,pick_gemba,pick_rougeL"
    assert lines[1:6] == [
        "i1,choice,0,3,x,2,1,y,x,x",
        "i2,choice,0,3,y,0,3,y,N/A,y",
        "i3,choice,0,2,,1,1,,,y",
        "i4,choice,0,3,x,3,0,x,,tie",
        "g1,choice,1,2,,1,1,,,",
    ]
    assert lines[6] == ""
    assert lines[7] == ("correlation_table,metric,unit,n,coefficient,r,p_value,ci95_low,ci95_high,x,y,n_clusters,"
                        "ci_method,p_method")
    end = lines.index("", 8)
    assert lines[end + 1].startswith("systems_table,aspect,system,measure,value")
    rows = list(csv.reader(io.StringIO("\n".join(lines[8:end]))))
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [
        ("correlations", m, n, c) for m, n in (("bleu", "3"), ("rougeL", "4"))
        for c in ("pearson", "spearman", "kendall")]
    pearson = report["correlations"]["rougeL"]["pearson"]
    assert float(rows[3][5]) == pytest.approx(pearson["r"]) and rows[3][7:9] == ["", ""]  # Fisher z needs n >= 10
    assert rows[4][7:9] == ["", ""]  # Spearman's interval needs n >= 20
    assert rows[3][11:14] == ["4", "", "exact permutation (all n! orderings)"]


def test_item_correlations():
    """Items with >= 2 choices and both scores; x = score(x) - score(y), y = share of choices
    for x (the first candidate): rougeL i1 (0.2, 2/3), i2 (-0.2, 0), i3 (-0.1, 1/2), i4 (0, 1);
    bleu i1 (-1, 2/3), i2 (-1, 0), i4 (4, 1). Coefficients: scipy; p: all n! orderings
    (brute force here); no Fisher z interval below n = 10. gemba has no scores, no entry."""
    report = build_report(fetch_report_input(pairwise_study("pw-corr")))
    data = {"rougeL": ([0.2, -0.2, -0.1, 0.0], [2 / 3, 0.0, 0.5, 1.0]), "bleu": ([-1.0, -1.0, 4.0], [2 / 3, 0.0, 1.0])}
    assert set(report["correlations"]) == {"rougeL", "bleu"} and "correlations_system" not in report
    for metric, (x, y) in data.items():
        c = report["correlations"][metric]
        assert (c["n"], c["unit"]) == (len(x), "item")
        for method, f in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                          ("kendall", lambda a, b: stats.kendalltau(a, b, variant="b"))):
            r = f(x, y).statistic
            perms = [f(x, [y[i] for i in p]).statistic for p in itertools.permutations(range(len(x)))]
            assert c[method]["r"] == pytest.approx(r)
            assert c[method]["p_value"] == pytest.approx(np.mean([abs(v) >= abs(r) - 1e-12 for v in perms]))
        assert c["spearman"]["ci95"] is None and c["kendall"]["ci95"] is None
        assert c["pearson"]["ci95"] is None and c["pearson"]["ci_reason"] == "Fisher z needs n >= 10"


def test_pairwise_kappa_lists_pairs_with_ten_shared_items():
    """Twelve items z01..z12 and a gold item everyone answers differently (left out).
        ann1: x x x x x x y y y y y y     ann2: x x x x y y y y y y y y
        ann3: x x x x x y y y y x - -     (10 items)
    ann1-ann2: po = 10/12, pe = 6/12*4/12 + 6/12*8/12 = 1/2, kappa = 2/3.
    ann1-ann3 (z01..z10): po = 8/10, pe = .6*.6 + .4*.4 = .52, kappa = .28/.48 = 7/12.
    ann2-ann3 (z01..z10): po = 8/10, pe = .4*.6 + .6*.4 = .48, kappa = .32/.52 = 8/13.
    Listed lowest first; the pairs in the small fixture study (< 10 shared) are not listed."""
    answers = {"ann1": "xxxxxxyyyyyy", "ann2": "xxxxyyyyyyyy", "ann3": "xxxxxyyyyx"}
    ids = [f"z{k:02d}" for k in range(1, 13)]
    items = [(i, {"input": i, "reference": "r", "candidates": two()}, None) for i in ids]
    items.append(("g1", {"input": "g", "reference": "r", "candidates": two()}, "x"))
    judgments = [(ids[k], who, "choice", v, "x|y", 5) for who, row in answers.items() for k, v in enumerate(row)]
    judgments += [("g1", "ann1", "choice", "x", "x|y", 5), ("g1", "ann2", "choice", "y", "x|y", 5),
                  ("g1", "ann3", "choice", "y", "x|y", 5)]
    report = build_report(fetch_report_input(make_judged_study("kappa", "pairwise_alignment", items, judgments)))
    assert report["pairwise_kappa"]["choice"] == [
        {"a": "ann1", "b": "ann3", "kappa": pytest.approx(7 / 12), "n": 10},
        {"a": "ann2", "b": "ann3", "kappa": pytest.approx(8 / 13), "n": 10},
        {"a": "ann1", "b": "ann2", "kappa": pytest.approx(2 / 3), "n": 12},
    ]
    small = build_report(fetch_report_input(pairwise_study("pw-small")))
    assert small["pairwise_kappa"] == {"choice": []}
