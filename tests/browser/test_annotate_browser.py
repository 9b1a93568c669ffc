"""One item of each study kind completed in Debian's Chromium with the keyboard only; the
stored judgments are checked against the order the page showed. Also: login, the home
list, the shortcut help, the minimum-time warning, the hidden-tab timer, a double submit
and an audited edit. Screenshots of every page go to docs/screenshots/."""
import time
from pathlib import Path

import pytest

from annotate.models import Assignment, AuditLog, Judgment
from evaluation.report.kinds import ASPECT_PAIRWISE, EXPLANATION_CHOICE, PAIRWISE_ALIGNMENT, SIMILARITY_SURVEY
from tests.factories import add_items, blinding, explanation, make_study, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("empty_tables_after_module")]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
PASSWORD = "correct-horse-battery"

REVIEW_REQUEST = "Write a short review of the restaurant 'Le Petit Four' for my food blog."
REFERENCE = ("Okay, confession: I walked into Le Petit Four expecting another overpriced bistro and walked out "
             "planning my next visit. The duck was crisp, the sauce sharp with orange, and the waiter let me try "
             "three wines before I settled.\n\nIs it perfect? No. The dessert menu is tiny and the room gets loud "
             "after eight. But I'd go back tomorrow. Four forks out of five.")
CANDIDATE_1 = ("Le Petit Four is a charming bistro offering classic French dishes. The duck à l'orange is expertly "
               "prepared, with crisp skin and a balanced citrus sauce. Service is attentive and the wine list is "
               "extensive.\n\nThe dessert selection is limited and the dining room can become noisy in the "
               "evening. Overall, it is a recommended destination for lovers of French cuisine.")
CANDIDATE_2 = ("Confession time: I didn't expect much from Le Petit Four. Wrong! That duck — crackly skin, a sauce "
               "that actually tastes of oranges — had me scraping the plate. Our waiter happily poured samples "
               "until I found a red I liked.\n\nGripes? Three desserts, total, and by nine you're shouting over "
               "the next table. Still: I'm going back. Four forks.")
PLOT_A = ("A lighthouse keeper on a remote island finds a letter addressed to her, dated forty years in the future. "
          "It warns her not to light the lamp on the night of the winter storm. She ignores it, and a ship is "
          "saved; but the sailors she rescues include a girl who grows up to write the letter.\n\nYears later, "
          "the keeper must decide whether to tell the girl what she will one day do, knowing that the warning only "
          "exists because it was ignored.")
PLOT_B = ("A lighthouse keeper receives a letter from her younger self, written the day she took the job. The "
          "letter lists everything she hoped to become. Over one stormy winter she tries to live up to it, "
          "repairing the lamp, befriending the supply-boat captain and writing to her estranged brother.\n\nIn "
          "the end she writes a reply to her younger self, and the story closes as she finally leaves the island "
          "for the mainland.")


def annotator(name="annie"):
    return make_user(name, password=PASSWORD)


def study_with_item(kind, data, slug=None, overlap=1, n=1, **fields):
    study = make_study(kind, slug, overlap, title=TITLES[kind], instructions=INSTRUCTIONS[kind], **fields)
    add_items(study, [(f"{study.slug}-{i}", data, None) for i in range(n)])
    return study


TITLES = {PAIRWISE_ALIGNMENT: "Which review sounds like its author?",
          EXPLANATION_CHOICE: "Judge responses from their explanations",
          SIMILARITY_SURVEY: "How similar are these summaries?",
          ASPECT_PAIRWISE: "Which story plot do you prefer?"}
INSTRUCTIONS = {
    PAIRWISE_ALIGNMENT: "Read the **user's own review** first. Then pick the response that is closer to it in "
                        "*content* and *writing style*.\n\n- Ignore length differences\n- <script>alert(1)</script> "
                        "stays text",
    EXPLANATION_CHOICE: "You only see what an automatic explainer found. Decide which response is better.",
    SIMILARITY_SURVEY: "Rate each pair of texts from 1 (low similarity) to 6 (very high similarity).",
    ASPECT_PAIRWISE: "Read the premise and both plots, then answer the five questions.",
}
PAIRWISE_DATA = {"input": REVIEW_REQUEST, "reference": REFERENCE,
                 "candidates": [{"id": "formal-model", "text": CANDIDATE_1},
                                {"id": "styled-model", "text": CANDIDATE_2}]}
