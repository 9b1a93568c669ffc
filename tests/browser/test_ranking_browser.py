"""The listwise ranking widget (static/js/order_question.js) in Debian's Chromium, at a laptop's
1366x768 and a phone's 390x844: all four outputs and every control in view without
horizontal scrolling, a ranking done with the keyboard alone (Enter places, arrow keys
move, announced in the live region), a ranking by tapping on a touch phone with a tie, a
drag with the mouse; axe-core finds no critical or serious violation, and there is no
console error or CSP violation. Screenshots: docs/screenshots/annotate-ranking-*.png."""
import json

import pytest

from annotate.models import Assignment, Judgment
from annotate.studies.importing import import_batch_bytes
from evaluation.report.kinds import RANKING
from tests.browser.axe import csp_violations, serious_violations, watch
from tests.browser.conftest import CHROMIUM  # noqa: F401 (the browser these tests need)
from tests.browser.test_annotate_browser import PASSWORD, SCREENSHOTS, log_in, open_task, wait_done
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("empty_tables_after_module")]

SYSTEMS = ["rag-k4", "bm25-k1", "no-profile", "random-profile"]
OWN = ("Packed the tent for two up the ridge on Saturday: it pitched in ten minutes, kept us dry through a "
       "night of sideways rain, and the porch fit both our boots. Heavier than I hoped, though.")
TEXTS = {"rag-k4": "Pitched in ten minutes up the ridge, dry through a night of sideways rain; the porch fits both "
                   "pairs of boots. Heavier than I hoped.",
         "bm25-k1": "The tent pitched quickly and stayed dry in the rain. It is a bit heavy.",
         "no-profile": "This two-person tent offers good weather protection and a quick setup for most campers.",
         "random-profile": "As a city cyclist I found the tent easy to carry on my commute."}


def ranking_study(slug, ties=False):
    head = {"study": {"slug": slug, "kind": RANKING, "title": "Rank the tent reviews", "annotations_per_item": 1,
                      "gold_rate": 0.0, "ties": ties,
                      "instructions": "Rank the reviews from the one closest to the user's own text to the furthest."}}
    line = {"item_id": "tent-1", "input": "Write a short review of my tent for two.", "reference": OWN,
            "candidates": [{"id": s, "text": TEXTS[s]} for s in SYSTEMS]}
    import_batch_bytes(("\n".join(json.dumps(o) for o in [head, line]) + "\n").encode())


def no_horizontal_scroll_and_all_in_width(page):
    """Nothing overflows sideways: the page is no wider than the window, and every output
    (its text and its row in the widget) and every control sits inside it."""
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    boxes = page.evaluate("""() => Array.from(document.querySelectorAll(
        '#item-area article.candidate, .rank-item, .rank-item button:not([hidden]), .answer-bar button[type=submit]'))
        .filter(e => e.offsetParent !== null)
        .map(e => { const r = e.getBoundingClientRect(); return [e.className, r.left, r.right, r.width]; })""")
    assert len([b for b in boxes if b[0] == "candidate"]) == 4
    assert len([b for b in boxes if b[0].startswith("rank-item")]) == 4
    width = page.evaluate("window.innerWidth")
    for name, left, right, w in boxes:
        assert left >= 0 and right <= width and w > 0, (name, left, right, width)


def clean_page(page):
    assert serious_violations(page) == []
    assert csp_violations(page) == []
    assert page.problems == []


