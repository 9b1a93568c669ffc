"""Issue 14 item 17: answers survive a session lost mid-submit. Issue 15 item 10: on a
phone, the answers and Submit of a long item are on screen without scrolling.
Screenshots go to docs/screenshots/annotate-sticky-*.png and annotate-session-*.png."""
from pathlib import Path

import pytest

from annotate.models import Assignment, Judgment
from evaluation.report.kinds import ASPECT_PAIRWISE, EXPLANATION_CHOICE, PAIRWISE_ALIGNMENT, SIMILARITY_SURVEY
from tests.factories import add_items, explanation, make_study, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("empty_tables_after_module")]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
PASSWORD = "correct-horse-battery"
PHONE = (390, 844)
PARAGRAPH = ("The harbour town woke to grey skies and a wind that rattled every shutter on the front. By noon the "
             "ferry office had posted a notice, the fishing boats were tied two deep along the quay, and the baker "
             "had sold out of bread before most people had finished breakfast. ")


def long_text(paragraphs):
    return "\n\n".join(PARAGRAPH * 2 for _ in range(paragraphs))


def long_explanation(tag):
    exp = explanation(tag)
    exp["aspects_reference"] = [{"aspect": f"aspect {n} {tag}", "description": PARAGRAPH,
                                 "evidence": [PARAGRAPH[:90], PARAGRAPH[90:180]]} for n in range(4)]
    exp["aspects_generated"] = exp["aspects_reference"]
    exp["matches"] = exp["matches"] * 4
    return exp


LONG = {
    PAIRWISE_ALIGNMENT: {"input": "Write a report on the storm.", "reference": long_text(3),
                         "candidates": [{"id": "cand-one", "text": long_text(4)},
                                        {"id": "cand-two", "text": long_text(4)}]},
    EXPLANATION_CHOICE: {"input": "Write a report on the storm.", "reference": long_text(2),
                         "candidates": [{"id": "cand-one", "text": "x"}, {"id": "cand-two", "text": "y"}],
                         "explanations": {"cand-one": long_explanation("one"), "cand-two": long_explanation("two")}},
    SIMILARITY_SURVEY: {"document": {"id": "d", "text": "not shown"}, "users": ["u1", "u2"], "pairs": [
        {"id": f"pair-{n}", "source": "reference" if n == 0 else "model", "texts": [PARAGRAPH, PARAGRAPH[::-1]]}
        for n in range(10)]},
}


def form_login(page, live_server, username):
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()


def ticked(page):
    return page.evaluate("() => Array.from(document.querySelectorAll('#item-form input[type=radio]:checked'))"
                         ".map(i => [i.name, i.value])")


def test_answers_survive_a_lost_session(live_server, new_page):
    """Tick five answers, lose the cookies, submit: the page goes to the login with `next`
    back to the study; after logging in, the same item has the same five answers ticked, and
    one submit stores exactly one judgment per question."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    user = make_user("sam", password=PASSWORD)
    study = make_study(ASPECT_PAIRWISE, slug="lost", overlap=1, title="Which plot do you prefer?")
    add_items(study, [("only", {"premise": "A keeper finds a letter.",
                                "candidates": [{"id": "plot-a", "text": "She answers it."},
                                               {"id": "plot-b", "text": "She burns it."}]}, None)])
    page = new_page(*PHONE)
    page.goto(f"{live_server.url}/annotate/lost/")
    form_login(page, live_server, "sam")
    page.wait_for_url(f"{live_server.url}/annotate/lost/")
    page.click("#start")
    page.wait_for_selector("#item-form")
    assignment = page.locator("#item-form").get_attribute("data-assignment")
    questions = page.locator("#item-form fieldset.question")
    assert questions.count() == 5
    for n in range(5):
        questions.nth(n).locator("input[type=radio]").nth(n % 2).check()
    before = ticked(page)
    assert len(before) == 5
    qids = [questions.nth(n).get_attribute("data-question") for n in range(5)]

    page.context.clear_cookies()  # logged out in another tab / expired
    page.click("#item-form button[type=submit]")
    page.wait_for_url(f"{live_server.url}/login/?next=%2Fannotate%2Flost%2F")
    assert page.locator("#item-form").count() == 0  # a page of its own, not a login form inside the card
    assert Judgment.objects.count() == 0
    page.screenshot(path=str(SCREENSHOTS / "annotate-session-login.png"))

    form_login(page, live_server, "sam")
    page.wait_for_url(f"{live_server.url}/annotate/lost/")
    page.wait_for_selector("#item-form")
    assert page.locator("#item-form").get_attribute("data-assignment") == assignment  # the same item
    assert ticked(page) == before  # the same answers, ticked again
    assert "ticked again" in page.locator("#status").inner_text()
    page.screenshot(path=str(SCREENSHOTS / "annotate-session-restored.png"))
    page.click("#item-form button[type=submit]")
    page.wait_for_selector("#done-title")
    shown = Assignment.objects.get(pk=assignment).shown_order
    stored = list(Judgment.objects.filter(annotator=user).values_list("question", "value"))
    assert sorted(stored) == sorted((qid, shown[qid][n % 2]) for n, qid in enumerate(qids))
    assert Judgment.objects.count() == 5  # one per question, once
    assert page.evaluate("() => Object.keys(localStorage).filter(k => k.startsWith('humeval:answers:'))") == []


@pytest.mark.parametrize("kind", [EXPLANATION_CHOICE, SIMILARITY_SURVEY, PAIRWISE_ALIGNMENT])
def test_long_items_keep_the_answers_in_view_on_a_phone(kind, live_server, new_page, logged_in):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    user = make_user(f"phone-{kind}".replace("_", "-"))
    study = make_study(kind, slug=f"long-{kind}".replace("_", "-"), overlap=1, title="A long item",
                       instructions="Read both texts.")
    add_items(study, [("long", LONG[kind], None)])
    page = logged_in(new_page(*PHONE), user)
    page.goto(f"{live_server.url}/annotate/{study.slug}/")
    page.click("#start")
    page.wait_for_selector("#item-form")
    page.wait_for_function("() => document.activeElement && document.activeElement.classList.contains('item-title')")
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height > 2 * PHONE[1]  # a long item
    assert page.evaluate("window.scrollY") == 0
    for locator in (page.locator("#item-form input[type=radio]").first,
                    page.locator("#item-form button[type=submit]")):
        box = locator.bounding_box()
        assert box is not None
        assert box["y"] >= 0 and box["y"] + box["height"] <= PHONE[1], (kind, box, height)
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE[0], (kind, box)
    page.screenshot(path=str(SCREENSHOTS / f"annotate-sticky-{kind.replace('_', '-')}.png"))
    # Scrolled halfway down, the Submit button is still on screen.
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight / 2)")
    box = page.locator("#item-form button[type=submit]").bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= PHONE[1]
    page.screenshot(path=str(SCREENSHOTS / f"annotate-sticky-{kind.replace('_', '-')}-scrolled.png"))