EXPLANATION_DATA = {**PAIRWISE_DATA, "explanations": {"formal-model": explanation("formal"),
                                                      "styled-model": explanation("styled")}}
SIMILARITY_DATA = {"document": {"id": "d1", "text": "not shown"}, "users": ["u1", "u2"], "pairs": [
    {"id": "ref", "source": "reference", "texts": ["Storm closes coastal roads",
                                                   "Coastal towns brace for storm damage"]},
    {"id": "m1-c0", "source": "model", "model": "smollm2", "prompt_style": "C-0-shot",
     "texts": ["Heavy storm expected on the coast tonight", "Storm to hit the coast tonight"]},
    {"id": "m1-c2", "source": "model", "model": "smollm2", "prompt_style": "C-2-shot w/o hist",
     "texts": ["Roads closed as storm nears", "Fishermen stay in port ahead of storm"]},
    {"id": "m1-c2h", "source": "model", "model": "smollm2", "prompt_style": "C-2-shot w/ hist",
     "texts": ["Commuters warned of flooding", "Harbour festival postponed by storm"]},
]}
ASPECT_DATA = {"premise": "A lighthouse keeper finds a letter that should not exist.",
               "candidates": [{"id": "plot-1", "text": PLOT_A}, {"id": "plot-2", "text": PLOT_B}]}


def log_in(page, live_server, username, screenshot=None):
    page.goto(f"{live_server.url}/")
    assert "/login/" in page.url  # anonymous visitors are sent to the login page
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    if screenshot:
        page.screenshot(path=str(SCREENSHOTS / screenshot), full_page=True)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")


def start(page):
    """A GET of the task page reserves nothing: the Start button (htmx POST) brings the item."""
    if page.locator("#item-form").count() == 0:
        page.click("#start")
    page.wait_for_selector("#item-form")


def open_task(page, live_server, slug):
    page.goto(f"{live_server.url}/annotate/{slug}/")
    start(page)
    page.wait_for_function("() => document.activeElement && document.activeElement.classList.contains('item-title')")


def press(page, *keys):
    for key in keys:
        page.keyboard.press(key)


def annie_at_task(live_server, new_page, kind, data, **study):
    """Annie, logged in on a fresh page with the task of a new `kind` study open."""
    user = annotator()
    slug = study_with_item(kind, data, **study).slug
    page = new_page()
    log_in(page, live_server, "annie")
    open_task(page, live_server, slug)
    return user, page


def wait_done(page):
    page.wait_for_selector("#done-title")


def the_assignment(user):
    return Assignment.objects.get(annotator=user)


def stored(user):
    return {j.question: j for j in Judgment.objects.filter(annotator=user)}


def test_pairwise_alignment_with_the_keyboard(live_server, new_page):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    user = annotator()
    study_with_item(PAIRWISE_ALIGNMENT, PAIRWISE_DATA)
    study_with_item(ASPECT_PAIRWISE, ASPECT_DATA, n=3)
    page = new_page()
    log_in(page, live_server, "annie", screenshot="annotate-login.png")
    rows = page.locator("table.studies tbody tr")
    assert rows.count() == 2
    assert "0" in rows.nth(0).locator("td").nth(0).inner_text()
    page.screenshot(path=str(SCREENSHOTS / "annotate-home.png"), full_page=True)
    page.get_by_role("link", name="Start Which review sounds like its author?").click()
    start(page)
    assert page.locator("details#instructions").get_attribute("open") is not None  # first visit: shown
    assert page.locator("details#instructions script").count() == 0  # Markdown cannot inject HTML
    assert "<script>alert(1)</script>" in page.locator("details#instructions").inner_text()
    page.wait_for_function("() => document.activeElement.classList.contains('item-title')")
    page.screenshot(path=str(SCREENSHOTS / "annotate-pairwise.png"), full_page=True)
    shown = the_assignment(user).shown_order["choice"]
    assert page.locator("article.candidate .text").nth(1).inner_text().startswith(
        {"formal-model": "Le Petit Four is", "styled-model": "Confession time"}[shown[1]])
    assert "formal-model" not in page.locator("#item-area").inner_text()  # model ids are never shown
    press(page, "b")  # Response B = the second shown candidate
    token = blinding(the_assignment(user).pk).option(shown[1])  # radio values are the assignment's tokens
    assert page.locator("fieldset.question input:checked").get_attribute("value") == token
    press(page, "Enter")
    wait_done(page)
    judgments = stored(user)
    assert judgments["choice"].value == shown[1]
    assert judgments["choice"].shown_order == "|".join(shown)
    assert 0 < judgments["choice"].seconds < 60
    assert page.locator("#progress").inner_text().startswith("1 done")
    assert page.locator("#edit-previous").count() == 0  # overlap 1: the item is complete, no edits
    page.screenshot(path=str(SCREENSHOTS / "annotate-done.png"), full_page=True)
    page.goto(f"{live_server.url}/")
    assert page.locator("table.studies tbody tr").nth(1).locator("td").nth(0).inner_text() == "1"


