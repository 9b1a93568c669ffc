"""explanation_choice, similarity_survey and aspect_pairwise reports on hand-worked studies."""
from datetime import UTC, datetime, timedelta

import krippendorff
import numpy as np
import pytest
from scipy import stats

from annotate.reports.data import fetch_report_input
from evaluation.report import build_report
from tests.factories import make_judged_study, two

pytestmark = pytest.mark.django_db
EPS = 1e-5


def report_of(study):
    return build_report(fetch_report_input(study))


# ---------------------------------------------------------------- explanation_choice
#   item  ExPerT x / y   ann1            ann2            ann3
#   e1    0.8 / 0.4      x (x|y) u5      x (y|x) u4      y (x|y) u2
#   e2    0.2 / 0.6      y (x|y) u3      x (x|y) u3      y (y|x) u4
#   e3    0.5 / 0.5      x (x|y) u1      y (y|x) u2      -
EXPLAINED = {"e1": (0.8, 0.4), "e2": (0.2, 0.6), "e3": (0.5, 0.5)}
EX_ROWS = [("e1", "ann1", "x", "x|y", 5), ("e1", "ann2", "x", "y|x", 4), ("e1", "ann3", "y", "x|y", 2),
           ("e2", "ann1", "y", "x|y", 3), ("e2", "ann2", "x", "x|y", 3), ("e2", "ann3", "y", "y|x", 4),
           ("e3", "ann1", "x", "x|y", 1), ("e3", "ann2", "y", "y|x", 2)]


@pytest.fixture
def explanation_report():
    items = [(i, {"input": "req", "reference": "ref", "candidates": two(),
                  "explanations": {"x": {"score": sx, "matches": []}, "y": {"score": sy, "matches": []}}}, None)
             for i, (sx, sy) in EXPLAINED.items()]
    judgments = []
    for item, who, choice, shown, useful in EX_ROWS:
        judgments += [(item, who, "choice", choice, shown, 7.0), (item, who, "usefulness", str(useful), "", 7.0)]
    return report_of(make_judged_study("ex", "explanation_choice", items, judgments))


def test_explanation_choice_keys(explanation_report):
    """Higher ExPerT: e1 x, e2 y (e3 equal, left out). Choices on e1: x x y, on e2: y x y
    -> 4 of 6 match. Usefulness 5 4 2 3 3 4 1 2: mean 24/8 = 3, squared deviations sum
    4+1+1+0+0+1+4+1 = 12 -> sd = sqrt(12/7). Majority e1 x, e2 y, e3 none; the `expert`
    metric picks x on e1 and y on e2 -> alignment 2/2. Both rest on 3 items: no interval
    (fewer than 5 clusters)."""
    r = explanation_report
    assert r["choice_matches_expert"] == pytest.approx(4 / 6)
    assert {k: r["choice_matches_expert_detail"][k] for k in ("share", "n", "n_items", "ci95", "ci_reason")} == {
        "share": pytest.approx(4 / 6), "n": 6, "n_items": 2, "ci95": None, "ci_reason": "fewer than 5 clusters (2)"}
    assert {k: r["usefulness"][k] for k in ("mean", "sd", "n", "n_items", "ci95", "n_clusters")} == {
        "mean": pytest.approx(3.0), "sd": pytest.approx((12 / 7) ** 0.5), "n": 8, "n_items": 3, "ci95": None,
        "n_clusters": 3}
    assert r["majority"] == {"e1": "x", "e2": "y", "e3": None} and r["no_majority"] == 1
    assert r["win_rate"] == {"x": 0.5, "y": 0.5}
    assert r["alignment"]["expert"]["alignment"] == 1.0 and r["alignment"]["expert"]["n"] == 2
    assert r["metric_comparisons"] == []


