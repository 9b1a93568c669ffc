"""The per-system table's judge rows (issue 22): on the items of the human row, an
interval clipped to the judge's scale (GEMBA 0-100) or a note when the scale is unknown,
and a design whose comparison graph falls apart gets no ranking, with its reason, in the
JSON, the CSV and the HTML."""
import numpy as np
import pytest
from scipy import stats

from evaluation.report import build_report, render
from evaluation.report.inputs import ReportInput


def study(pairs, scores, n_items=None):
    """pairs: per item (first shown, second shown, answer); scores: {metric: [(a score, b score)]}."""
    n = n_items or len(pairs)
    c_item, c_id = [], []
    for i, (a, b, _) in enumerate(pairs):
        c_item += [i, i]
        c_id += [a, b]
    s_item, s_metric, s_cand, s_value = [], [], [], []
    for metric, rows in scores.items():
        for i, (x, y) in enumerate(rows):
            s_item += [i, i]
            s_metric += [metric, metric]
            s_cand += [pairs[i][0], pairs[i][1]]
            s_value += [x, y]
    j = [(i, f"ann{k}", pairs[i][2], f"{pairs[i][0]}|{pairs[i][1]}") for i in range(n) for k in range(2)]
    return ReportInput(slug="scale", kind="pairwise_alignment", config={}, item_ids=[f"i{i}" for i in range(n)],
                       is_gold=[False] * n, gold=None, c_item=c_item, c_id=c_id,
                       j_item=[r[0] for r in j], j_annotator=[r[1] for r in j], j_question=["choice"] * len(j),
                       j_value=[r[2] for r in j], j_shown=[r[3] for r in j],
                       s_item=s_item, s_metric=s_metric, s_candidate=s_cand, s_value=s_value)


def test_gemba_interval_clipped_to_its_scale_and_a_note_for_unknown_scales():
    pairs = [("x", "y", "x")] * 5
    gemba = [(0, 50), (0, 50), (100, 50), (100, 50), (0, 50)]  # x: mean 40, sd 54.77 over 5 items
    other = [(0.0, 1.0), (0.0, 1.0), (1.0, 1.0), (1.0, 1.0), (0.0, 1.0)]  # the same shape on an unknown scale
    r = build_report(study(pairs, {"gemba": gemba, "overlap": other}))
    x = r["systems"]["x"]["metrics"]["gemba"]
    half = stats.t.ppf(0.975, 4) * np.std([0, 0, 100, 100, 0], ddof=1) / np.sqrt(5)
    assert 40 - half < 0 and 40 + half > 100  # the t interval leaves the 0-100 scale
    assert x["mean"] == pytest.approx(40) and x["ci95"] == [0, 100] and x["scale"] == [0, 100]
    assert x["ci_note"] == "t interval clipped to the metric's scale [0, 100]"
    o = r["systems"]["x"]["metrics"]["overlap"]
    assert o["ci95"] == pytest.approx([0.4 - half / 100, 0.4 + half / 100])
    assert o["ci_note"].startswith("the t interval reaches beyond the observed scores [0.0, 1.0]")
    assert "scale" not in o
    y = r["systems"]["y"]["metrics"]["gemba"]
    assert y["ci95"] is None and y["ci_reason"] == "constant sample (sd = 0): no t interval"


def test_disconnected_design_has_no_ranking_in_json_csv_html():
    pairs = [("a", "b", "a"), ("b", "a", "a"), ("a", "b", "b"), ("c", "d", "c"), ("d", "c", "d"), ("c", "d", "c")]
    inp = study(pairs, {})
    r = build_report(inp)
    reason = ("the comparison graph is not connected: no judgment links these groups of systems: {a, b}; {c, d}")
    assert r["ranking"] is None and r["reason"] == reason and r["ranking_detail"]["reason"] == reason
    assert r["pairwise_wins"]["a"]["c"] == 0.0 and r["pairwise_n"]["a"]["c"] == 0
    assert r["systems"]["a"]["human"]["n"] == 6 and r["systems"]["a"]["human"]["wins"] == 4
    assert f"No strengths: {reason}." in render(r, inp, "html").replace("&#x27;", "'")
    csv_rows = [line for line in render(r, inp, "csv").splitlines() if ",bradley_terry_strength," in line]
    assert csv_rows[0] == f'systems,,a,bradley_terry_strength,,,,,,,"{reason}"'