def test_explanation_choice_with_the_keyboard(live_server, new_page):
    user, page = annie_at_task(live_server, new_page, EXPLANATION_CHOICE, EXPLANATION_DATA)
    text = page.locator("#item-area").inner_text()
    assert "Both discuss the film." in text and "One is chatty, one is formal." in text  # reasons shown
    assert "0.75" not in text and "score" not in text.lower()  # scores are not
    page.screenshot(path=str(SCREENSHOTS / "annotate-explanation.png"), full_page=True)
    press(page, "?")
    assert page.locator("#keys-dialog").evaluate("d => d.open")
    page.screenshot(path=str(SCREENSHOTS / "annotate-keys.png"))
    press(page, "Escape")
    assert not page.locator("#keys-dialog").evaluate("d => d.open")
    press(page, "a", "4", "Enter")
    wait_done(page)
    shown = the_assignment(user).shown_order["choice"]
    judgments = stored(user)
    assert (judgments["choice"].value, judgments["usefulness"].value) == (shown[0], "4")
    assert judgments["usefulness"].shown_order == ""


def test_similarity_survey_with_the_keyboard(live_server, new_page):
    user, page = annie_at_task(live_server, new_page, SIMILARITY_SURVEY, SIMILARITY_DATA)
    page.screenshot(path=str(SCREENSHOTS / "annotate-similarity.png"), full_page=True)
    press(page, "Enter")  # nothing answered yet: nothing is sent, the first pair gets focus
    assert "4 more questions" in page.locator("#status").inner_text()
    assert Judgment.objects.count() == 0
    press(page, "5", "3", "6", "2", "Enter")  # focus moves to the next pair after each rating
    wait_done(page)
    assignment = the_assignment(user)
    pair_order = assignment.shown_order["pair_order"]
    judgments = stored(user)
    assert {pid: judgments[pid].value for pid in pair_order} == dict(zip(pair_order, ["5", "3", "6", "2"]))
    for pid in pair_order:
        assert judgments[pid].shown_order == "|".join(assignment.shown_order[pid])


def test_aspect_pairwise_with_the_keyboard_and_narrow_screen(live_server, new_page):
    user, page = annie_at_task(live_server, new_page, ASPECT_PAIRWISE, ASPECT_DATA)
    page.screenshot(path=str(SCREENSHOTS / "annotate-aspects.png"), full_page=True)
    boxes = [page.locator("article.candidate").nth(i).bounding_box() for i in range(2)]
    assert boxes[0]["y"] == boxes[1]["y"] and boxes[0]["x"] < boxes[1]["x"]  # side by side on a wide screen
    narrow = new_page(width=420, height=900)
    log_in(narrow, live_server, "annie")
    open_task(narrow, live_server, "aspect-pairwise")
    boxes = [narrow.locator("article.candidate").nth(i).bounding_box() for i in range(2)]
    assert boxes[1]["y"] > boxes[0]["y"] + boxes[0]["height"] - 1  # stacked on a narrow one
    narrow.screenshot(path=str(SCREENSHOTS / "annotate-aspects-narrow.png"), full_page=True)
    press(page, "1", "2", "b", "a", "1", "Enter")
    wait_done(page)
    shown = the_assignment(user).shown_order["candidates"]
    judgments = stored(user)
    expected = {"interestingness": shown[0], "adaptability": shown[1], "surprise": shown[1],
                "character": shown[0], "ending": shown[0]}
    assert {k: judgments[k].value for k in expected} == expected
    assert all(judgments[k].shown_order == "|".join(shown) for k in expected)


