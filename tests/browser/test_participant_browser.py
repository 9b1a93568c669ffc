"""A Prolific participant in Debian's Chromium, on a 390x844 phone (touch) and on a 1366x768
laptop, in a study of each kind: the link -> consent -> the first item on the very next
screen -> a skip -> two answered items (the quota) -> the post question -> the completion
redirect (intercepted with page.route). On every item page the first text and the first
answer control are in the first viewport; on every participant page axe-core reports no
critical or serious violation; no console error and no CSP violation anywhere. Touch
targets are at least 44 px on the phone, the rating scale is one line, the fixed answer
area takes at most a quarter of the screen. Also: practice feedback, the screen-out page,
a researcher's preview (the same templates, nothing written) and the dashboard's
Recruitment panel. Screenshots: docs/screenshots/participant-*.png (docs/running-a-study.md)."""
from pathlib import Path

import pytest

from annotate.desk.blinding import OPTION, make_token
from annotate.models import Assignment, Judgment, Participant
from tests.browser.axe import csp_violations, in_first_viewport, serious_violations, watch
from tests.factories import item_data, make_items, make_study, make_user, participant_link

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("empty_tables_after_module")]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
COMPLETE = "https://app.prolific.com/submissions/complete"
PHONE = {"width": 390, "height": 844, "touch": True}
LAPTOP = {"width": 1366, "height": 768, "touch": False}
CONSENT = ("## About this study\n\nYou will compare **two answers** to the same request, for about ten "
           "minutes. We keep your answers and your Prolific ID, nothing else.\n\n"
           "- You may stop at any time.\n- Questions: [contact us](mailto:lab@example.org).")
SENTENCE = ("The film follows a retired lighthouse keeper who starts writing letters to strangers, and the "
            "story slowly turns into a quiet portrait of a town that has forgotten how to talk to itself. ")
KINDS = ["pairwise_alignment", "aspect_pairwise", "explanation_choice", "similarity_survey"]


def long_item(kind, i):
    """An item of `kind` with texts of realistic length (a few hundred characters)."""
    data = item_data(kind, i)
    if kind == "pairwise_alignment":
        data["input"] = f"Write a short review of film {i} in my own voice, as I would post it."
        data["reference"] = "My own review: " + SENTENCE * 2
        for c in data["candidates"]:
            c["text"] = f"{c['text']} " + SENTENCE * 2
    elif kind == "aspect_pairwise":
        data["premise"] = f"Premise {i}: " + SENTENCE
        for c in data["candidates"]:
            c["text"] = f"{c['text']} " + SENTENCE * 3
    elif kind == "similarity_survey":
        data["document"]["text"] = "News article. " + SENTENCE * 3
    return data


def kind_study(kind, slug, **fields):
    study = make_study(kind, slug=slug, overlap=1, title="Which answer sounds like the user?",
                       instructions="Read the user's own text, then pick the answer that **sounds like them**.",
                       consent=CONSENT, completion_code="C1A2B3", completion_url=COMPLETE, max_items_per_participant=2,
                       post_questions=[{"key": "difficulty", "question": "How hard was it (1-5)?", "type": "number"}],
                       recruitment={"platform": "prolific", "screenout_code": "SCR33N"}, **fields)
    make_items(study, 3)
    for item in study.items.order_by("position"):
        item.data = long_item(kind, item.position)
        item.save(update_fields=["data"])
    return study


def shot(page, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"participant-{name}.png"), full_page=False)


