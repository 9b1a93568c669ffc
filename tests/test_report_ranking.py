"""Issue 22, the report half: a study whose items hold 5 candidates, judged one shown pair
per judgment, gets the per-system table, the ranking (equal to choix on the same
comparisons), the intransitivity and the metrics-vs-ranking correlations in JSON, the
per-system table in the CSV, and the ranking section in the HTML report and on the
dashboard. Items and judgments are written directly (the annotation side, s22a, builds
the assignment engine that shows one pair per assignment)."""
import csv
import io

import choix
import numpy as np
import pytest

from annotate.reports.data import fetch_report_input
from evaluation.report import build_report, render
from evaluation.report.table import SYSTEMS_HEADER
from tests.factories import make_judged_study, make_user

pytestmark = pytest.mark.django_db

SYSTEMS = ["bm25-k1", "bm25-k4", "contriever", "no-profile", "recency"]
STRENGTH = dict(zip(SYSTEMS, [0.8, 0.4, 0.2, -0.6, -0.1]))


def five_system_study(slug="five", n_items=24, kind="pairwise_alignment", question="choice"):
    rng = np.random.default_rng(3)
    items, judgments, comparisons = [], [], []
    for i in range(n_items):
        item_id = f"item-{i:03d}"
        scores = {s: round(STRENGTH[s] + float(rng.normal(0, 0.3)), 3) for s in SYSTEMS}
        data = {"input": f"request {i}", "reference": "r",
                "candidates": [{"id": s, "text": f"{s} answer {i}"} for s in SYSTEMS]}
        if kind == "pairwise_alignment":
            data["metric_scores"] = {"rougeL": scores}
        items.append((item_id, data, None))
        for k in range(3):
            a, b = (SYSTEMS[j] for j in rng.choice(5, 2, replace=False))
            p = 1 / (1 + np.exp(STRENGTH[b] - STRENGTH[a]))
            u = rng.random()
            value = a if u < 0.85 * p else ("tie" if u < 0.85 * p + 0.15 else b)
            judgments.append((item_id, f"ann{k}", question, value, f"{a}|{b}|tie", 12.0))
            comparisons.append((a, b, value))
    return make_judged_study(slug, kind, items, judgments), comparisons


def choix_strengths(comparisons):
    code = {s: k for k, s in enumerate(SYSTEMS)}
    data = []
    for a, b, value in comparisons:
        if value == "tie":
            data += [(code[a], code[b]), (code[b], code[a])]
        else:
            winner, loser = (a, b) if value == a else (b, a)
            data += [(code[winner], code[loser])] * 2
    theta = choix.opt_pairwise(len(SYSTEMS), data, alpha=0, tol=1e-12)
    return dict(zip(SYSTEMS, theta - theta.mean()))


def test_five_systems_ranked_in_json_csv_html():
    study, comparisons = five_system_study()
    inp = fetch_report_input(study)
    report = build_report(inp)
    expected = choix_strengths(comparisons)
    ranking = report["ranking"]
    assert sorted(ranking) == sorted(SYSTEMS)
    for system in SYSTEMS:
        assert ranking[system]["strength"] == pytest.approx(expected[system], abs=1e-6)
        assert ranking[system]["ci95"][0] < ranking[system]["strength"] < ranking[system]["ci95"][1]
        low, high = ranking[system]["rank_ci95"]
        assert 1 <= low <= ranking[system]["rank"] <= high <= 5
        assert ranking[system]["n_clusters"] == 24
    n = {s: sum(s in (a, b) for a, b, _ in comparisons) for s in SYSTEMS}
    wins = {s: sum(v == s for _, _, v in comparisons) for s in SYSTEMS}
    ties = {s: sum(v == "tie" and s in (a, b) for a, b, v in comparisons) for s in SYSTEMS}
    for system in SYSTEMS:
        human = report["systems"][system]["human"]
        assert (human["n"], human["wins"], human["ties"]) == (n[system], wins[system], ties[system])
        assert human["win_rate"] == pytest.approx((wins[system] + ties[system] / 2) / n[system])
    beat = report["pairwise_wins"]
    a, b = SYSTEMS[0], SYSTEMS[1]
    assert beat[a][b] == sum((v == a) + 0.5 * (v == "tie") for x, y, v in comparisons if {x, y} == {a, b})
    assert report["intransitivity"]["n_systems"] == 5
    assert report["correlations_ranking"]["rougeL"]["kendall"]["p_method"] == "exact permutation (all n! orderings)"
    # The metric means are over the items of the system's human row.
    for system in SYSTEMS:
        compared = {i for i, (x, y, _) in enumerate(comparisons) if system in (x, y)}
        assert report["systems"][system]["metrics"]["rougeL"]["n"] == len({i // 3 for i in compared})

    rows = list(csv.reader(io.StringIO(render(report, inp, "csv"))))
    start = rows.index(SYSTEMS_HEADER)
    table = rows[start + 1:]
    table = table[:table.index([])] if [] in table else table  # the ppi table may follow (issue 35)
    strength_rows = [r for r in table if r[3] == "bradley_terry_strength"]
    assert [r[2] for r in strength_rows] == sorted(SYSTEMS, key=lambda s: -ranking[s]["strength"])
    assert float(strength_rows[0][4]) == pytest.approx(max(expected.values()), abs=1e-6)

    html = render(report, inp, "html")
    assert '<section id="systems">' in html and 'id="fig-systems-ranking"' in html and 'id="fig-systems-wins"' in html
    assert 'role="img" aria-label="Strengths: ' in html


def test_dashboard_shows_the_ranking_and_the_system_table(client, settings):
    settings.SECURE_SSL_REDIRECT = False  # the test client speaks http
    study, _ = five_system_study(slug="five-dash")
    admin = make_user("dash-admin", role="admins")
    client.force_login(admin)
    from annotate.reports import cache as report_cache
    report_cache.build(study, report_cache.report_params(study))
    page = client.get(f"/studies/{study.slug}/report-panel/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Systems and strengths" in text and "strength 95% CI" in text and "fig-systems-ranking" in text
    page = client.get(f"/studies/{study.slug}/")
    assert page.status_code == 200 and "Systems and strengths" in page.content.decode()


def test_aspect_pairwise_ranks_per_aspect():
    study, comparisons = five_system_study(slug="five-aspects", kind="aspect_pairwise", question="surprise")
    report = build_report(fetch_report_input(study))
    part = report["aspects"]["surprise"]
    expected = choix_strengths(comparisons)
    for system in SYSTEMS:
        assert part["ranking"][system]["strength"] == pytest.approx(expected[system], abs=1e-6)
    other = report["aspects"]["ending"]  # no judgments of that aspect: no ranking, with the reason
    assert other["ranking"] is None and other["reason"] == "no judgment compares two systems"
