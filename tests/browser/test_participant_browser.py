"""A participant from a Prolific-style link, in Debian's Chromium: consent, instructions,
a pre question, a practice item with its feedback, the real items on the task page (a
reload mid-item restores the ticked answer; one item is skipped), the post-study questions
and the redirect to the completion URL (intercepted with page.route). Then the same session
cannot open another study, the dashboard, the admin or the API, and a researcher's preview
walks the pages writing nothing. Screenshots go to docs/screenshots/participant-*.png
(docs/running-a-study.md)."""
from pathlib import Path

import pytest

from annotate.blinding import OPTION, make_token
from annotate.models import Assignment, Judgment, Participant
from tests.factories import make_items, make_study, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("empty_tables_after_module")]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
COMPLETE = "https://app.prolific.com/submissions/complete"
CONSENT = ("## About this study\n\nYou will compare **two answers** to the same request, for about ten "
           "minutes. We keep your answers and your Prolific ID, nothing else.\n\n"
           "- You may stop at any time.\n- Questions: [contact us](mailto:lab@example.org).")
PRACTICE = {"item_id": "practice-1",
            "data": {"input": "Write a two-line thank-you note to my neighbour for watering my plants.",
                     "reference": "Thanks a million for keeping my jungle alive! Coffee's on me this week.",
                     "candidates": [{"id": "warm", "text": "Huge thanks for looking after my plants! "
                                                           "Next coffee is on me."},
                                    {"id": "stiff", "text": "Dear neighbour, I hereby express gratitude for "
                                                            "the watering of plants."}]},
            "gold": {"choice": "warm"},
            "feedback": "The first answer keeps the user's **casual, playful tone**; the second is formal."}


def shot(page, name):
    page.screenshot(path=str(SCREENSHOTS / f"participant-{name}.png"), full_page=True)


def participant_study(slug="film-reviews", n_items=2, **fields):
    study = make_study(slug=slug, overlap=1, title="Which review sounds like the user?",
                       instructions="Read the user's own review, then pick the answer that **sounds like "
                                    "them**. There are no trick questions.",
                       consent=CONSENT, completion_code="C1A2B3", completion_url=COMPLETE,
                       pre_questions=[{"key": "reviews", "question": "How often do you write reviews?",
                                       "type": "choice", "options": ["never", "sometimes", "often"]}],
                       post_questions=[{"key": "difficulty", "question": "How hard was it (1-5)?",
                                        "type": "number"},
                                       {"key": "comment", "question": "Anything we should know?", "type": "text"}],
                       practice_items=[PRACTICE], **fields)
    make_items(study, n_items)
    return study


