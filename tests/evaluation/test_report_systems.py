"""The report's per-system table (`systems`), worked by hand, without Django.

    item  candidates  rougeL (first, second)   bleu        votes     majority
    i1    A, B        0.5, 0.2                 A 1.0       A A B     A
    i2    B, A        0.4, 0.3                 -           B B B     B
    i3    A, B        0.1, 0.6                 -           A A A     A
    i4    A, B        0.7, -                   -           A B       none (1-1)

A rougeL: 0.5 0.3 0.1 0.7 -> mean 0.4 over 4 items; B rougeL: 0.2 0.4 0.6 -> mean 0.4
over 3: no t interval from fewer than 5 items (statistics.md, "Clustered data"; the t
interval itself is checked in test_clustered.py). bleu: A one value, B none. Wins: A i1,
i3; B i2; decided 3 each (i4 has no majority).
"""
import numpy as np
import pytest

from evaluation.report import build_report
from evaluation.report.inputs import ReportInput

VOTES = {0: "AAB", 1: "BBB", 2: "AAA", 3: "AB"}


def report_input():
    j_item, j_annotator, j_value = [], [], []
    for item, votes in VOTES.items():
        for n, vote in enumerate(votes):
            j_item.append(item)
            j_annotator.append(f"ann{n}")
            j_value.append(vote)
    scores = [(0, "rougeL", "A", 0.5), (0, "rougeL", "B", 0.2), (1, "rougeL", "B", 0.4), (1, "rougeL", "A", 0.3),
              (2, "rougeL", "A", 0.1), (2, "rougeL", "B", 0.6), (3, "rougeL", "A", 0.7), (0, "bleu", "A", 1.0)]
    return ReportInput(
        slug="s", kind="pairwise_alignment", config={}, item_ids=["i1", "i2", "i3", "i4"],
        is_gold=[False] * 4, gold=None, candidates=np.array(
            [["A", "B"], ["B", "A"], ["A", "B"], ["A", "B"]], dtype=object),
        j_item=j_item, j_annotator=j_annotator, j_question=["choice"] * len(j_item), j_value=j_value,
        s_item=[s[0] for s in scores], s_metric=[s[1] for s in scores], s_candidate=[s[2] for s in scores],
        s_value=[s[3] for s in scores])


def test_systems_table_by_hand():
    systems = build_report(report_input())["systems"]
    assert list(systems) == ["A", "B"]
    a, b = systems["A"], systems["B"]
    assert (a["n_items"], a["wins"], a["decided"], a["win_rate"]) == (4, 2, 3, pytest.approx(2 / 3))
    assert (b["n_items"], b["wins"], b["decided"], b["win_rate"]) == (4, 1, 3, pytest.approx(1 / 3))
    method = {"ci_method": "t interval over items"}
    assert a["metrics"]["rougeL"] == {"mean": pytest.approx(0.4), "n": 4, "ci95": None, **method, "n_clusters": 4,
                                      "ci_reason": "fewer than 5 clusters (4)", "n_scored": 4}
    assert b["metrics"]["rougeL"] == {"mean": pytest.approx(0.4), "n": 3, "ci95": None, **method, "n_clusters": 3,
                                      "ci_reason": "fewer than 5 clusters (3)", "n_scored": 3}
    assert a["metrics"]["bleu"] == {"mean": 1.0, "ci95": None, "n": 1, **method, "n_clusters": 1,
                                    "ci_reason": "one value", "n_scored": 1}
    assert b["metrics"]["bleu"] == {"mean": None, "ci95": None, "n": 0, **method, "n_clusters": 0,
                                    "ci_reason": "no values", "n_scored": 0}
