"""The dashboard of a study whose human items are a recorded random subset, in Debian's
Chromium: the prediction-powered section shows its table and, for each evaluator with a PPI
interval, the side-by-side interval plot (human only, human + judge); axe-core finds no
critical or serious violation and nothing outside this server is contacted. Screenshot:
docs/screenshots/dashboard_ppi.png."""
from pathlib import Path

import pytest

from tests.browser.axe import serious_violations
from tests.test_report_ppi import pairwise_study, record_draw

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def test_dashboard_shows_the_ppi_intervals(new_page, logged_in, live_server, researcher):
    study, offered = pairwise_study("ppi-dash")
    record_draw(study, offered, 0.6)
    page = logged_in(new_page(1200, 900), researcher)
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{live_server.url}/studies/ppi-dash/")
    section = page.locator("section#ppi")
    section.wait_for(timeout=30000)
    assert section.locator("tbody tr").count() == 4  # constant, gemba, partial, rougeL on m1 vs m2
    figures = section.locator("figure svg")
    assert figures.count() == 2 and all(figures.nth(k).bounding_box()["height"] > 50 for k in range(2))
    assert "human + gemba" in section.locator("figure").first.text_content()
    section.screenshot(path=str(SHOTS / "dashboard_ppi.png"))
    assert serious_violations(page) == []
    assert all(url.startswith(live_server.url) for url in requests), requests
