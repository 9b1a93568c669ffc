"""Issue 31 item 14: the first screen of a task shows the responses. In Debian's Chromium at
1366x768 (laptop) and 390x844 (phone), for each study kind: on the first item the
instructions are open; once it is answered they fold away (the htmx swap and a reload of
the page alike), and with the reservation countdown shown, the page at the top:
- laptop: at least RESPONSE_LINES lines of each response (all of a shorter one) are on
  screen, not under the answer bar;
- phone: the responses stack under the context, so the second cannot share the first
  screen without hiding text; there the item's texts start in the top 40% of the screen
  and at least RESPONSE_LINES lines of them (or all of the responses) are on screen above
  the bar.
On the edit page of My judgments the key hints work (2 / B picks the second option).
axe-core finds no critical or serious violation; no console error, no CSP violation.
Screenshots: docs/screenshots/annotate-first-screen-*.png and annotate-edit-page-*.png."""
import pytest

from annotate.models import Assignment, Judgment
from evaluation.report.kinds import ASPECT_PAIRWISE, EXPLANATION_CHOICE, PAIRWISE_ALIGNMENT, SIMILARITY_SURVEY
from tests.browser.axe import csp_violations, serious_violations, watch
from tests.browser.test_annotate_browser import (
    ASPECT_DATA,
    EXPLANATION_DATA,
    INSTRUCTIONS,
    PAIRWISE_DATA,
    SCREENSHOTS,
    SIMILARITY_DATA,
    TITLES,
)
from tests.factories import add_items, make_study, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("empty_tables_after_module")]

SCALAR_RATING = "scalar_rating"
LAPTOP, PHONE = (1366, 768), (390, 844)
QUESTIONS = {PAIRWISE_ALIGNMENT: 1, EXPLANATION_CHOICE: 2, SIMILARITY_SURVEY: 4, ASPECT_PAIRWISE: 5, SCALAR_RATING: 1}
RESPONSE_LINES = 6  # a response's first six lines: enough to judge its opening and its voice
SCALAR_DATA = {"input": "A keeper gets a letter.",
               "candidate": {"id": "gpt-plotter", "text": ASPECT_DATA["candidates"][0]["text"]}}
DATA = {PAIRWISE_ALIGNMENT: PAIRWISE_DATA, EXPLANATION_CHOICE: EXPLANATION_DATA, SIMILARITY_SURVEY: SIMILARITY_DATA,
        ASPECT_PAIRWISE: ASPECT_DATA, SCALAR_RATING: SCALAR_DATA}
# The responses of an item: the candidates' texts; for similarity pairs the first pair's two
# texts; explanation_choice shows no texts, its responses are the two explanations.
RESPONSES = {SIMILARITY_SURVEY: "#item-form .pair:first-of-type article.candidate .text",
             EXPLANATION_CHOICE: "#item-form article.candidate.explanation"}
CANDIDATE_TEXTS = "#item-form article.candidate .text"
ITEM_TEXTS = "#item-form .item-body .text, #item-form article.candidate.explanation"  # context and responses

# Per response: its lines (height / line height) and how many of them are visible with the
# page at the top: a line counts when the point 12 px into it is inside the viewport and the
# topmost element there is the text itself (not the answer bar or a stuck question).
VISIBLE_LINES = """selector => {
    window.scrollTo(0, 0);
    return Array.from(document.querySelectorAll(selector)).map(el => {
        const r = el.getBoundingClientRect();
        const lh = parseFloat(getComputedStyle(el).lineHeight);
        const lines = Math.round(r.height / lh);
        let visible = 0;
        for (let k = 0; k < lines; k++) {
            const y = r.top + (k + 0.5) * lh;
            if (y < 0 || y >= window.innerHeight) continue;
            const hit = document.elementFromPoint(r.left + 12, y);
            if (hit && el.contains(hit)) visible++;
        }
        return [lines, visible];
    });
}"""


def kind_study(kind, slug, overlap=1):
    study = make_study(kind, slug=slug, overlap=overlap, title=TITLES.get(kind, "Rate the plot"),
                       instructions=INSTRUCTIONS.get(kind, "Rate how much **you** would enjoy the film."))
    add_items(study, [(f"{slug}-{i}", DATA[kind], None) for i in range(3)])
    return study


def answer_item(page):
    for fieldset in page.locator("#item-form fieldset.question").all():
        fieldset.locator("label.choice").first.click()
    page.click("#item-form button[type=submit]")


def visible_lines(page, selector):
    """[lines, lines visible] of each element matching `selector`, the page at the top."""
    return page.evaluate(VISIBLE_LINES, selector)


def check_first_screen(page, kind, size, what):
    responses = visible_lines(page, RESPONSES.get(kind, CANDIDATE_TEXTS))
    print("FIGURE", what, "responses [lines, visible]:", responses)  # the report's figures (pytest -s)
    assert responses, what
    if size == LAPTOP:
        assert all(seen >= min(RESPONSE_LINES, total) for total, seen in responses), (what, responses)
    else:
        body_top = page.evaluate("() => { window.scrollTo(0, 0); return document.querySelector("
                                 "'#item-form .item-body').getBoundingClientRect().top; }")
        seen = sum(visible for _, visible in visible_lines(page, ITEM_TEXTS))
        print("FIGURE", what, "item body top", body_top, "px; item text lines visible", seen)
        whole = all(visible == total for total, visible in responses)  # e.g. a similarity pair's two headlines
        assert body_top <= 0.4 * size[1] and (seen >= RESPONSE_LINES or whole), (what, body_top, seen)