def test_prolific_participant_walks_to_the_completion_redirect(live_server, new_page):
    study = participant_study(n_items=3)  # one is skipped on the way
    other = make_study(slug="other-study", overlap=1)
    make_items(other, 1)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page = new_page(1100, 800)
    landed = []
    page.route(f"{COMPLETE}**", lambda route: (landed.append(route.request.url),
                                               route.fulfill(status=200, body="Prolific: submission complete")))
    page.goto(f"{live_server.url}/p/{study.slug}/?PROLIFIC_PID=60a1b2c3d4e5f6&STUDY_ID=6123&SESSION_ID=s987")
    page.wait_for_selector("#consent-title")
    assert page.inner_text(".prose strong") == "two answers"
    shot(page, "consent")
    page.click("#consent-yes")
    page.wait_for_selector("#instructions-title")
    shot(page, "instructions")
    page.click("#continue")
    page.check("input[name=reviews][value=sometimes]")
    shot(page, "pre-questions")
    page.click("#continue")
    page.wait_for_selector("#practice-form")
    stiff = make_token(None, OPTION, "stiff")  # the practice form speaks tokens too
    page.click(f"#practice-form label.choice:has(input[value={stiff}])")  # the wrong one, on purpose
    page.click("#practice-form button[type=submit]")
    page.wait_for_selector(".practice-feedback")
    assert "(different)" in page.inner_text(".reveal")
    assert page.inner_text(".feedback strong") == "casual, playful tone"
    shot(page, "practice-feedback")
    page.click("#continue")
    page.click("#start")  # the task page reserves nothing until asked (a POST)
    page.wait_for_selector("#item-form")
    assert page.url == f"{live_server.url}/annotate/{study.slug}/"
    shot(page, "item")
    # A reload mid-item keeps the ticked answer (a draft in the page's localStorage) ...
    page.click("#item-form label.choice >> nth=0")
    page.reload()
    page.wait_for_selector("#item-form")
    assert page.locator("#item-form fieldset.question input:checked").count() == 1
    assert "restored" in page.locator(".draft-note").inner_text()
    # ... and that item is skipped ("I can't judge this"): it goes back to the pool, the next one comes
    skipped = Assignment.objects.get(study=study, completed_at__isnull=True)
    page.locator("details.skip-box summary").click()
    page.get_by_label("Technical problem").check()
    page.get_by_role("button", name="Skip this item").click()
    page.wait_for_selector("#status >> text=Skipped")
    skipped.refresh_from_db()
    assert skipped.skipped and skipped.item.n_assigned == 0
    for n in (1, 2):  # a skip is not a judged item: the count starts again at 1
        page.wait_for_function(f"() => document.querySelector('#item-form h2').textContent.includes('Item {n}')")
        page.click("#item-form label.choice >> nth=0")
        page.click("#item-form button[type=submit]")
    page.wait_for_selector("input[name=difficulty]")  # htmx redirected to the post questions
    page.fill("input[name=difficulty]", "2")
    page.fill("textarea[name=comment]", "Clear instructions.")
    shot(page, "post-questions")
    page.click("#continue")
    page.wait_for_selector("#completion-code")
    assert page.inner_text("#completion-code") == "C1A2B3"
    page.wait_for_url(f"{COMPLETE}?cc=C1A2B3")  # the completion page sends them on by itself
    assert landed == [f"{COMPLETE}?cc=C1A2B3"]
    assert page.url == f"{COMPLETE}?cc=C1A2B3"
    p = Participant.objects.get()
    assert (p.platform, p.external_id, p.platform_study_id, p.platform_session_id, p.status) == (
        "prolific", "60a1b2c3d4e5f6", "6123", "s987", "completed")
    assert (p.pre_answers, p.post_answers) == ({"reviews": "sometimes"},
                                               {"difficulty": 2.0, "comment": "Clear instructions."})
    rows = Judgment.objects.filter(annotator=p.user)
    assert sorted(rows.values_list("question", flat=True)) == ["_skip", "choice", "choice"]
    assert rows.get(question="_skip").value == "technical"
    assert set(rows.filter(question="choice").values_list("item_id", flat=True)).isdisjoint({skipped.item_id})
    # The completion page stays reachable; the session reaches nothing else.
    page.goto(f"{live_server.url}/p/{study.slug}/go/")
    assert page.inner_text("#completion-code") == "C1A2B3"
    shot(page, "done")
    for path in ("/annotate/other-study/", f"/studies/{study.slug}/", "/admin/", "/api/studies/", "/"):
        assert page.goto(f"{live_server.url}{path}").status == 404, path


def test_preview_shows_the_pages_and_writes_nothing(live_server, new_page, logged_in):
    study = participant_study(slug="preview-me")
    researcher = make_user("rita", role="researchers")
    page = logged_in(new_page(1100, 800), researcher)
    before = (Participant.objects.count(), Assignment.objects.count(), Judgment.objects.count())
    page.goto(f"{live_server.url}/p/{study.slug}/preview/?restart=1")
    page.click("#consent-yes")
    page.click("#continue")
    page.check("input[name=reviews][value=often]")
    page.click("#continue")
    page.click("#practice-form label.choice >> nth=0")
    page.click("#practice-form button[type=submit]")
    page.click("#continue")
    page.wait_for_selector("#preview-form")
    shot(page, "preview")
    page.click("#preview-form button[name=finish]")
    page.fill("input[name=difficulty]", "1")
    page.fill("textarea[name=comment]", "-")
    page.click("#continue")
    page.wait_for_selector("#completion-code")
    assert page.url == f"{live_server.url}/p/{study.slug}/preview/"  # never sent to the platform
    assert (Participant.objects.count(), Assignment.objects.count(), Judgment.objects.count()) == before