def test_explanation_choice_agreement(explanation_report):
    """choice: units (x,x,y) (y,x,y) (x,y); n_x = n_y = 4, n = 8; disagreeing coincidences
    2 + 2 + 2 = 6 -> alpha = 1 - 7*6/(2*4*4) = -0.3125.
    usefulness, interval: within-unit ordered squared differences / (m-1): e1 (5,4,2) 28/2,
    e2 (3,3,4) 4/2, e3 (1,2) 2/1 -> 18; all pairs 2*8*12 = 192 -> 1 - 7*18/192 = 0.34375.
    ordinal: midranks 1->0.5, 2->2, 3->4, 4->6, 5->7.5; within 97/2 + 16/2 + 4.5/1 = 61;
    all pairs 2*8*40.5 = 648 -> 1 - 7*61/648 = 221/648.
    Fleiss, generalised (r = 3, 3, 2): pi_1 = (1/2)/3, pi_2 = (1/3 + 1/2)/3, pi_3 = (2/3)/3,
    pi_4 = (2/3)/3, pi_5 = (1/3)/3 -> P_e = 70/324; P_a = (0 + 1/3 + 0)/3 = 1/9
    -> (18/162 - 35/162)/(127/162) = -17/127 over 3 units. Percent: (0 + 1/3 + 0)/3 = 1/9."""
    a = explanation_report["agreement"]
    assert a["choice"]["krippendorff_alpha"] == pytest.approx(-0.3125)
    u = a["usefulness"]
    assert (u["level"], u["n_units"]) == ("interval", 3)
    assert u["krippendorff_alpha"] == pytest.approx(0.34375)
    assert u["krippendorff_alpha_ordinal"] == pytest.approx(221 / 648)
    assert u["fleiss_kappa"] == pytest.approx(-17 / 127) and u["fleiss_n_units"] == 3
    assert u["percent_agreement"] == pytest.approx(1 / 9)


def test_explanation_choice_position_bias(explanation_report):
    """One choice per screen. First-shown choices: e1 ann1; e2 ann2, ann3; e3 ann1, ann2 -> 5 of
    8 screens. Nobody has the 5 voting screens of the test over annotators: no p."""
    bias = explanation_report["position_bias"]
    assert {k: bias[k] for k in ("first_shown_rate", "n_screens_all", "n", "p_value", "unit")} == {
        "first_shown_rate": 0.625, "n_screens_all": 8, "n": 0, "p_value": None, "unit": "screen"}
    assert list(bias["per_question"]) == ["choice"]


def test_explanation_choice_loo_per_question(explanation_report):
    """Issue 13, item 7: never pooled across questions. choice (others' strict majority):
    ann1 e1 (x,y) none, e2 (x,y) none, e3 (y) != x -> 0/1; ann2 e2 (y,y) != x, e3 (x) != y
    -> 0/2; ann3 e1 (x,x) != y, e2 none -> 0/1. usefulness (|rating - median of the
    others|, units with >= 2 others): ann1 e1 |5-3| e2 |3-3.5| -> 1.25; ann2 |4-3.5|,
    |3-3.5| -> .5; ann3 |2-4.5|, |4-3| -> 1.75."""
    loo = {n: a["loo"] for n, a in explanation_report["annotators"].items()}
    assert loo == {"ann1": {"choice": 0.0, "usefulness": 1.25}, "ann2": {"choice": 0.0, "usefulness": 0.5},
                   "ann3": {"choice": 0.0, "usefulness": 1.75}}


def test_explanation_choice_correlations(explanation_report):
    """`expert` (item level): x = ExPerT(x) - ExPerT(y), y = share of choices for x:
    e1 (0.4, 2/3), e2 (-0.4, 1/3), e3 (0, 1/2) -> every coefficient 1, exact p 2/3! = 1/3.
    expert_chosen_vs_usefulness (per judgment): ExPerT of the chosen candidate vs the same
    annotator's usefulness: (.8, 5) (.8, 4) (.4, 2) (.6, 3) (.2, 3) (.6, 4) (.5, 1) (.5, 2);
    coefficients from scipy. The judgments nest in 3 items: no permutation p (it assumes
    independent units) and no cluster bootstrap below 20 units and 5 items."""
    c = explanation_report["correlations"]
    assert c["expert"]["n"] == 3
    for method in ("pearson", "spearman", "kendall"):
        assert c["expert"][method]["r"] == pytest.approx(1.0)
        assert c["expert"][method]["p_value"] == pytest.approx(1 / 3)
    x = [0.8, 0.8, 0.4, 0.6, 0.2, 0.6, 0.5, 0.5]
    y = [5, 4, 2, 3, 3, 4, 1, 2]
    u = c["expert_chosen_vs_usefulness"]
    assert (u["n"], u["unit"]) == (8, "judgment")
    assert u["n_clusters"] == 3
    assert u["spearman"]["r"] == pytest.approx(stats.spearmanr(x, y).statistic)
    assert u["pearson"]["r"] == pytest.approx(stats.pearsonr(x, y).statistic)
    for method in ("pearson", "spearman", "kendall"):
        assert (u[method]["p_value"], u[method]["ci95"]) == (None, None)
        assert u[method]["p_reason"] == "clustered units: intervals and p-values need n >= 20 and >= 5 items"


# ---------------------------------------------------------------- similarity_survey
STYLES = {"m-c0": "C-0-shot", "m-c2": "C-2-shot w/o hist", "m-c2h": "C-2-shot w/ hist"}


