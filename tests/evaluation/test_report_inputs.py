"""ReportInput's candidate and score tables (issue 21): candidates as one long table with
any number per item (its padded view for the pair builders), metric scores split off the
predictions once (question = one of the item's candidates, for every annotator), and the
pair of options each judgment showed, read from its shown order."""
import numpy as np

from evaluation.report.inputs import ReportInput


def _input(**columns):
    return ReportInput(slug="s", kind="pairwise_alignment", config={}, item_ids=["a", "b", "c"],
                       is_gold=[False, False, False], gold=None, **columns)


def test_candidates_of_any_number_per_item():
    inp = _input(c_item=[2, 0, 0, 0, 2], c_id=["z1", "a1", "a2", "a3", "z2"])
    assert inp.candidates.shape == (3, 3)
    assert inp.candidates.tolist() == [["a1", "a2", "a3"], [None, None, None], ["z1", "z2", None]]
    assert [inp.item_candidates(i) for i in range(3)] == [["a1", "a2", "a3"], [], ["z1", "z2"]]
    assert inp.c_item.tolist() == [0, 0, 0, 2, 2] and inp.c_id.tolist() == ["a1", "a2", "a3", "z1", "z2"]


def test_candidates_given_per_item_make_the_same_long_table():
    rows = _input(candidates=np.array([["m1", "m2"], ["m1", None], [None, None]], dtype=object))
    long = _input(c_item=[0, 0, 1], c_id=["m1", "m2", "m1"])
    assert rows.c_item.tolist() == long.c_item.tolist() == [0, 0, 1]
    assert rows.c_id.tolist() == long.c_id.tolist() and rows.candidates.tolist() == long.candidates.tolist()
    assert _input().candidates.shape == (3, 2)  # no candidates: two empty columns, as the pair builders read


def test_metric_scores_are_the_score_rows_of_the_predictions():
    inp = _input(c_item=[0, 0, 1, 1, 1], c_id=["m1", "m2", "m1", "m2", "m3"],
                 s_item=[0], s_metric=["given"], s_candidate=["m1"], s_value=[0.5],
                 p_item=[0, 0, 1, 1, 1, 2, 0],
                 p_evaluator=["rougeL", "judge", "rougeL", "gemba", "rougeL", "rougeL", "rougeL"],
                 p_annotator=["", "ann1", "", "", "", "", ""],
                 p_question=["m1", "m2", "m3", "choice", "m2", "m1", "m2"],
                 p_value=["0.25", "7", "0.75", "m1", "", "0.1", "1e3"])
    # on item 2 "m1" is no candidate; the personalized row is on a candidate, not a score
    assert inp.p_on_candidate.tolist() == [True, True, True, False, True, False, True]
    assert inp.p_is_score.tolist() == [True, False, True, False, True, False, True]
    # the given row first, then the score rows; the unparsed one ("") is dropped
    assert list(zip(inp.s_item.tolist(), inp.s_metric.tolist(), inp.s_candidate.tolist(), inp.s_value.tolist())) == [
        (0, "given", "m1", 0.5), (0, "rougeL", "m1", 0.25), (1, "rougeL", "m3", 0.75), (0, "rougeL", "m2", 1000.0)]


def test_the_shown_pair_of_every_judgment():
    inp = _input(c_item=[0, 0, 0], c_id=["m1", "m2", "m3"], j_item=[0, 0, 0, 1, 2],
                 j_annotator=["x", "y", "z", "x", "x"], j_question=["choice", "choice", "choice", "choice", "p1"],
                 j_value=["m3", "tie", "m1", "m1", "4"], j_shown=["m3|m1|tie", "m1|m2|tie", "m2|m1", "", "1|0"])
    first, second = inp.shown_pairs()
    assert first.tolist() == ["m3", "m1", "m2", None, "1"]
    assert second.tolist() == ["m1", "m2", "m1", None, "0"]


def test_no_predictions_no_scores():
    inp = _input()
    assert (len(inp.s_item), len(inp.s_value), len(inp.p_is_score)) == (0, 0, 0)
