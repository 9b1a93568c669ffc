"""A best_worst screen of four outputs in Debian's Chromium, at 390x844 (a phone) and
1366x768 (a laptop): every output and every answer control visible without horizontal
scrolling, labels Output A-D (never a model name), the whole item done with the keyboard
only (2 = best Output B, r = worst Output D, Enter), best == worst refused on the page with
nothing stored, axe-core 0 critical/serious, no console errors and no CSP violations.
Screenshots: docs/screenshots/annotate-best-worst-{390,1366}.png."""
import pytest

from annotate.models import Assignment, Judgment
from annotate.studies.importing import import_batch_bytes
from evaluation.report.kinds import BEST_WORST
from tests.browser.axe import csp_violations, serious_violations, watch
from tests.browser.test_annotate_browser import SCREENSHOTS, open_task, press, wait_done
from tests.factories import header, jsonl, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("empty_tables_after_module")]

MODELS = ("llama3-8b-sft", "gemma-2b-rag", "mistral-7b-base", "phi3-mini")
TEXTS = ("Folds in ten seconds and fits under my desk; the gears never slip. The saddle is a plank. Four stars.",
         "This folding bicycle offers an excellent combination of portability and performance for commuters.",
         "Folds fast, rides well, hard seat. Would buy again.",
         "Bicycles have been a popular means of transport since the nineteenth century.")
SIZES = [(390, 844), (1366, 768)]


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def out_of_view_when_scrolled_to(page, selector) -> list[str]:
    """Elements matching `selector` that, scrolled into view (the page or the answer bar's
    own scroll), are still not wholly inside the viewport."""
    return page.evaluate("""(selector) => Array.from(document.querySelectorAll(selector)).filter(el => {
        el.scrollIntoView({block: "nearest", inline: "nearest"});
        const r = el.getBoundingClientRect();
        const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return r.left < 0 || r.right > window.innerWidth || r.top < 0 || r.bottom > window.innerHeight
            || !(top && (el.contains(top) || top.contains(el)));
    }).map(el => el.textContent.trim().slice(0, 40))""", selector)


def fully_visible_horizontally(page, selector) -> list[str]:
    """Elements matching `selector` that stick out left or right of the viewport."""
    return page.evaluate("""(selector) => Array.from(document.querySelectorAll(selector))
        .filter(el => { const r = el.getBoundingClientRect(); return r.left < 0 || r.right > window.innerWidth; })
        .map(el => el.textContent.trim().slice(0, 40))""", selector)


@pytest.mark.parametrize("width,height", SIZES)
def test_four_outputs_keyboard_only(live_server, new_page, logged_in, width, height):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    slug = f"bws-browser-{width}"
    import_batch_bytes(jsonl(header(slug, BEST_WORST, annotations_per_item=1,
                                    instructions="Pick the **best** and the **worst** output."),
                             {"item_id": "bike", "input": "Write a short review of my folding bike.",
                              "reference": "Folds in ten seconds, fits under my desk. Saddle is a plank. Four stars.",
                              "candidates": [{"id": m, "text": t} for m, t in zip(MODELS, TEXTS)]}))
    user = make_user(f"bws-annie-{width}")
    page = watch(logged_in(new_page(width, height), user))
    open_task(page, live_server, slug)
    area = page.locator("#item-area").inner_text()
    assert all(t in area for t in TEXTS) and not any(m in area for m in MODELS)
    assert [page.locator("article.candidate h3").nth(k).inner_text() for k in range(4)] == [
        f"Output {c}" for c in "ABCD"]
    assert no_horizontal_scroll(page)
    assert fully_visible_horizontally(page, "article.candidate, fieldset.question, label.choice, "
                                            "button[type=submit]") == []
    best = page.locator("fieldset.question").nth(0)
    worst = page.locator("fieldset.question").nth(1)
    assert [best.locator("kbd").nth(k).inner_text() for k in range(4)] == ["1", "2", "3", "4"]
    assert [worst.locator("kbd").nth(k).inner_text() for k in range(4)] == ["Q", "W", "E", "R"]
    # each answer control can be brought into view and is not covered (the sticky bar scrolls)
    assert out_of_view_when_scrolled_to(page, "fieldset.question label.choice, #item-form button[type=submit]") == []
    page.evaluate("window.scrollTo(0, 0)")
    assert serious_violations(page) == []
    page.screenshot(path=str(SCREENSHOTS / f"annotate-best-worst-{width}.png"), full_page=True)
    if width > 1000:  # the keyboard help lists this kind's keys, not the pairwise ones
        press(page, "?")
        dialog = page.locator("#keys-dialog").inner_text()
        assert "pick the best output" in dialog and "Q W E R T Y" in dialog and "tie" not in dialog
        press(page, "Escape")
        page.wait_for_selector("#keys-dialog", state="hidden")
        page.locator("fieldset.question input").first.focus()
    # best == worst, with the keyboard: refused on the page, nothing stored
    press(page, "2", "w", "Enter")
    page.wait_for_selector("fieldset.question.has-error")
    assert "best and worst must be two different outputs" in page.locator("#item-area").inner_text()
    assert Judgment.objects.count() == 0
    press(page, "r", "Enter")  # worst: Output D
    wait_done(page)
    order = Assignment.objects.get(annotator=user).shown_order["candidates"]
    assert dict(Judgment.objects.filter(annotator=user).values_list("question", "value")) == {
        "best": order[1], "worst": order[3]}
    assert serious_violations(page) == []
    assert page.problems == [] and csp_violations(page) == []