def survey_item(doc, users):
    pairs = [{"id": "ref", "source": "reference", "texts": [f"reference summary harbour fishing {u}" for u in users]}]
    pairs += [{"id": pid, "source": "model", "model": "m", "prompt_style": style,
               "texts": [f"generated summary {pid} boats weather {u}" for u in users]} for pid, style in STYLES.items()]
    return {"document": {"id": doc, "title": "Harbour news",
                         "text": "Fishing boats returned to the harbour after storms."},
            "users": users, "pairs": pairs}


# Ratings (ann1, ann2); sigma = (6 - mean) / 5.
#   item (doc, users)   ref      m-c0     m-c2     m-c2h
#   s1 (d1, u1 u2)      2 4 .6   5 5 .2   3 3 .6   6 6 0
#   s2 (d2, u1 u3)      1 1 1    6 6 0    1 2 .9   -  (no rating: skipped)
SURVEY = {"s1": {"ref": (2, 4), "m-c0": (5, 5), "m-c2": (3, 3), "m-c2h": (6, 6)},
          "s2": {"ref": (1, 1), "m-c0": (6, 6), "m-c2": (1, 2)}}


@pytest.fixture
def survey_report():
    items = [("s1", survey_item("d1", ["u1", "u2"]), None), ("s2", survey_item("d2", ["u1", "u3"]), None),
             ("s3", survey_item("d3", ["u4", "u5"]), {"ref": 6})]
    judgments = [(item, who, pid, str(r), "0|1", 30.0)
                 for item, by_pair in SURVEY.items() for pid, ratings in by_pair.items()
                 for who, r in zip(("ann1", "ann2"), ratings)]
    judgments += [("s3", "ann1", "ref", "6", "1|0", 9.0), ("s3", "ann2", "ref", "5", "0|1", 9.0)]
    return report_of(make_judged_study("sim", "similarity_survey", items, judgments, overlap=2))


def test_similarity_mean_and_agreement(survey_report):
    """Means over non-gold ratings: ref (2+4+1+1)/4, m-c0 (5+5+6+6)/4, m-c2 (3+3+1+2)/4, m-c2h 6.
    One survey-level entry over (item, pair) units (s3 is gold): values 2,4 5,5 3,3 6,6 | 1,1
    6,6 1,2, n = 14, mean 51/14, sum of squared deviations 745/14 -> expected 2*14*745/14 =
    1490; within units (2-4)^2*2/1 + (1-2)^2*2/1 = 10 -> alpha = 1 - 13*10/1490 = 136/149."""
    r = survey_report
    assert r["mean_similarity"] == {"m-c0": 5.5, "m-c2": 2.25, "m-c2h": 6.0, "ref": 2.0}
    assert list(r["agreement"]) == ["similarity"]
    a = r["agreement"]["similarity"]
    assert (a["level"], a["n_units"], a["n_values"]) == ("interval", 7, 14)
    assert a["krippendorff_alpha"] == pytest.approx(136 / 149)
    data = np.array([[2, 5, 3, 6, 1, 6, 1], [4, 5, 3, 6, 1, 6, 2]], float)
    assert a["krippendorff_alpha"] == pytest.approx(krippendorff.alpha(data, level_of_measurement="interval"))
    assert a["krippendorff_alpha_ordinal"] == pytest.approx(krippendorff.alpha(data, level_of_measurement="ordinal"))
    bias = r["position_bias"]
    assert (bias["first_shown_rate"], bias["n"], bias["p_value"], bias["n_screens_all"], bias["per_question"]) == (
        None, 0, None, 0, {})
    assert r["jsd_preprocessing"][:4] == ["remove_punctuation", "lowercase", "remove_digits", "tokenize_treebank"]
    assert r["egises_hj_errors"] == [] and r["correlations"] == {}
    assert {n: a["gold_accuracy"] for n, a in r["annotators"].items()} == {"ann1": 1.0, "ann2": 0.0}


