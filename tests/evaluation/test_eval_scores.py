"""Paradoxes, Per-DOC aspect accuracy, reviewer_prior, ExPerT score."""
import pytest

from evaluation.expert_score import corpus_score, expert_scores
from evaluation.perdoc import aspect_accuracy, reviewer_prior
from evaluation.personalization.paradoxes import STYLES, paradoxes


def test_paradoxes_probes_and_summary():
    scores = dict(zip(STYLES, [0.50, 0.55, 0.45, 0.40, 0.40, None]))
    result = paradoxes(scores)
    assert result["probes"] == {
        "PX-1": True,       # 0.55 >= 0.50
        "PX-1-h": False,    # 0.45 <  0.50
        "PX-1-c": True,     # 0.40 >= 0.40 (equal counts as a paradox)
        "PX-1-h-c": None,   # C-2-shot w/ hist missing
        "PX-2": False,      # 0.45 <  0.55
        "PX-2-c": None,
        "PX-3": False,      # 0.40 <  0.50
        "PX-4": False,      # 0.40 <  0.55
        "PX-5": None,
    }
    assert result["summary"] == {"PX-1": True, "PX-2": False, "PX-3": False,
                                 "PX-4": False, "PX-5": None, "PX-6": True}
    with pytest.raises(ValueError, match="unknown prompt style"):
        paradoxes({"3-shot": 0.1})


def test_aspect_accuracy_lenient_strict_and_na():
    """Four judgments: i1/ann1 right (own prediction), i1/ann2 right (non-personalized
    fallback "A"), i2/ann1 unparsed (""), i2/ann2 "N/A" (wrong in both).
    accuracy = 2 / 3 parsed; accuracy_strict = 2 / 4."""
    judgments = [("i1", "ann1", "B"), ("i1", "ann2", "A"), ("i2", "ann1", "A"),
                 ("i2", "ann2", "B")]
    predictions = {("i1", "ann1"): "B", ("i1", ""): "A", ("i2", "ann1"): "",
                   ("i2", "ann2"): "N/A"}
    assert aspect_accuracy(judgments, predictions) == {
        "accuracy": 2 / 3, "accuracy_strict": 0.5, "n": 4, "n_unparsed": 1}
    assert aspect_accuracy([], {})["accuracy"] is None


def test_reviewer_prior_uses_earliest_other_judgment():
    """ann1 judged i1 (t=1, A), i2 (t=2, B), i3 (t=3, B): i1 is predicted by the earliest
    other judgment i2 (B); i2 and i3 by i1 (A). ann2 judged only i1 -> N/A."""
    rows = [("i2", "ann1", "B", 2), ("i1", "ann1", "A", 1), ("i3", "ann1", "B", 3),
            ("i1", "ann2", "A", 5)]
    assert reviewer_prior(rows) == {("i1", "ann1"): "B", ("i2", "ann1"): "A",
                                    ("i3", "ann1"): "A", ("i1", "ann2"): "N/A"}
    # Missing times sort after timed judgments; equal times go by item id.
    rows = [("i2", "a", "B", None), ("i3", "a", "A", 4), ("i1", "a", "B", 4)]
    assert reviewer_prior(rows) == {("i1", "a"): "A", ("i3", "a"): "B", ("i2", "a"): "B"}


def test_expert_scores_hand_example():
    """4 reference aspects, 3 matched: (c,s) = (1,1), (1,0), (0,1); 2 generated aspects,
    1 matched: (1,0).
    AVERAGE: R = (1 + .5 + .5)/4 = .5, P = .5/2 = .25, F = 2*.5*.25/.75 = 1/3.
    CONTENT: R = 2/4, P = 1/2, F = .5.   STYLE: R = 2/4, P = 0, F = 0.
    AND: R = 1/4, P = 0, F = 0.          OR: R = 3/4, P = 1/2, F = 2*.375/1.25 = .6."""
    result = expert_scores(4, 2, [(True, True), (True, False), (False, True)], [(True, False)])
    assert result["score"] == pytest.approx(1 / 3)
    assert (result["precision"], result["recall"]) == (0.25, 0.5)
    assert result["variants"] == pytest.approx(
        {"content": 0.5, "style": 0.0, "and": 0.0, "or": 0.6, "average": 1 / 3})
    # A side with no aspects gives 0; more matches than aspects is an input error.
    assert expert_scores(0, 3, [], [(True, True)])["score"] == 0.0
    with pytest.raises(ValueError, match="2 matches for 1 aspects"):
        expert_scores(1, 1, [(True, True), (True, True)], [])


def test_corpus_score_is_mean_of_item_f():
    """Items (P=.25,R=.5,F=1/3) and (P=1,R=.25,F=.4): mean F = 0.366667, whereas F of
    the mean P (.625) and R (.375) would be 0.46875."""
    a = expert_scores(4, 2, [(True, True), (True, False), (False, True)], [(True, False)])
    b = expert_scores(4, 1, [(True, True)], [(True, True)])
    assert b["score"] == pytest.approx(0.4)
    assert corpus_score([a["score"], b["score"]]) == pytest.approx((1 / 3 + 0.4) / 2)
    assert corpus_score([]) is None
