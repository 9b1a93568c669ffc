"""A scalar_rating item in Debian's Chromium: the plot and its context shown (never the
system id), a rating from the 1-10 scale with the keyboard, the review typed in, one
submit; the stored judgment holds both. Screenshot: docs/screenshots/annotate-scalar.png."""
import pytest

from annotate.models import Judgment
from annotate.studies.importing import import_batch_bytes
from tests.browser.test_annotate_browser import SCREENSHOTS, open_task, press, wait_done
from tests.factories import header, jsonl, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("empty_tables_after_module")]

PLOT = ("A retired lighthouse keeper receives a letter addressed to her, dated forty years in the future. She "
        "answers it, and the replies start arriving with the tide, each one knowing a little more about her.")


def test_a_plot_rated_with_the_keyboard_and_a_review(live_server, new_page, logged_in):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    import_batch_bytes(jsonl(header("plots", "scalar_rating", comment="required", annotations_per_item=1,
                                    instructions="Rate how much **you** would enjoy the film."),
                             {"item_id": "p1", "input": "A keeper gets a letter.",
                              "candidate": {"id": "gpt-plotter", "text": PLOT}}))
    user = make_user("rita-reader")
    page = logged_in(new_page(), user)
    open_task(page, live_server, "plots")
    area = page.locator("#item-area").inner_text()
    assert PLOT in area and "A keeper gets a letter." in area and "gpt-plotter" not in area
    assert "Your review (required)" in area
    press(page, "8")  # a rating key picks 8 on the 1-10 scale
    assert page.locator("fieldset.question input:checked").get_attribute("value") == "8"
    page.fill("#item-comment", "The tide letters got me; I'd watch it twice.")
    page.screenshot(path=str(SCREENSHOTS / "annotate-scalar.png"), full_page=True)
    page.get_by_role("button", name="Submit").click()
    wait_done(page)
    assert list(Judgment.objects.filter(annotator=user).values_list("question", "value", "comment")) == [
        ("score", "8", "The tide letters got me; I'd watch it twice.")]