def test_similarity_egises_hj_and_paradoxes(survey_report):
    """With two users per document the softmax has one term (weight 1), so
    prop = (min(s_ref, s_model) + 1e-5) / (max + 1e-5) and EGISES-HJ = 1 - mean over documents.
    C-0-shot: d1 (.6, .2), d2 (1, 0). C-2-shot w/o hist: d1 (.6, .6), d2 (1, .9).
    C-2-shot w/ hist: d1 (.6, 0); d2 has no m-c2h rating: skipped (1).
    PX-5 = EGISES(C-2-shot w/ hist) >= EGISES(C-0-shot) (true by the point values);
    PX-6 = EGISES(C-2-shot w/o hist) >= EGISES(C-0-shot) (false by them). Two documents give
    no interval of the difference, so neither flag is resolved (null)."""
    prop = lambda a, b: (min(a, b) + EPS) / (max(a, b) + EPS)  # noqa: E731
    hj = survey_report["egises_hj"]["m"]
    assert hj["C-0-shot"] == pytest.approx(1 - (prop(0.6, 0.2) + prop(1.0, 0.0)) / 2)
    assert hj["C-2-shot w/o hist"] == pytest.approx(1 - (prop(0.6, 0.6) + prop(1.0, 0.9)) / 2)
    assert hj["C-2-shot w/ hist"] == pytest.approx(1 - prop(0.6, 0.0))
    assert survey_report["egises_hj_skipped"] == 1
    assert survey_report["paradoxes"] == {"m": {"PX-5": None, "PX-6": None}}
    detail = survey_report["paradoxes_detail"]["m"]
    assert detail["PX-5"]["difference"] == pytest.approx(hj["C-2-shot w/ hist"] - hj["C-0-shot"])
    assert detail["PX-6"]["difference"] == pytest.approx(hj["C-2-shot w/o hist"] - hj["C-0-shot"])
    assert detail["PX-5"]["difference"] > 0 > detail["PX-6"]["difference"]
    assert (detail["PX-5"]["probe"], detail["PX-5"]["n_documents"], detail["PX-5"]["reason"]) == (
        "PX-1-h-c", 2, "fewer than 5 clusters (2)")
    one = survey_report["egises_hj_detail"]["m"]["C-2-shot w/ hist"]
    assert (one["egises"], one["n_documents"], one["ci95"]) == (pytest.approx(hj["C-2-shot w/ hist"]), 1, None)


# ---------------------------------------------------------------- aspect_pairwise
T0 = datetime(2026, 1, 1, tzinfo=UTC)
# Candidates a1 (p, q), a2 (r, s), a3 (p, q); every order shown as the candidates' order.
#   item  ann1 fun/end t   ann2 fun/end t   ann3 fun/end t
#   a1    p q  1           p p  4           q q  7
#   a2    s s  2           r s  5           -
#   a3    p p  3           q q  6           p q  8
ASPECT_ROWS = [("a1", "ann1", "p", "q", 1), ("a2", "ann1", "s", "s", 2), ("a3", "ann1", "p", "p", 3),
               ("a1", "ann2", "p", "p", 4), ("a2", "ann2", "r", "s", 5), ("a3", "ann2", "q", "q", 6),
               ("a1", "ann3", "q", "q", 7), ("a3", "ann3", "p", "q", 8)]
CANDS = {"a1": ("p", "q"), "a2": ("r", "s"), "a3": ("p", "q")}
ASPECT_PREDICTIONS = [
    ("a1", "llm", "", "fun", "p"), ("a2", "llm", "", "fun", "N/A"), ("a3", "llm", "", "fun", ""),
    ("a1", "llm", "", "end", "q"), ("a2", "llm", "", "end", "s"), ("a3", "llm", "", "end", "p"),
    ("a1", "perse", "ann1", "end", "q"), ("a2", "perse", "ann1", "end", "r"), ("a3", "perse", "ann1", "end", "p"),
]


@pytest.fixture
def aspect_report():
    items = [(i, {"premise": f"premise {i}", "candidates": two(*c)}, None) for i, c in CANDS.items()]
    judgments = []
    for item, who, fun, end, t in ASPECT_ROWS:
        shown = "|".join(CANDS[item])
        when = T0 + timedelta(minutes=t)
        judgments += [(item, who, "fun", fun, shown, 20.0, when), (item, who, "end", end, shown, 20.0, when)]
    aspects = [{"key": "fun", "question": "More fun?"}, {"key": "end", "question": "Better ending?"}]
    return report_of(make_judged_study("asp", "aspect_pairwise", items, judgments, ASPECT_PREDICTIONS,
                                config={"aspects": aspects}))


def test_aspect_agreement_and_majority(aspect_report):
    """fun: units (p,p,q) (s,r) (p,q,p): n = 8, counts p4 q2 r1 s1; disagreeing coincidences
    2 + 2 + 2 = 6; expected 64 - 22 = 42 -> alpha = 1 - 7*6/42 = 0. Majorities a1 p, a3 p.
    end: (q,p,q) (s,s) (p,q,q): q4 p2 s2; disagreements 2 + 0 + 2 = 4; expected 64 - 24 = 40
    -> 1 - 7*4/40 = 0.3. Majorities a1 q, a2 s, a3 q -> q 2/3, s 1/3."""
    a = aspect_report["aspects"]
    assert list(a) == ["fun", "end"]
    assert a["fun"]["krippendorff_alpha"] == pytest.approx(0.0)
    assert a["end"]["krippendorff_alpha"] == pytest.approx(0.3)
    assert a["fun"]["majority_share"] == {"p": 1.0}
    assert a["end"]["majority_share"] == {"q": pytest.approx(2 / 3), "s": pytest.approx(1 / 3)}