def focus_next(page, selector, limit=30):
    """Tab until the focused element matches `selector`."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(f"document.activeElement && document.activeElement.matches({selector!r})"):
            return
    raise AssertionError(f"Tab never reached {selector}")


def announced(page, text):
    """Waits until the live region says `text` (it is set a moment after each change)."""
    page.wait_for_function("t => document.querySelector('.rank-live').textContent === t", arg=text)
    return True


def real(user):
    order = Assignment.objects.get(annotator=user).shown_order["candidates"]
    return dict(zip("ABCD", order))


def test_keyboard_only_ranking_at_1366(live_server, new_page):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    ranking_study("tents-keys")
    user = make_user("kim-keys", password=PASSWORD)
    page = watch(new_page(1366, 768))
    log_in(page, live_server, "kim-keys")
    open_task(page, live_server, "tents-keys")
    text = page.locator("#item-area").inner_text()
    assert all(TEXTS[s] in text for s in SYSTEMS) and not any(s in text for s in SYSTEMS)  # no system names
    no_horizontal_scroll_and_all_in_width(page)
    clean_page(page)
    # Submit before ranking: held, with a message, nothing stored.
    focus_next(page, ".answer-bar button[type=submit]")
    page.keyboard.press("Enter")
    page.wait_for_selector("fieldset.order-question.missing")
    assert "Rank every output first" in page.locator("#status").inner_text()
    assert page.evaluate("document.activeElement.textContent") == "Output A"
    # Enter on A, B, C (D goes last by itself); then C up one place.
    page.keyboard.press("Enter")
    assert announced(page, "Output A placed at position 1 of 4")
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('.rank-live').textContent.includes('placed last')")
    assert page.locator(".rank-list .rank-handle").all_inner_texts() == ["Output A", "Output B", "Output C", "Output D"]
    assert page.evaluate("document.activeElement.textContent") == "Output C"
    page.keyboard.press("ArrowUp")
    assert announced(page, "Output C moved to position 2 of 4")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert announced(page, "Output C moved to position 4 of 4")
    page.keyboard.press("Home")
    assert announced(page, "Output C moved to position 1 of 4")
    assert page.locator(".rank-list .rank-handle").all_inner_texts() == ["Output C", "Output A", "Output B", "Output D"]
    assert page.locator(".rank-pos").all_inner_texts() == ["1", "2", "3", "4"]
    no_horizontal_scroll_and_all_in_width(page)
    page.screenshot(path=str(SCREENSHOTS / "annotate-ranking-desktop.png"), full_page=True)
    clean_page(page)
    focus_next(page, ".answer-bar button[type=submit]")
    page.keyboard.press("Enter")
    wait_done(page)
    ids = real(user)
    assert Judgment.objects.get(annotator=user).value == ">".join(ids[x] for x in "CABD")
    clean_page(page)


def test_tapping_on_a_phone_with_a_tie_at_390(live_server, chromium):
    ranking_study("tents-tap", ties=True)
    user = make_user("pat-phone", password=PASSWORD)
    context = chromium.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    try:
        page = watch(context.new_page())
        page.set_default_timeout(15000)
        log_in(page, live_server, "pat-phone")
        open_task(page, live_server, "tents-tap")
        no_horizontal_scroll_and_all_in_width(page)
        clean_page(page)
        for label in ("Output B", "Output D", "Output A"):  # C goes last by itself
            page.locator(".rank-handle", has_text=label).tap()
        page.wait_for_selector("fieldset.order-question.complete")
        assert page.locator(".rank-list .rank-handle").all_inner_texts() == [
            "Output B", "Output D", "Output A", "Output C"]
        page.locator(".rank-list .rank-item").nth(1).locator(".rank-tie").tap()  # D shares B's rank
        assert page.locator(".rank-pos").all_inner_texts() == ["1", "1=", "3", "4"]
        page.locator(".rank-list .rank-item").nth(3).locator(".rank-up").tap()  # C above A
        assert page.locator(".rank-list .rank-handle").all_inner_texts() == [
            "Output B", "Output D", "Output C", "Output A"]
        no_horizontal_scroll_and_all_in_width(page)
        page.screenshot(path=str(SCREENSHOTS / "annotate-ranking-phone.png"), full_page=True)
        clean_page(page)
        page.get_by_role("button", name="Submit").tap()
        wait_done(page)
        ids = real(user)
        assert Judgment.objects.get(annotator=user).value == f"{ids['B']}={ids['D']}>{ids['C']}>{ids['A']}"
        clean_page(page)
    finally:
        context.close()


def test_drag_with_the_mouse(live_server, new_page):
    ranking_study("tents-drag")
    user = make_user("dee-drag", password=PASSWORD)
    page = watch(new_page(1366, 768))
    log_in(page, live_server, "dee-drag")
    open_task(page, live_server, "tents-drag")
    for label in ("Output A", "Output B", "Output C"):
        page.locator(".rank-handle", has_text=label).click()
    page.wait_for_selector("fieldset.order-question.complete")
    # D (last) dragged onto the upper half of A: first.
    first = page.locator(".rank-list .rank-item").nth(0)
    page.locator(".rank-list .rank-item").nth(3).drag_to(first, target_position={"x": 20, "y": 3})
    assert page.locator(".rank-list .rank-handle").all_inner_texts() == ["Output D", "Output A", "Output B", "Output C"]
    assert announced(page, "Output D moved to position 1 of 4")
    clean_page(page)
    page.get_by_role("button", name="Submit").click()
    wait_done(page)
    ids = real(user)
    assert Judgment.objects.get(annotator=user).value == ">".join(ids[x] for x in "DABC")


def test_a_ranking_survives_a_lost_session(live_server, new_page):
    """Rank, lose the cookies, submit: after logging in again the same item shows the same
    ranking (annotate.js keeps the hidden field; order_question.js redraws it), and one submit
    stores it once."""
    ranking_study("tents-lost")
    user = make_user("lou-lost", password=PASSWORD)
    page = watch(new_page(1366, 768))
    log_in(page, live_server, "lou-lost")
    open_task(page, live_server, "tents-lost")
    assignment = page.locator("#item-form").get_attribute("data-assignment")
    for label in ("Output C", "Output A", "Output D"):
        page.locator(".rank-handle", has_text=label).click()
    page.wait_for_selector("fieldset.order-question.complete")
    page.context.clear_cookies()
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(f"{live_server.url}/login/?next=%2Fannotate%2Ftents-lost%2F")
    assert Judgment.objects.count() == 0
    page.get_by_label("Username").fill("lou-lost")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/annotate/tents-lost/")
    page.wait_for_selector("fieldset.order-question.complete")
    assert page.locator("#item-form").get_attribute("data-assignment") == assignment
    assert page.locator(".rank-list .rank-handle").all_inner_texts() == ["Output C", "Output A", "Output D", "Output B"]
    assert "ticked again" in page.locator("#status").inner_text()
    page.get_by_role("button", name="Submit").click()
    wait_done(page)
    ids = real(user)
    assert list(Judgment.objects.values_list("value", flat=True)) == [">".join(ids[x] for x in "CADB")]
