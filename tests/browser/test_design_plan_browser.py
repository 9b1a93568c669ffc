"""The study's Plan page in Debian's Chromium: a researcher fills the design form, runs it,
watches the progress turn into the power table (htmx polling, no page reload), saves it to
the study; no CSP violation, no console error, no serious axe-core violation. Screenshot:
docs/screenshots/plan.png."""
from pathlib import Path

import pytest

from annotate.models import Study
from tests.browser.axe import csp_violations, serious_violations, watch
from tests.factories import make_items, make_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def test_a_researcher_plans_runs_and_saves_a_design(new_page, logged_in, live_server, researcher, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    study = make_study(slug="plan-browser", title="Study plan-browser")
    make_items(study, 8)
    page = watch(logged_in(new_page(1200, 900), researcher))
    page.goto(f"{live_server.url}/studies/plan-browser/plan/")
    strengths = page.locator("input[name^='strength:']")
    assert strengths.count() == 2
    strengths.nth(0).fill("0.6")
    strengths.nth(1).fill("-0.6")
    page.fill("input[name=items]", "12")
    page.fill("input[name=annotators]", "4")
    page.fill("input[name=simulations]", "40")
    page.fill("input[name=stopping_every]", "12")
    page.click("#run-design")
    page.wait_for_function("() => document.querySelector('#plan-run')?.dataset.status === 'done'", timeout=120000)
    assert page.locator("#plan-run table.plan-targets tbody tr").count() == 1
    power = float(page.locator("#plan-run td.power").first.text_content())
    assert 0.0 <= power <= 1.0
    assert page.locator("#plan-run table.plan-stopping tbody tr").count() == 2
    assert page.locator("input[name=items]").input_value() == "12"  # the form shows the design that ran
    assert strengths.nth(0).input_value() == "0.6" and page.locator("input[name=stopping_every]").input_value() == "12"
    assert csp_violations(page) == [] and page.problems == []
    assert serious_violations(page) == []
    page.screenshot(path=str(SHOTS / "plan.png"), full_page=True)
    page.click("#save-design")
    page.locator("#plan-saved").wait_for()
    saved = Study.objects.get(slug="plan-browser").config["power"]
    assert saved["result"]["targets"][0]["power"] == pytest.approx(power, abs=5e-4)
    assert saved["design"]["stopping"] == {"every": 12, "target": 0}
    assert page.locator("#plan-saved-design table.plan-targets").count() == 1