def test_aspect_evaluators(aspect_report):
    """llm fun: a1 p right for ann1, ann2, wrong for ann3; a2 N/A wrong twice; a3 unparsed
    (3 dropped) -> 2/5 lenient, 2/8 strict. llm end: a1 q 2 right, a2 s 2, a3 p 1 -> 5/8.
    perse (ann1 only, end): a1 q right, a2 r wrong, a3 p right -> 2/3; the 5 judgments of
    others have no prediction -> strict 2/8.
    reviewer_prior (earliest other judgment's position, mapped onto the predicted item):
    fun ann1 a1<-a2 pos 1 q wrong, a2<-a1 pos 0 r wrong, a3<-a1 p right; ann2 a1<-a2 pos 0 p
    right, a2<-a1 r right, a3<-a1 p wrong; ann3 a1<-a3 p wrong, a3<-a1 q wrong -> 3/8.
    end ann1 a1<-a2 q right, a2<-a1 s right, a3<-a1 q wrong; ann2 a1<-a2 q wrong, a2<-a1 r
    wrong, a3<-a1 p wrong; ann3 a1<-a3 q right, a3<-a1 q right -> 4/8."""
    fun, end = aspect_report["aspects"]["fun"]["evaluators"], aspect_report["aspects"]["end"]["evaluators"]
    keys = ("accuracy", "accuracy_strict", "n")
    assert {k: fun["llm"][k] for k in keys} == {"accuracy": 0.4, "accuracy_strict": 0.25, "n": 8}
    assert {k: end["llm"][k] for k in keys} == {"accuracy": 0.625, "accuracy_strict": 0.625, "n": 8}
    assert {k: end["perse"][k] for k in keys} == {"accuracy": pytest.approx(2 / 3), "accuracy_strict": 0.25, "n": 8}
    assert (fun["llm"]["ci95"], fun["llm"]["n_clusters"], fun["llm"]["ci_reason"]) == (
        None, 2, "fewer than 5 clusters (2)")  # a3's predictions are unparsed: a1, a2 remain
    assert "perse" not in fun
    assert fun["reviewer_prior"]["accuracy"] == 0.375 and end["reviewer_prior"]["accuracy"] == 0.5
    # perse predicts one of the two aspects: no average (statistics.md: null unless every aspect).
    assert aspect_report["evaluators_average"] == {
        "llm": pytest.approx((0.4 + 0.625) / 2), "perse": None,
        "reviewer_prior": pytest.approx((0.375 + 0.5) / 2)}
    assert aspect_report["aspects_covered"] == {"llm": 2, "perse": 1, "reviewer_prior": 2}


def test_aspect_position_bias(aspect_report):
    """One vote per screen (item, annotator) over its two choices (first-shown = the
    candidates' order): a1 ann1 p,q split; a2 ann1 s,s second; a3 ann1 p,p first; a1 ann2
    p,p first; a2 ann2 r,s split; a3 ann2 q,q second; a1 ann3 q,q second; a3 ann3 p,q split
    -> 2 "first" of 5 votes. Per annotator: ann1 1/2, ann2 1/2, ann3 0/1 (exact p = 1, Holm
    1). Per question each choice votes: fun 5 of 8 first, end 2 of 8. Nobody has 5 votes,
    so neither the study-level nor a question's test over annotators has a p."""
    bias = aspect_report["position_bias"]
    assert {k: bias[k] for k in ("first_shown_rate", "n_screens_all", "n", "p_value", "unit")} == {
        "first_shown_rate": 0.4, "n_screens_all": 5, "n": 0, "p_value": None, "unit": "screen"}
    assert {q: (v["n_judgments"], v["n"], v["p_value"], v["p_holm"]) for q, v in bias["per_question"].items()} == {
        "fun": (8, 0, None, None), "end": (8, 0, None, None)}
    assert {n: (a["first_shown_rate"], a["first_shown_p"], a["n_screens"])
            for n, a in aspect_report["annotators"].items()} == {
        "ann1": (0.5, 1.0, 2), "ann2": (0.5, 1.0, 2), "ann3": (0.0, 1.0, 1)}
