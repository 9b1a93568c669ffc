"""No lost work, in Debian's Chromium: ticked answers survive a reload (localStorage),
the reservation countdown and its "Extend", "Can't judge" with a reason, and editing an
answer from the My judgments page. Screenshots go to docs/screenshots/."""
import re

import pytest

from annotate.models import Assignment, AuditLog, Judgment
from evaluation.report.kinds import PAIRWISE_ALIGNMENT
from tests.browser.test_annotate_browser import (
    PAIRWISE_DATA,
    SCREENSHOTS,
    annotator,
    log_in,
    open_task,
    press,
    study_with_item,
)
from tests.factories import blinding

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("empty_tables_after_module")]


def at_task(live_server, new_page, **study):
    user = annotator()
    slug = study_with_item(PAIRWISE_ALIGNMENT, PAIRWISE_DATA, **study).slug
    page = new_page()
    log_in(page, live_server, "annie")
    open_task(page, live_server, slug)
    return user, page, slug


def drafts(page):
    return page.evaluate("() => Object.keys(localStorage).filter(k => k.startsWith('humeval:draft:'))")


def test_ticked_answer_and_comment_survive_a_reload_and_clear_on_submit(live_server, new_page):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    user, page, _ = at_task(live_server, new_page, overlap=2, n=2, assignment_timeout_minutes=30)
    countdown = page.locator("#countdown")
    assert countdown.is_visible()
    page.wait_for_function("() => /\\d+:\\d\\d/.test(document.querySelector('.countdown-left').textContent)")
    assert re.fullmatch(r"(29|30):\d\d", countdown.locator(".countdown-left").inner_text())
    press(page, "2")
    page.locator("#item-comment").fill("The second one sounds like me.")
    assert len(drafts(page)) == 1
    page.reload()
    page.wait_for_selector("#item-form")
    assert page.locator("fieldset.question input:checked").count() == 1
    assignment = Assignment.objects.get(annotator=user)
    shown = assignment.shown_order["choice"]
    ticked = page.locator("fieldset.question input:checked").get_attribute("value")
    assert ticked == blinding(assignment.pk).option(shown[1])
    assert page.locator("#item-comment").input_value() == "The second one sounds like me."
    assert "restored" in page.locator(".draft-note").inner_text()
    page.locator("details.skip-box summary").click()
    page.screenshot(path=str(SCREENSHOTS / "annotate-item-no-lost-work.png"), full_page=True)
    page.locator("details.skip-box summary").click()
    page.locator("button[type=submit].primary").click()
    page.wait_for_selector("#edit-previous")
    judgment = Judgment.objects.get(annotator=user)
    assert (judgment.value, judgment.comment) == (shown[1], "The second one sounds like me.")
    assert drafts(page) == []  # sent: the draft is gone
    assert page.locator("#item-comment").input_value() == ""  # the next item starts empty


def test_ticked_answer_survives_an_expiry_and_a_fresh_assignment(live_server, new_page):
    """The fresh assignment of the same item has new blinding tokens: the draft still ticks
    the same answer (by its answer handle, annotate/desk/drafts.py)."""
    user, page, _ = at_task(live_server, new_page, overlap=1, n=1, assignment_timeout_minutes=30)
    first = Assignment.objects.get(annotator=user)
    press(page, "2")
    chosen = blinding(first.pk).options[page.locator("fieldset.question input:checked").get_attribute("value")]
    assert chosen == first.shown_order["choice"][1]
    Assignment.objects.filter(pk=first.pk).update(expires_at=first.created_at)  # the reservation ran out
    page.reload()
    page.wait_for_selector("#start")
    page.click("#start")
    page.wait_for_selector("#item-form")
    second = Assignment.objects.get(annotator=user)
    assert second.pk != first.pk and second.item_id == first.item_id
    ticked = page.locator("fieldset.question input:checked")
    assert ticked.count() == 1 and blinding(second.pk).options[ticked.get_attribute("value")] == chosen
    assert "restored" in page.locator(".draft-note").inner_text()


def test_extend_then_skip_with_a_reason(live_server, new_page):
    user, page, _ = at_task(live_server, new_page, overlap=1, n=2, assignment_timeout_minutes=10)
    first = Assignment.objects.get(annotator=user)
    page.locator("#extend-button").click()
    page.wait_for_selector("#countdown >> text=Extended.")
    first.refresh_from_db()
    assert first.extensions == 1
    assert page.locator("#extend-button").count() == 0  # once only
    assert page.locator("#countdown").is_visible()
    page.locator("details.skip-box summary").click()
    page.get_by_label("Offensive or unsafe content").check()
    page.locator("#skip-comment").fill("Insults a group.")
    page.get_by_role("button", name="Skip this item").click()
    page.wait_for_selector("#status >> text=Skipped")
    assert list(Judgment.objects.filter(annotator=user).values_list("question", "value", "comment")) == [
        ("_skip", "unsafe", "Insults a group.")]
    first.refresh_from_db()
    assert first.skipped and first.item.n_assigned == 0
    second = Assignment.objects.get(annotator=user, completed_at__isnull=True)
    assert second.item_id != first.item_id
    assert page.locator("#item-form").get_attribute("data-assignment") == str(second.pk)


def test_edit_from_my_judgments(live_server, new_page):
    user, page, slug = at_task(live_server, new_page, overlap=2, n=2)
    first = Assignment.objects.get(annotator=user)
    shown = first.shown_order["choice"]
    press(page, "1")
    page.locator("#item-comment").fill("First thought.")
    page.locator("button[type=submit].primary").click()  # Enter in the comment box is a new line
    page.wait_for_selector("#edit-previous")
    page.get_by_role("link", name="My judgments").click()
    page.wait_for_selector("table.judgments")
    row = page.locator("table.judgments tbody tr")
    assert row.count() == 1
    assert "Response A" in row.inner_text() and "First thought." in row.inner_text()
    assert shown[0] not in page.locator("main").inner_text()  # labels, never candidate ids
    page.screenshot(path=str(SCREENSHOTS / "annotate-my-judgments.png"), full_page=True)
    row.get_by_role("link", name=re.compile("Edit")).click()
    page.wait_for_selector("#edit-form")
    page.locator("input[type=radio]").nth(1).check()
    page.locator("#item-comment").fill("Second thought.")
    page.get_by_role("button", name="Save edit").click()
    page.wait_for_selector("text=Your edit was saved.")
    assert "Response B" in page.locator("table.judgments tbody tr").inner_text()
    judgment = Judgment.objects.get(assignment=first)
    assert (judgment.value, judgment.comment) == (shown[1], "Second thought.")
    log = AuditLog.objects.get(action="judgment.edit")
    assert log.before == {"item_id": first.item.item_id, "values": {"choice": shown[0]}, "comment": "First thought."}
    assert log.after == {"item_id": first.item.item_id, "values": {"choice": shown[1]}, "comment": "Second thought."}
    assert log.user == user
