"""(item, shown pair) units (report/pair_units.py, issue 22): with more than two candidates
per item, the sections written for two candidates read each shown pair of an item as a
unit, while the header, the per-system table and the ranking read the real items. Worked
by hand on 2 items, one of 3 candidates."""
import numpy as np
import pytest

from evaluation.report import build_report, render
from evaluation.report.inputs import ReportInput
from evaluation.report.pair_units import pair_view


def study(kind="pairwise_alignment", question="choice", extra_vote=False):
    judgments = [  # (item, annotator, value, shown order)
        (0, "ann1", "a", "a|b|tie"), (0, "ann2", "a", "b|a|tie"),  # i1: a beats b twice
        (0, "ann3", "b", "c|b|tie"), (0, "ann4", "c", "b|c|tie"),  # i1: b and c split
        (1, "ann1", "b", "a|b|tie"), (1, "ann2", "b", "b|a|tie"),  # i2 (two candidates): b twice
    ] + ([(0, "ann5", "c", "c|b|tie")] if extra_vote else [])
    scores = [(0, "a", 0.9), (0, "b", 0.5), (0, "c", 0.1), (1, "a", 0.2), (1, "b", 0.8)]
    return ReportInput(slug="units", kind=kind, config={}, item_ids=["i1", "i2"], is_gold=[False, False], gold=None,
                       c_item=[0, 0, 0, 1, 1], c_id=["a", "b", "c", "a", "b"],
                       j_item=[j[0] for j in judgments], j_annotator=[j[1] for j in judgments],
                       j_question=[question] * len(judgments), j_value=[j[2] for j in judgments],
                       j_shown=[j[3] for j in judgments],
                       s_item=[s[0] for s in scores], s_metric=["rougeL"] * len(scores),
                       s_candidate=[s[1] for s in scores], s_value=[s[2] for s in scores])


def test_units_are_item_and_shown_pair():
    view = pair_view(study())
    assert view.item_ids.tolist() == ["i1 [a vs b]", "i1 [b vs c]", "i2"]
    assert view.candidates.tolist() == [["a", "b"], ["b", "c"], ["a", "b"]]
    assert view.j_item.tolist() == [0, 0, 1, 1, 2, 2]
    assert sorted(zip(view.s_item.tolist(), view.s_candidate.tolist(), view.s_value.tolist())) == [
        (0, "a", 0.9), (0, "b", 0.5), (1, "b", 0.5), (1, "c", 0.1), (2, "a", 0.2), (2, "b", 0.8)]
    assert view.unit_item.tolist() == [0, 0, 1]
    plain = ReportInput(slug="p", kind="pairwise_alignment", config={}, item_ids=["i"], is_gold=[False], gold=None,
                        c_item=[0, 0], c_id=["a", "b"])
    assert pair_view(plain) is plain  # at most two candidates: nothing changes


def test_pairwise_report_over_units_and_ranking_over_items():
    r = build_report(study())
    assert (r["n_items"], r["n_judgments"]) == (2, 6)
    assert r["units"]["n_units"] == 3 and r["units"]["unit"] == "(item, shown pair)"
    assert r["majority"] == {"i1 [a vs b]": "a", "i1 [b vs c]": None, "i2": "b"}
    # rougeL picks a on i1 [a vs b] (0.9 > 0.5) and b on i2 (0.8 > 0.2): both agree.
    assert (r["alignment"]["rougeL"]["agree"], r["alignment"]["rougeL"]["n"]) == (2, 2)
    # Judgment level: a 2 wins of 4, b 3 of 6, c 1 of 2; a-b 2:2 and b-c 1:1: equal strengths.
    assert {s: (h["human"]["n"], h["human"]["wins"]) for s, h in r["systems"].items()} == {
        "a": (4, 2), "b": (6, 3), "c": (2, 1)}
    assert r["pairwise_wins"] == {"a": {"b": 2.0, "c": 0.0}, "b": {"a": 2.0, "c": 1.0}, "c": {"a": 0.0, "b": 1.0}}
    assert [r["ranking"][s]["strength"] for s in "abc"] == pytest.approx([0, 0, 0], abs=1e-9)
    assert r["ranking"]["a"]["ci_reason"] == "fewer than 5 clusters (2)"
    assert r["intransitivity"]["undecided_pairs"] == 3  # a-b, b-c tied, a-c never compared
    # Metric means over the items of each system's human row: a on i1 and i2, c on i1.
    assert r["systems"]["a"]["metrics"]["rougeL"]["mean"] == pytest.approx((0.9 + 0.2) / 2)
    assert r["systems"]["c"]["metrics"]["rougeL"]["mean"] == pytest.approx(0.1)
    table = render(r, study(), "csv").split("\n")
    assert table[1].startswith("i1 [a vs b],choice,0,2,a,")
    assert "Systems and strengths" in render(r, study(), "html")


@pytest.mark.parametrize("kind,question", [("explanation_choice", "choice"), ("aspect_pairwise", "surprise")])
def test_other_pairwise_kinds_read_units_too(kind, question):
    r = build_report(study(kind, question))
    assert r["n_items"] == 2 and r["units"]["n_units"] == 3
    ranking = r["ranking"] if kind == "explanation_choice" else r["aspects"][question]["ranking"]
    assert sorted(ranking) == ["a", "b", "c"]
    for fmt in ("json", "csv", "html"):
        assert render(r, study(kind, question), fmt)
    assert np.isfinite(ranking["b"]["strength"])


def test_system_level_correlation_reads_every_slot_of_the_items():
    # Win rates over units with a majority: a 1 of 2 (i1 [a vs b], i2), b 1 of 2, c none (its unit
    # has no majority): c is left out, so 2 systems remain and no coefficient is defined.
    r = build_report(study())
    entry = r["correlations_system"]["rougeL"]
    assert entry["systems"] == ["a", "b"] and entry["n"] == 2 and entry["kendall"]["r"] is None
    # One more vote for c on i1 [b vs c]: rates a 1/2, b 1/3 (i1 [a vs b], i1 [b vs c], i2), c 1/1;
    # mean rougeL over the items holding each: a (0.9 + 0.2)/2, b (0.5 + 0.8)/2, c 0.1.
    r = build_report(study(extra_vote=True))
    entry = r["correlations_system"]["rougeL"]
    x, y = [0.55, 0.65, 0.1], [1 / 2, 1 / 3, 1.0]
    assert entry["systems"] == ["a", "b", "c"] and entry["n"] == 3
    assert entry["pearson"]["r"] == pytest.approx(float(np.corrcoef(x, y)[0, 1]))
    assert entry["kendall"]["r"] == pytest.approx(-1.0)
