"""explanation_choice, similarity_survey and aspect_pairwise reports on hand-worked studies."""
from datetime import datetime, timedelta, timezone

import pytest

from annotate.report_data import fetch_report_input
from evaluation.report import build_report
from report_helpers import make_study, two

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
    return report_of(make_study("ex", "explanation_choice", items, judgments))


def test_explanation_choice_keys(explanation_report):
    """Higher ExPerT: e1 x, e2 y (e3 equal, left out). Choices on e1: x x y, on e2: y x y
    -> 4 of 6 match. Usefulness 5 4 2 3 3 4 1 2: mean 24/8 = 3, squared deviations sum
    4+1+1+0+0+1+4+1 = 12 -> sd = sqrt(12/7). Majority e1 x, e2 y, e3 none; the `expert`
    metric picks x on e1 and y on e2 -> alignment 2/2."""
    r = explanation_report
    assert r["choice_matches_expert"] == pytest.approx(4 / 6)
    assert r["usefulness"] == {"mean": pytest.approx(3.0), "sd": pytest.approx((12 / 7) ** 0.5), "n": 8}
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
    Fleiss (units with 3 ratings: e1, e2): P = (0 + 1/3)/2 = 1/6, P_e = (1+4+1+4)/36
    -> (1/6 - 10/36)/(26/36) = -4/26. Percent: (0 + 1/3 + 0)/3 = 1/9."""
    a = explanation_report["agreement"]
    assert a["choice"]["krippendorff_alpha"] == pytest.approx(-0.3125)
    u = a["usefulness"]
    assert (u["level"], u["n_units"]) == ("interval", 3)
    assert u["krippendorff_alpha"] == pytest.approx(0.34375)
    assert u["krippendorff_alpha_ordinal"] == pytest.approx(221 / 648)
    assert u["fleiss_kappa"] == pytest.approx(-4 / 26)
    assert u["percent_agreement"] == pytest.approx(1 / 9)


def test_explanation_choice_position_bias(explanation_report):
    """First-shown choices: e1 ann1; e2 ann2, ann3; e3 ann1, ann2 -> 5 of 8;
    two-sided exact binomial p = 2 * (56 + 28 + 8 + 1) / 256."""
    assert explanation_report["position_bias"] == {
        "first_shown_rate": 0.625, "n": 8, "p_value": pytest.approx(186 / 256)}


# ---------------------------------------------------------------- similarity_survey
STYLES = {"m-c0": "C-0-shot", "m-c2": "C-2-shot w/o hist", "m-c2h": "C-2-shot w/ hist"}


def survey_item(doc, users):
    pairs = [{"id": "ref", "source": "reference", "texts": [f"reference summary harbour fishing {u}" for u in users]}]
    pairs += [{"id": pid, "source": "model", "model": "m", "prompt_style": style,
               "texts": [f"generated summary {pid} boats weather {u}" for u in users]} for pid, style in STYLES.items()]
    return {"document": {"id": doc, "title": "Harbour news", "text": "Fishing boats returned to the harbour after storms."},
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
    return report_of(make_study("sim", "similarity_survey", items, judgments, overlap=2))


def test_similarity_mean_and_agreement(survey_report):
    """Means over non-gold ratings: ref (2+4+1+1)/4, m-c0 (5+5+6+6)/4, m-c2 (3+3+1+2)/4, m-c2h 6.
    ref alpha (interval): values 2,4 | 1,1, mean 2, squared deviations 6 -> all pairs 48;
    within (2-4)^2 * 2 / 1 = 8 -> 1 - 3*8/48 = 0.5. m-c0: no disagreement inside units -> 1.
    m-c2h: one unit of identical values -> undefined (null)."""
    r = survey_report
    assert r["mean_similarity"] == {"m-c0": 5.5, "m-c2": 2.25, "m-c2h": 6.0, "ref": 2.0}
    assert r["agreement"]["ref"]["krippendorff_alpha"] == pytest.approx(0.5)
    assert r["agreement"]["m-c0"]["krippendorff_alpha"] == pytest.approx(1.0)
    assert r["agreement"]["m-c2h"]["krippendorff_alpha"] is None
    assert r["position_bias"] == {"first_shown_rate": None, "n": 0, "p_value": None}
    assert {n: a["gold_accuracy"] for n, a in r["annotators"].items()} == {"ann1": 1.0, "ann2": 0.0}


def test_similarity_egises_hj_and_paradoxes(survey_report):
    """With two users per document the softmax has one term (weight 1), so
    prop = (min(s_ref, s_model) + 1e-5) / (max + 1e-5) and EGISES-HJ = 1 - mean over documents.
    C-0-shot: d1 (.6, .2), d2 (1, 0). C-2-shot w/o hist: d1 (.6, .6), d2 (1, .9).
    C-2-shot w/ hist: d1 (.6, 0); d2 has no m-c2h rating: skipped (1).
    PX-5 = EGISES(C-2-shot w/ hist) >= EGISES(C-0-shot) (true here);
    PX-6 = EGISES(C-2-shot w/o hist) >= EGISES(C-0-shot) (false)."""
    prop = lambda a, b: (min(a, b) + EPS) / (max(a, b) + EPS)  # noqa: E731
    hj = survey_report["egises_hj"]["m"]
    assert hj["C-0-shot"] == pytest.approx(1 - (prop(0.6, 0.2) + prop(1.0, 0.0)) / 2)
    assert hj["C-2-shot w/o hist"] == pytest.approx(1 - (prop(0.6, 0.6) + prop(1.0, 0.9)) / 2)
    assert hj["C-2-shot w/ hist"] == pytest.approx(1 - prop(0.6, 0.0))
    assert survey_report["egises_hj_skipped"] == 1
    assert survey_report["paradoxes"] == {"m": {"PX-5": True, "PX-6": False}}


# ---------------------------------------------------------------- aspect_pairwise
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
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
    return report_of(make_study("asp", "aspect_pairwise", items, judgments, ASPECT_PREDICTIONS,
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
    assert fun["llm"] == {"accuracy": 0.4, "accuracy_strict": 0.25, "n": 8}
    assert end["llm"] == {"accuracy": 0.625, "accuracy_strict": 0.625, "n": 8}
    assert end["perse"] == {"accuracy": pytest.approx(2 / 3), "accuracy_strict": 0.25, "n": 8}
    assert "perse" not in fun
    assert fun["reviewer_prior"]["accuracy"] == 0.375 and end["reviewer_prior"]["accuracy"] == 0.5
    assert aspect_report["evaluators_average"] == {
        "llm": pytest.approx((0.4 + 0.625) / 2), "perse": pytest.approx(2 / 3),
        "reviewer_prior": pytest.approx((0.375 + 0.5) / 2)}


def test_aspect_position_bias(aspect_report):
    """Chose the first-shown candidate: fun a1 ann1 ann2, a2 ann2, a3 ann1 ann3 (5 of 8);
    end a1 ann2, a3 ann1 (2 of 8) -> 7 of 16; exact two-sided p = 2 * P(X <= 7 | 16, .5)
    = 2 * 26333 / 65536."""
    assert aspect_report["position_bias"] == {
        "first_shown_rate": 7 / 16, "n": 16, "p_value": pytest.approx(2 * 26333 / 65536)}
