"""Crowd integrity in Debian's Chromium (issue 31, items 6 and 7): a Prolific participant
passes consent, instructions and the comprehension check (one wrong attempt, then right),
then pastes into the item's comment with Ctrl+V and leaves the window while writing it;
the judgment stores the paste and the focus loss. The comprehension pages and the
"too many new participants" page pass axe-core (no critical or serious violation) with no
CSP violation. Screenshot: docs/screenshots/participant-comprehension-laptop.png."""
import pytest

from annotate.models import Judgment
from tests.browser.test_participant_browser import LAPTOP, check_page, device, shot
from tests.factories import make_items, make_study, participant_link

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("empty_tables_after_module")]
CHECK = [{"key": "ties", "question": "May you answer 'tie'?", "options": ["yes", "no"], "answer": "no"}]


def test_comprehension_then_a_pasted_comment_is_counted(live_server, chromium):
    study = make_study(slug="crowd", overlap=1, consent="Agree?", instructions="Never answer **tie**.",
                       comprehension=CHECK, completion_code="C0DE", max_items_per_participant=1,
                       recruitment={"platform": "prolific", "screenout_code": "SCR33N", "per_address": 1})
    make_items(study, 2)
    page = device(chromium, LAPTOP)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(live_server.url + participant_link(study, "?PROLIFIC_PID=crowd1&STUDY_ID=s&SESSION_ID=x1"))
    page.click("#consent-yes")
    page.wait_for_selector("#instructions-title")
    page.click("#continue")
    page.wait_for_selector("#comprehension-title")
    check_page(page, "comprehension")
    page.locator("label.choice", has_text="yes").click()
    page.click("#continue")
    page.wait_for_selector("#comprehension-retry")
    check_page(page, "comprehension retry")
    shot(page, "comprehension-laptop")
    page.locator("label.choice", has_text="no").click()
    page.click("#continue")
    page.wait_for_selector("#item-form")
    page.evaluate("navigator.clipboard.writeText('Copied from somewhere else.')")
    page.click("#item-comment")
    page.keyboard.type("My own words. ")
    page.keyboard.press("Control+V")
    assert page.input_value("#item-comment") == "My own words. Copied from somewhere else."
    page.evaluate("window.dispatchEvent(new Event('blur'))")  # the window loses focus while writing
    page.locator("#item-form fieldset.question").first.locator("label.choice").first.click()
    page.click("#item-form button[type=submit]")
    page.wait_for_url("**/p/crowd/go/**")
    stored = list(Judgment.objects.filter(study=study).values_list("comment", "pastes", "focus_losses"))
    assert stored == [("My own words. Copied from somewhere else.", 1, 1)]
    # a second new participant from the same address (per_address 1): refused, with a way out
    other = device(chromium, LAPTOP)
    response = other.goto(live_server.url + participant_link(study, "?PROLIFIC_PID=crowd2&STUDY_ID=s&SESSION_ID=x2"))
    assert response.status == 429
    assert other.locator("#return-instructions").inner_text().startswith("If you cannot wait: Please return")
    check_page(other, "too many")
