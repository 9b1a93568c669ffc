"""Issue 16 D6: a judge whose answers could not be parsed is visible in the report: per
metric coverage (n_items, n_scored, n_unparsed) and warnings for thin or degenerate
alignment. Hand-made study: 12 real items p00..p11 (+ one gold item, never counted), three
annotators pick x everywhere.
- rougeL scores x 0.9 / y 0.1 on all 12: 12 scored, alignment on 12 items, no warning.
- gemba scores x 80 / y 20 on p00..p04; on p05..p11 x is empty (unparsed), y 50: 5 scored,
  7 unparsed, alignment on 5 items (< 10): two warnings.
- geval has only empty answers, on p00 and p01: 0 scored, 2 unparsed, no alignment."""
import pytest

from annotate.reports.data import fetch_report_input
from evaluation.report import build_report
from evaluation.report.coverage import report_warnings
from tests.factories import make_judged_study, two

pytestmark = pytest.mark.django_db

REAL = [f"p{n:02d}" for n in range(12)]


def test_coverage_and_warnings_on_a_hand_made_study():
    items = [(i, {"input": "q", "reference": "r", "candidates": two()}, None) for i in REAL]
    items.append(("g", {"input": "q", "reference": "r", "candidates": two()}, "x"))
    judgments = [(i, who, "choice", "x", "x|y", 5.0) for i in REAL for who in ("a1", "a2", "a3")]
    predictions = [(i, "rougeL", "", c, v) for i in REAL for c, v in (("x", "0.9"), ("y", "0.1"))]
    predictions += [(i, "gemba", "", "x", "80" if n < 5 else "") for n, i in enumerate(REAL)]
    predictions += [(i, "gemba", "", "y", "20" if n < 5 else "50") for n, i in enumerate(REAL)]
    predictions += [(i, "geval", "", c, "") for i in ("p00", "p01") for c in ("x", "y")]
    predictions += [("g", "rougeL", "", "x", ""), ("g", "geval", "", "x", "")]  # gold: not counted
    study = make_judged_study("cov", "pairwise_alignment", items, judgments, predictions)
    report = build_report(fetch_report_input(study))
    assert report["coverage"] == {
        "gemba": {"n_items": 12, "n_scored": 5, "n_unparsed": 7, "n_nonfinite": 0},
        "geval": {"n_items": 12, "n_scored": 0, "n_unparsed": 2, "n_nonfinite": 0},
        "rougeL": {"n_items": 12, "n_scored": 12, "n_unparsed": 0, "n_nonfinite": 0},
    }
    assert (report["alignment"]["gemba"]["n"], report["alignment"]["rougeL"]["n"]) == (5, 12)
    # the HTML report (and the dashboard, which shows the same fragment) prints both
    from evaluation.report.html import report_fragment

    html = report_fragment(report)
    assert '<section id="coverage"><h2>Coverage and warnings</h2><ul class="report-warnings" role="alert">' in html
    assert "<li>gemba: alignment rests on 5 items (fewer than 10)</li>" in html
    assert ('<tr><td>gemba</td><td class="num">5</td><td class="num">7</td><td class="num">12</td></tr>' in html)
    assert report["warnings"] == [
        "gemba: alignment rests on 5 items (fewer than 10)",
        "gemba: 7 of 12 items have unparsed judge answers (5 scored)",
        "geval: 2 of 12 items have unparsed judge answers (0 scored)",
    ]


def test_a_zero_width_interval_is_flagged():
    entry = {"n": 40, "ci95": [1.0, 1.0]}
    assert report_warnings({"m": entry}, {}) == ["m: the 95% CI of alignment is degenerate (zero width)"]
    assert report_warnings({"m": {"n": 40, "ci95": [0.8, 0.95]}}, {}) == []
