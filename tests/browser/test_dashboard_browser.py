"""The researcher dashboard in Debian's Chromium: figures render, the progress panel
refreshes by itself (htmx polling) when a new judgment arrives, an admin starts a scoring
job and watches its progress bar reach 100% and the study's job list show it. Screenshots go to docs/screenshots/."""
from pathlib import Path

import pytest

from tests.factories import add_judgments, make_judged_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def logged_in_page(new_page, logged_in, who):
    """A page logged in as `who` that records the URL of every request it makes."""
    page = logged_in(new_page(1200, 900), who)
    page.on("request", lambda r: requests.append(r.url))
    requests = []
    page.requests = requests
    return page


def demo_study():
    items = [(f"i{n}", {"input": f"request {n}", "reference": f"the expected answer number {n}",
                        "candidates": [{"id": "x", "text": f"the expected answer number {n}"},
                                       {"id": "y", "text": f"something else entirely {n}"}],
                        "metric_scores": {"len": {"x": n % 3, "y": 1}}}, None) for n in range(1, 7)]
    judgments = []
    for n in range(1, 7):
        for k, who in enumerate(("ann1", "ann2", "ann3")):
            value = "x" if (n + k) % 3 else "y"
            judgments.append((f"i{n}", who, "choice", value, "x|y" if (n + k) % 2 else "y|x", 10.0 + n + k))
    return make_judged_study("dash", "pairwise_alignment", items, judgments[:-2])


def test_dashboard_researcher_live_progress(new_page, logged_in, live_server, researcher):
    study = demo_study()
    page = logged_in_page(new_page, logged_in, researcher)
    page.goto(f"{live_server.url}/studies/dash/")
    assert page.title().startswith("Study dash")
    for fig in ("fig-agreement", "fig-alignment", "fig-ratings", "fig-position-bias"):
        assert page.locator(f"#{fig} svg").count() == 1, fig
        assert page.locator(f"#{fig} svg").bounding_box()["height"] > 50
    assert page.locator("#download-report-html").get_attribute("href") == "/api/studies/dash/report/?format=html"
    assert page.locator("#job-form").count() == 0
    assert page.locator("#progress-table tbody tr").count() == 3
    page.screenshot(path=str(SHOTS / "dashboard.png"), full_page=True)

    # A new annotator submits: the progress panel shows them within one polling period.
    add_judgments(study, [("i6", "ann4", "choice", "x", "x|y", 3.0)])
    page.locator("#progress-table td", has_text="ann4").wait_for(timeout=15000)
    assert page.locator("#progress-table tbody tr").count() == 4
    # Nothing but this server was contacted (no CDN).
    assert all(url.startswith(live_server.url) for url in page.requests), page.requests


def test_dashboard_admin_starts_a_job(new_page, logged_in, live_server, admin_user_):
    from models_runtime.models import Job

    demo_study()
    earlier = Job.objects.create(kind="score", params={"study": "dash", "metrics": ["gemba"]}, state="done_with_errors",
                                 done=6, total=6, n_errors=2)
    Job.objects.create(kind="score", params={"study": "another"}, state="done", done=1, total=1)
    page = logged_in_page(new_page, logged_in, admin_user_)
    page.goto(f"{live_server.url}/studies/dash/")
    # The study's recent jobs, a finished-with-errors one saying so.
    page.locator("#job-list tbody tr").first.wait_for(timeout=15000)
    assert page.locator("#job-list tbody tr").count() == 1
    assert page.locator("#job-list tbody tr td").all_text_contents()[:5] == [
        str(earlier.pk), "score", "done_with_errors", "6/6", "2"]
    assert page.locator("#upload-batch").get_attribute("href") == "/studies/dash/upload/"
    page.fill("#job-form input[name=metrics]", "rougeL")
    page.click("#job-form button[type=submit]")
    # A function, not an expression string: Playwright eval()s strings, which the CSP forbids.
    page.wait_for_function("() => document.getElementById('job-status').textContent.includes('done')",
                           timeout=60000)
    assert page.locator("#job-bar").get_attribute("aria-valuenow") == "100"
    assert "(6/6)" in page.locator("#job-status").text_content()
    page.locator("#job-list tbody tr[data-state=done]").wait_for(timeout=15000)
    assert page.locator("#job-list tbody tr").count() == 2
    page.screenshot(path=str(SHOTS / "dashboard-admin.png"), full_page=True)
    from annotate.models import Prediction
    assert Prediction.objects.filter(study__slug="dash", evaluator="rougeL").count() == 12