def test_minimum_time_warning_and_hidden_tab_time(live_server, new_page):
    """min_seconds 2: an answer after <2 s is held back with a warning; Enter again sends
    it. The tab is then 'hidden' for 1.5 s on the next item: the stored seconds are at
    least the 2.2 s visible and at most the wall time minus the hidden 1.5 s (0.1 slack)."""
    user, page = annie_at_task(live_server, new_page, PAIRWISE_ALIGNMENT, PAIRWISE_DATA, min_seconds=2, n=2)
    press(page, "1", "Enter")
    page.wait_for_selector("#fast-warning:not([hidden])")
    assert "at least 2 s" in page.locator("#fast-warning").inner_text()
    page.screenshot(path=str(SCREENSHOTS / "annotate-min-time-warning.png"), full_page=True)
    assert Judgment.objects.count() == 0
    press(page, "Enter")
    page.wait_for_function("() => document.querySelector('.item-title').textContent.trim() === 'Item 2'")
    assert page.locator("#edit-previous").count() == 0  # overlap 1: that item is complete
    assert Judgment.objects.count() == 1
    # second item: hide the tab for 1.5 s of the ~3.7 s it is shown (visible ~2.2 s > minimum)
    started = time.monotonic()
    set_visibility = ("s => { Object.defineProperty(document, 'visibilityState', {value: s, configurable: true});"
                      " document.dispatchEvent(new Event('visibilitychange')); }")
    page.evaluate(set_visibility, "hidden")
    time.sleep(1.5)
    page.evaluate(set_visibility, "visible")
    time.sleep(2.2)
    press(page, "2", "Enter")
    wall = time.monotonic() - started
    wait_done(page)
    second = Judgment.objects.filter(annotator=user).order_by("-id").first()
    assert 2.0 <= second.seconds <= wall - 1.4, (second.seconds, wall)


def test_double_submit_and_audited_edit(live_server, new_page):
    """Overlap 2, so the item stays open for edits after this annotator's submit."""
    user, page = annie_at_task(live_server, new_page, PAIRWISE_ALIGNMENT, PAIRWISE_DATA, overlap=2, n=2)
    first = Assignment.objects.get(annotator=user)
    press(page, "1")
    page.evaluate("() => { const f = document.getElementById('item-form'); f.requestSubmit(); f.requestSubmit(); }")
    page.wait_for_selector("#edit-previous")
    assert Judgment.objects.filter(assignment=first).count() == 1
    assert Assignment.objects.filter(annotator=user).count() == 2  # moved on to exactly one new item
    page.locator("#edit-previous").click()
    page.wait_for_selector("#item-form[data-mode=edit]")
    page.screenshot(path=str(SCREENSHOTS / "annotate-edit.png"), full_page=True)
    shown = first.shown_order["choice"]
    assert page.locator("fieldset.question input:checked").get_attribute("value") == blinding(first.pk).option(shown[0])
    press(page, "2", "Enter")
    page.wait_for_selector("#item-form[data-mode=submit]")
    assert Judgment.objects.get(assignment=first).value == shown[1]
    log = AuditLog.objects.get()
    assert (log.before["values"], log.after["values"]) == ({"choice": shown[0]}, {"choice": shown[1]})
    assert "edit was saved" in page.locator("#status").inner_text()


def test_researcher_sees_annotator_quality(live_server, new_page):
    """ann answers two gold items (gold choice formal-model): one right, one wrong -> 50%;
    item times 8 and 12 s -> median 10.0."""
    from annotate.desk.submission import submit

    user = annotator()
    make_user("rita", role="researchers", password=PASSWORD)
    study = study_with_item(PAIRWISE_ALIGNMENT, PAIRWISE_DATA, n=0)
    golds = add_items(study, [(f"g{k}", PAIRWISE_DATA, {"choice": "formal-model"}) for k in range(2)])
    for item, (value, seconds) in zip(golds.values(), (("formal-model", 8), ("styled-model", 12))):
        a = Assignment.objects.create(study=study, item=item, annotator=user, shown_order={})
        submit(a.pk, user, {"choice": value}, seconds=seconds)
    page = new_page()
    log_in(page, live_server, "rita")
    page.get_by_role("link", name="annotator quality").click()
    cells = page.locator("#quality-table tbody tr").first.locator("td")
    assert [cells.nth(i).inner_text() for i in range(5)] == ["2", "2", "10.0", "1 / 2", "50%"]
    page.screenshot(path=str(SCREENSHOTS / "annotate-quality.png"), full_page=True)
