"""The report's per-system table (`systems`), worked by hand, without Django.

    item  candidates  rougeL (first, second)   bleu        votes     majority
    i1    A, B        0.5, 0.2                 A 1.0       A A B     A
    i2    B, A        0.4, 0.3                 -           B B B     B
    i3    A, B        0.1, 0.6                 -           A A A     A
    i4    A, B        0.7, -                   -           A B       none (1-1)

A rougeL: 0.5 0.3 0.1 0.7 -> mean 0.4, squared deviations .01+.01+.09+.09 = .2, sd =
sqrt(.2/3), half width t(.975, 3) = 3.182446305 x sd / 2. B rougeL: 0.2 0.4 0.6 -> mean
0.4, sd 0.2, half width t(.975, 2) = 4.302652730 x 0.2 / sqrt(3). bleu: A one value (no
interval), B none. Wins: A i1, i3; B i2; decided 3 each (i4 has no majority).
"""
import math

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
    half_a = 3.182446305284263 * math.sqrt(0.2 / 3) / 2
    half_b = 4.302652729911275 * 0.2 / math.sqrt(3)
    assert list(systems) == ["A", "B"]
    a, b = systems["A"], systems["B"]
    assert (a["n_items"], a["wins"], a["decided"], a["win_rate"]) == (4, 2, 3, pytest.approx(2 / 3))
    assert (b["n_items"], b["wins"], b["decided"], b["win_rate"]) == (4, 1, 3, pytest.approx(1 / 3))
    assert a["metrics"]["rougeL"] == {"mean": pytest.approx(0.4), "n": 4,
                                      "ci95": [pytest.approx(0.4 - half_a), pytest.approx(0.4 + half_a)]}
    assert b["metrics"]["rougeL"] == {"mean": pytest.approx(0.4), "n": 3,
                                      "ci95": [pytest.approx(0.4 - half_b), pytest.approx(0.4 + half_b)]}
    assert a["metrics"]["bleu"] == {"mean": 1.0, "ci95": None, "n": 1}
    assert b["metrics"]["bleu"] == {"mean": None, "ci95": None, "n": 0}
