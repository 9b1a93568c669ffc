"""The Content-Security-Policy in Debian's Chromium (issue 14, item 14): the task page, the
dashboard and /api/docs/ load and work (htmx swaps, the job form, swagger-ui) with no CSP
violation reported and no console error, every request stays on this server, and the
policy really is enforced (an injected inline handler is blocked). Also item 18: an error
notice on the task page is red, not the green of "Saved."."""
import time
from pathlib import Path

import pytest

from annotate.models import Judgment
from tests.factories import make_judged_study, make_user, two

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"

# Runs before any page script (injected by the browser, so the CSP does not apply to it).
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", e => window.__csp.push(e.violatedDirective + " " + e.blockedURI));
"""


def watched_page(new_page, logged_in, user):
    page = logged_in(new_page(1200, 900), user)
    page.context.add_init_script(RECORD_VIOLATIONS)
    page.console_problems, page.requests = [], []
    page.on("console", lambda m: page.console_problems.append(f"{m.text} {m.location.get('url', '')}")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: page.console_problems.append(str(e)))
    page.on("request", lambda r: page.requests.append(r.url))
    return page


def wait_until(page, expression, timeout=15.0):
    """Poll `expression` through the DevTools protocol: Playwright's wait_for_function
    evaluates strings with eval() inside the page, which this very CSP forbids."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        page.wait_for_timeout(100)


def assert_clean(page, live_server, expected=()):
    """No CSP violation, no console error or warning except the `expected` failed loads,
    and no request beyond this server."""
    assert page.evaluate("window.__csp") == []
    assert [p for p in page.console_problems if not p.endswith(tuple(expected))] == []
    assert all(url.startswith(live_server.url) for url in page.requests), page.requests


def study():
    items = [(f"i{n}", {"input": f"request {n}", "reference": f"reference {n}", "candidates": two(),
                        "metric_scores": {"len": {"x": n % 3, "y": 1}}}, None) for n in range(1, 5)]
    judgments = [(f"i{n}", who, "choice", "x" if n % 2 else "y", "x|y", 9.0)
                 for n in range(1, 5) for who in ("ann1", "ann2")]
    return make_judged_study("csp", "pairwise_alignment", items, judgments, gold_rate=0)


def test_task_page_works_under_the_csp(new_page, logged_in, live_server):
    study()
    annotator = make_user("csp-annotator", "annotators")
    page = watched_page(new_page, logged_in, annotator)
    response = page.goto(f"{live_server.url}/annotate/csp/")
    assert response.headers["content-security-policy"].startswith("default-src 'self'; script-src 'self';")
    page.click("#start")  # a GET reserves nothing: the Start button (htmx POST) brings the item
    page.wait_for_selector("#item-form")
    # A submit with nothing chosen: htmx swaps the item back with a red error notice.
    page.click("#item-form button[type=submit]")
    notice = page.locator("#status .notice")
    notice.wait_for()
    assert notice.get_attribute("class") == "notice error"
    assert notice.evaluate("e => getComputedStyle(e).color") == "rgb(179, 38, 30)"  # --error, #b3261e
    page.screenshot(path=str(SHOTS / "annotate-error-notice.png"))
    # Answer and submit: htmx posts, swaps in the next item and a green "Saved.".
    first = page.locator("#item-form").get_attribute("data-assignment")
    page.locator("#item-form input[type=radio]").first.check()
    page.click("#item-form button[type=submit]")
    wait_until(page, f"document.querySelector('#item-form')?.dataset.assignment !== '{first}'")
    wait_until(page, "document.querySelector('#status .notice')?.className === 'notice ok'")  # htmx-added settles
    assert page.locator("#status .notice").inner_text() == "Saved."
    assert page.locator("#status .notice").evaluate("e => getComputedStyle(e).color") == "rgb(30, 122, 69)"  # --ok
    assert Judgment.objects.filter(annotator=annotator).count() == 1
    assert_clean(page, live_server)
    # The policy is enforced: an inline handler injected into the page does not run.
    page.evaluate("document.body.insertAdjacentHTML('beforeend', '<img src=\"/static/none.png\" "
                  "onerror=\"window.pwned = 1\">')")
    wait_until(page, "window.__csp.length > 0")
    assert page.evaluate("window.pwned") is None
    assert page.evaluate("window.__csp")[0].startswith("script-src-attr")


def test_dashboard_works_under_the_csp(new_page, logged_in, live_server, admin_user_):
    study()
    page = watched_page(new_page, logged_in, admin_user_)
    page.goto(f"{live_server.url}/studies/csp/")
    assert page.locator("#fig-alignment svg").count() == 1
    # htmx: the report's Refresh button swaps the report body in place.
    page.evaluate("document.getElementById('report-body').innerHTML = ''")
    page.click("#report-panel button.link")
    page.locator("#report-body #fig-alignment svg").wait_for()
    # The job form's script (a static file now) runs: its answer appears in the page.
    page.fill("#job-form input[name=metrics]", "no-such-metric")
    page.click("#job-form button[type=submit]")
    page.locator("#job-status", has_text="Refused").wait_for()
    assert page.url == f"{live_server.url}/studies/csp/"  # not a plain form submit
    assert_clean(page, live_server, expected=["/api/jobs/"])  # the refused job: a 400, as asked
    # The JSON report downloads under its own name.
    with page.expect_download() as download:
        page.click("#download-report-json")
    assert download.value.suggested_filename == "csp-report.json"


def test_api_docs_work_under_the_csp(new_page, logged_in, live_server, researcher):
    page = watched_page(new_page, logged_in, researcher)
    page.goto(f"{live_server.url}/api/docs/")
    page.locator(".swagger-ui .info .title", has_text="humeval API").wait_for(timeout=30000)
    page.locator(".opblock-tag", has_text="studies").first.wait_for()
    assert_clean(page, live_server)