def device(chromium, size):
    context = chromium.new_context(viewport={"width": size["width"], "height": size["height"]},
                                   has_touch=size["touch"], is_mobile=size["touch"],
                                   device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(15000)
    return watch(page)


def check_page(page, what):
    assert serious_violations(page) == [], what
    assert csp_violations(page) == [], what


def check_item_page(page, size, what):
    """The first text and the first answer control on the first screen, 44 px targets on
    phones, a one-line scale, at most a quarter of the screen for a fixed answer area."""
    page.wait_for_selector("#item-form")
    page.wait_for_load_state("load")  # the stylesheet too: #item-form exists before it applies (a busy CI run)
    assert in_first_viewport(page, ".item-body .text, .item-body .candidate", whole=False), what
    assert in_first_viewport(page, "#item-form label.choice"), what
    check_page(page, what)
    bar = page.evaluate("""() => { const b = document.querySelector('.answer-bar');
        const s = getComputedStyle(b); return [s.position, s.top, b.getBoundingClientRect().height]; }""")
    if bar[0] == "sticky" and bar[1] == "auto":  # stuck to the bottom over the texts
        assert bar[2] <= 0.25 * size["height"] + 1, (what, bar)
    if size["touch"]:
        small = page.evaluate("""() => Array.from(document.querySelectorAll(
            '#item-form label.choice, #item-form button, #item-area summary, .task button'))
            .filter(e => e.offsetParent !== null)
            .map(e => [e.textContent.trim().slice(0, 20), e.getBoundingClientRect().height])
            .filter(([, h]) => h < 44)""")
        assert small == [], (what, small)
        lines = page.evaluate("""() => Array.from(document.querySelectorAll('#item-area fieldset.rating .choices'))
            .map(c => new Set(Array.from(c.querySelectorAll('label.choice'))
                .map(l => Math.round(l.getBoundingClientRect().top))).size)""")
        assert all(n == 1 for n in lines), (what, lines)  # each scale on one line
        assert page.evaluate("getComputedStyle(document.getElementById('show-keys')).display") == "none"


def answer_item(page):
    """Ticks the first option of every question of the item and submits it."""
    for fieldset in page.locator("#item-form fieldset.question").all():
        fieldset.locator("label.choice").first.click()
    page.click("#item-form button[type=submit]")


@pytest.mark.parametrize("size", [PHONE, LAPTOP], ids=["phone", "laptop"])
@pytest.mark.parametrize("kind", KINDS)
def test_prolific_participant_walks_every_kind_to_the_completion_redirect(live_server, chromium, kind, size):
    label = f"{kind}-{'phone' if size['touch'] else 'laptop'}"
    slug = label.replace("_", "-")
    study = kind_study(kind, slug)
    page = device(chromium, size)
    landed = []
    page.route(f"{COMPLETE}**", lambda route: (landed.append(route.request.url),
                                               route.fulfill(status=200, body="Prolific: submission complete")))
    page.goto(live_server.url + participant_link(study, f"?PROLIFIC_PID=pp{len(slug)}{kind[:3]}&STUDY_ID=6123"
                                                        f"&SESSION_ID=s-{slug}"))
    page.wait_for_selector("#consent-title")
    check_page(page, f"{label} consent")
    if kind == "pairwise_alignment":
        shot(page, f"consent-{'phone' if size['touch'] else 'laptop'}")
    page.click("#consent-yes")  # the first item is on the very next screen: no Start, no extra card
    page.wait_for_selector("#item-form")
    assert page.url == f"{live_server.url}/annotate/{study.slug}/"
    check_item_page(page, size, f"{label} item 1")
    shot(page, f"item-{label}")
    assert page.locator("#my-judgments-link").count() == 0
    skipped = Assignment.objects.get(study=study, completed_at__isnull=True)
    page.locator("details.skip-box summary").click()
    page.get_by_role("button", name="Skip this item").click()
    page.wait_for_selector("#status >> text=Skipped")
    for n in (1, 2):  # a skip is not an answered item: the quota of 2 still needs two answers
        page.wait_for_selector(f"#item-form h2:has-text('Item {n}')")
        check_item_page(page, size, f"{label} item after skip {n}")
        answer_item(page)
    page.wait_for_selector("input[name=difficulty]")  # htmx went on to the post question
    check_page(page, f"{label} post")
    page.fill("input[name=difficulty]", "2")
    if label == "pairwise_alignment-laptop":
        shot(page, "post-questions")
    page.click("#continue")
    page.wait_for_url(f"{COMPLETE}?cc=C1A2B3")  # an HTTP redirect out of the form's POST, allowed by the CSP
    assert landed == [f"{COMPLETE}?cc=C1A2B3"]
    assert page.problems == [], page.problems
    p = Participant.objects.get(study=study)
    assert (p.status, p.post_answers) == ("completed", {"difficulty": 2.0})
    page.goto(f"{live_server.url}/p/{study.slug}/go/")  # coming back: the code and a link, no redirect
    assert page.inner_text("#completion-code") == "C1A2B3"
    check_page(page, f"{label} done")
    if label == "pairwise_alignment-phone":
        shot(page, "done")
    rows = Judgment.objects.filter(annotator=p.user)
    assert rows.filter(question="_skip").get().item_id == skipped.item_id
    assert rows.exclude(question="_skip").values("item").distinct().count() == 2
    page.context.close()


def test_practice_screen_out_preview_and_the_recruitment_panel(live_server, chromium, logged_in, new_page):
    practice = {"item_id": "practice-1",
                "data": {"input": "Write a two-line thank-you note to my neighbour for watering my plants.",
                         "reference": "Thanks a million for keeping my jungle alive! Coffee's on me this week.",
                         "candidates": [{"id": "warm", "text": "Huge thanks for looking after my plants! "
                                                               "Next coffee is on me."},
                                        {"id": "stiff", "text": "Dear neighbour, I hereby express gratitude for "
                                                                "the watering of plants."}]},
                "gold": {"choice": "warm"},
                "feedback": "The first answer keeps the user's **casual, playful tone**; the second is formal."}
    study = kind_study("pairwise_alignment", "film-reviews", practice_items=[practice],
                       pre_questions=[{"key": "reviews", "question": "How often do you write reviews?",
                                       "type": "choice", "options": ["never", "sometimes", "often"]}])
    study.recruitment = {"platform": "prolific", "places": 1, "screenout_code": "SCR33N"}
    study.completion_url = ""
    study.save()
    page = device(chromium, LAPTOP)
    page.goto(live_server.url + participant_link(study, "?PROLIFIC_PID=first&STUDY_ID=6123&SESSION_ID=s1"))
    page.click("#consent-yes")
    page.wait_for_selector("#instructions-title")
    check_page(page, "instructions")
    shot(page, "instructions")
    page.click("#continue")
    page.check("input[name=reviews][value=sometimes]")
    check_page(page, "pre questions")
    shot(page, "pre-questions")
    page.click("#continue")
    page.wait_for_selector("#practice-form")
    page.click(f"#practice-form label.choice:has(input[value={make_token(None, OPTION, 'stiff')}])")
    page.click("#practice-form button[type=submit]")
    page.wait_for_selector(".practice-feedback")
    assert page.inner_text(".reveal .expected") == "Response A" and page.inner_text(".reveal .given") == "Response B"
    assert "Huge thanks" in page.inner_text(".practice-review")  # the texts again, as they were shown
    check_page(page, "practice feedback")
    shot(page, "practice-feedback")
    page.click("#continue")
    page.wait_for_selector("#item-form")  # the first item, reserved by the last practice form
    assert page.problems == [], page.problems
    # The only place is taken: the next participant is screened out, with the screen-out code.
    late = device(chromium, PHONE)
    late.goto(live_server.url + participant_link(study, "?PROLIFIC_PID=second&STUDY_ID=6123&SESSION_ID=s2"))
    late.click("#consent-yes")
    late.click("#continue")
    late.check("input[name=reviews][value=never]")
    late.click("#continue")
    late.click("#practice-form label.choice >> nth=0")
    late.click("#practice-form button[type=submit]")
    late.click("#continue")
    late.wait_for_selector("#screenout-code")
    assert late.inner_text("#screenout-code") == "SCR33N" and "C1A2B3" not in late.content()
    check_page(late, "screen-out")
    shot(late, "screenout-phone")
    assert late.problems == [], late.problems
    # A researcher's preview: the participant's own task page, nothing written.
    researcher = make_user("rita", role="researchers")
    before = (Participant.objects.count(), Assignment.objects.count(), Judgment.objects.count())
    preview = watch(logged_in(new_page(1366, 768), researcher))
    preview.goto(f"{live_server.url}/p/{study.slug}/{study.entry_key}/preview/?restart=1")
    preview.click("#consent-yes")
    preview.click("#continue")
    preview.check("input[name=reviews][value=often]")
    preview.click("#continue")
    preview.click("#practice-form label.choice >> nth=0")
    preview.click("#practice-form button[type=submit]")
    preview.click("#continue")
    preview.wait_for_selector("#item-form")
    assert preview.locator(".preview-note").count() == 1 and preview.locator("#my-judgments-link").count() == 0
    check_page(preview, "preview item")
    shot(preview, "preview")
    answer_item(preview)
    preview.wait_for_selector("#status >> text=Saved (preview")
    answer_item(preview)
    preview.wait_for_selector("input[name=difficulty]")
    preview.fill("input[name=difficulty]", "1")
    preview.click("#continue")
    preview.wait_for_selector("#completion-code")
    assert preview.url == f"{live_server.url}/p/{study.slug}/{study.entry_key}/preview/"
    assert (Participant.objects.count(), Assignment.objects.count(), Judgment.objects.count()) == before
    assert preview.problems == [], preview.problems
    # The dashboard's Recruitment panel: the whole link, places, the funnel.
    preview.goto(f"{live_server.url}/studies/{study.slug}/")
    link = preview.inner_text("#participant-link")
    assert link == (f"{live_server.url}/p/{study.slug}/{study.entry_key}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
                    "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    assert preview.inner_text("#places-taken") == "1 of 1" and preview.inner_text("#places-left") == "0"
    assert preview.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    preview.locator("#recruitment-panel").screenshot(path=str(SCREENSHOTS / "participant-recruitment-panel.png"))
    preview.set_viewport_size({"width": 390, "height": 844})  # the dashboard on a phone: no sideways scrolling
    assert preview.evaluate("document.documentElement.scrollWidth") <= 390
    assert csp_violations(preview) == []
