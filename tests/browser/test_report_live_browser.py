"""The dashboard's report section follows new judgments by itself (docs/reports.md,
"Cache"): the version badge polls every 4 s, the refresh runs (eagerly here, no broker),
and the section reloads, with no click and no inline script."""
import time

import pytest

from tests.browser.test_dashboard_browser import demo_study, logged_in_page
from tests.factories import add_judgments

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

JUDGMENTS_ROW = "#report-body tr:has(td:text-is('Judgments')) td.num"


def test_report_section_updates_itself_after_a_new_judgment(new_page, logged_in, live_server, researcher):
    study = demo_study()  # 16 judgments
    page = logged_in_page(new_page, logged_in, researcher)
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/studies/dash/")
    assert page.locator(JUDGMENTS_ROW).text_content() == "16"
    add_judgments(study, [("i6", "ann4", "choice", "x", "x|y", 3.0)])
    start = time.monotonic()
    page.wait_for_function(
        "() => [...document.querySelectorAll('#report-body td')].some((td, k, all) => "
        "td.textContent === 'Judgments' && all[k + 1].textContent === '17')", timeout=20000)
    assert time.monotonic() - start < 12  # one 4 s poll (refresh inside it) + the section's reload
    assert page.locator("#report-version").get_attribute("data-version").startswith("j17.")
    assert page.locator("#fig-agreement svg").count() == 1
    assert not errors, errors