def check_clean(page, what):
    assert serious_violations(page) == [], what
    assert csp_violations(page) == [], what
    assert page.problems == [], what


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
@pytest.mark.parametrize("kind", [PAIRWISE_ALIGNMENT, EXPLANATION_CHOICE, SIMILARITY_SURVEY, ASPECT_PAIRWISE,
                                  SCALAR_RATING])
def test_the_first_screen_shows_the_responses(kind, size, live_server, new_page, logged_in):
    label = f"{kind.replace('_', '-')}-{'laptop' if size == LAPTOP else 'phone'}"
    study = kind_study(kind, label)
    user = make_user(f"ann-{kind[:4]}-{label[-5:]}")  # a name of usual length: the top bar keeps one line
    page = watch(logged_in(new_page(*size), user))
    page.goto(f"{live_server.url}/annotate/{study.slug}/")
    page.click("#start")
    page.wait_for_selector("#item-form")
    assert page.locator("details#instructions").evaluate("d => d.open")  # the first item: instructions open
    answer_item(page)
    page.wait_for_function("() => document.querySelector('#item-form .item-title').textContent.trim() === 'Item 2'")
    page.wait_for_load_state("load")
    for how in ("after the submit", "after a reload"):
        if how == "after the submit":
            page.screenshot(path=str(SCREENSHOTS / f"annotate-first-screen-{label}.png"))
        assert not page.locator("details#instructions").evaluate("d => d.open"), (label, how)
        assert page.locator("#countdown").is_visible(), (label, how)  # the reservation notice is shown
        check_first_screen(page, kind, size, f"{label} {how}")
        check_clean(page, f"{label} {how}")
        if how == "after the submit":
            page.reload()
            page.wait_for_selector("#item-form")
            page.wait_for_load_state("load")
    assert Judgment.objects.filter(annotator=user).count() == QUESTIONS[kind]  # the first item, answered once


@pytest.mark.parametrize("kind", [PAIRWISE_ALIGNMENT, EXPLANATION_CHOICE])
def test_the_key_hints_work_on_the_edit_page(kind, live_server, new_page, logged_in):
    """My judgments -> Edit (a full page, no htmx): the hints on the options are keys. 2 / B
    picks the second option, 1 / A the first, a digit rates; Enter saves."""
    slug = f"edit-{kind}".replace("_", "-")
    kind_study(kind, slug, overlap=2)
    user = make_user(f"ann-edit-{kind[:4]}")
    page = watch(logged_in(new_page(*LAPTOP), user))
    page.goto(f"{live_server.url}/annotate/{slug}/")
    page.click("#start")
    page.wait_for_selector("#item-form")
    answer_item(page)  # the first option of every question (a rating's lowest point)
    page.wait_for_selector("#edit-previous")
    first = Assignment.objects.filter(annotator=user, completed_at__isnull=False).get()
    page.goto(f"{live_server.url}/annotate/{slug}/mine/{first.pk}/edit/")
    page.wait_for_selector("#edit-form")
    page.wait_for_load_state("load")
    choice = page.locator("#edit-form fieldset.question").first
    hints = choice.locator("label.choice kbd")
    assert [hints.nth(i).inner_text() for i in range(hints.count())] == ["1/A", "2/B"]  # shown, so they must work
    checked = "fieldset => fieldset.querySelector('input:checked').closest('label').querySelector('.label').textContent"
    assert choice.evaluate(checked) == "Response A"
    choice.locator("input:checked").focus()
    page.keyboard.press("2")
    assert choice.evaluate(checked) == "Response B"
    page.keyboard.press("a")
    assert choice.evaluate(checked) == "Response A"
    page.keyboard.press("b")
    assert choice.evaluate(checked) == "Response B"
    if kind == EXPLANATION_CHOICE:  # on the usefulness scale a digit rates
        rating = page.locator("#edit-form fieldset.question").nth(1)
        rating.locator("input:checked").focus()
        page.keyboard.press("4")
        assert rating.locator("input:checked").get_attribute("value") == "4"
    check_clean(page, f"{kind} edit page")
    page.screenshot(path=str(SCREENSHOTS / f"annotate-edit-page-{kind.replace('_', '-')}.png"))
    page.keyboard.press("Enter")
    page.wait_for_selector("text=Your edit was saved.")
    shown = first.shown_order["choice"]
    stored = dict(Judgment.objects.filter(assignment=first).values_list("question", "value"))
    assert stored["choice"] == shown[1]  # Response B: the second candidate shown
    if kind == EXPLANATION_CHOICE:
        assert stored["usefulness"] == "4"
    check_clean(page, f"{kind} after the edit")
