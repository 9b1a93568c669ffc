"""The stopping guide (header `stop_when`; evaluation/report/allocation.py): met exactly when
the named rank intervals say so, shown on the dashboard's report panel with the judgments
per pair (a matrix) and the current rank intervals."""
import pytest

from annotate.reports import cache as report_cache
from annotate.reports.data import fetch_report_input
from evaluation.report import build_report
from evaluation.report.allocation import allocation_section, stop_status
from tests.factories import make_user
from tests.test_adaptive_allocation import adaptive_study, work_through

RANKED = {"a": {"rank": 1, "rank_ci95": [1, 2]}, "b": {"rank": 2, "rank_ci95": [1, 3]},
          "c": {"rank": 3, "rank_ci95": [3, 4]}, "d": {"rank": 4, "rank_ci95": [3, 4]}}


@pytest.mark.parametrize("stop_when, ranked, met, detail", [
    ("top_separated", RANKED, False, "a ranks first with rank interval [1, 2], which includes rank 2"),
    ("top_separated", {**RANKED, "a": {"rank": 1, "rank_ci95": [1, 1]}}, True,
     "a ranks first with rank interval [1, 1], which excludes rank 2"),
    ("top_separated", {**RANKED, "a": {"rank": 1, "rank_ci95": None}}, False,
     "a ranks first; its rank interval is not known yet"),
    ({"separated": ["a", "c"]}, RANKED, True, "rank intervals a [1, 2] and c [3, 4] do not overlap"),
    ({"separated": ["b", "c"]}, RANKED, False, "rank intervals b [1, 3] and c [3, 4] overlap"),
    ({"separated": ["a", "zz"]}, RANKED, False, "no rank interval yet for zz"),
    ("top_separated", None, False, "no strengths yet (see ranking_detail.reason)"),
])
def test_stop_status(stop_when, ranked, met, detail):
    got = stop_status(stop_when, ranked)
    assert got["met"] is met and got["detail"] == detail


def test_section_shows_matrix_intervals_and_the_guide():
    report = {"ranking": RANKED, "allocation": {
        "policy": "adaptive", "min_per_pair": 10, "n": 7, "n_shown": 8, "win_rates": "inverse-probability weighted",
        "pairs": [{"a": "a", "b": "b", "shown": 3, "n": 3}, {"a": "a", "b": "c", "shown": 5, "n": 4}],
        "stop": {"target": "top_separated", "met": False, "detail": "x"}}}
    html = allocation_section(report)
    assert '<p id="stop-guide" class="stop-open"><strong>Stopping target top_separated: not met yet: keep ' \
           'collecting</strong> (x).</p>' in html
    # the matrix: rows a, b, c; a-b 3, a-c 4, b-c 0; the diagonal empty
    assert '<tr><td>a</td><td class="num">–</td><td class="num">3</td><td class="num">4</td></tr>' in html
    assert "<tr><td>d</td><td class=\"num\">4</td><td>3–4</td></tr>" in html


@pytest.mark.django_db
def test_dashboard_says_whether_the_target_is_met(client, settings):
    """An engine-run adaptive study (4 systems, 60 judgments) with stop_when top_separated:
    the report's stop status is the top system's rank interval read off its own ranking, and
    the dashboard's report panel shows it with the pair matrix."""
    settings.SECURE_SSL_REDIRECT = False
    study = adaptive_study(80, config={"allocation": "adaptive", "min_per_pair": 2, "stop_when": "top_separated"})
    people = [make_user(f"a{i}") for i in range(3)]
    work_through(study, people, 60)
    report = build_report(fetch_report_input(study))
    ranked = report["ranking"]
    assert ranked is not None, report.get("reason")
    top = min(ranked, key=lambda s: ranked[s]["rank"])
    ci = ranked[top]["rank_ci95"]
    stop = report["allocation"]["stop"]
    assert stop["met"] is (ci == [1, 1])
    if ci is None:  # too many resamples without finite strengths (the draws depend on the item ids)
        assert stop["detail"] == f"{top} ranks first; its rank interval is not known yet"
    else:
        assert stop["detail"] == (f"{top} ranks first with rank interval [{ci[0]}, {ci[1]}], which "
                                  f"{'excludes' if ci == [1, 1] else 'includes'} rank 2")
    assert sum(p["n"] for p in report["allocation"]["pairs"]) == 60 == report["allocation"]["n"]
    client.force_login(make_user("dash-admin", role="admins"))
    report_cache.build(study, report_cache.report_params(study))
    text = client.get(f"/studies/{study.slug}/").content.decode()
    state = "met: you may stop" if stop["met"] else "not met yet: keep collecting"
    assert f"Stopping target top_separated: {state}" in text
    assert "Allocation and stopping" in text and "Current rank intervals" in text
