"""Launch-safe recruitment (issue 23; interfaces.md "Launch-safe recruitment"): every attack
and dead end of the issue, replayed against the fixed code with exact statuses and row
counts. Outsiders and slug guessing (the same 404, no user made), platform-id takeover
(another session refused, nothing shown), fake entries and places, the screen-out page and
code, skips under a quota, server-capped seconds, no edits after completion or closing,
researchers' sessions, MTurk's preview, the dashboard's Recruitment panel."""
import csv
import io
import json
import re
import zlib
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from annotate.desk.assignment import reclaim_expired
from annotate.desk.drafts import item_handle
from annotate.desk.progress import annotator_progress
from annotate.desk.submission import submit
from annotate.models import Assignment, AuditLog, Item, Judgment, Participant, Study
from annotate.studies.batch_format import parse_header
from annotate.studies.importing import import_batch_bytes
from tests.factories import api_client, make_items, make_study, make_user, participant_link, tokens

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
SCREEN = "SCR33N"
COMPLETE = "https://app.prolific.com/submissions/complete"


def prolific(pid, session=None):
    return f"?PROLIFIC_PID={pid}&STUDY_ID=st1&SESSION_ID={session or 'se-' + pid}"


def recruiting(places=None, quota=None, n_items=4, overlap=1, **fields):
    recruitment = {"platform": "prolific", "screenout_code": SCREEN}
    if places is not None:
        recruitment["places"] = places
    fields.setdefault("instructions", "")
    study = make_study(overlap=overlap, recruitment=recruitment, max_items_per_participant=quota,
                       completion_code="DONE42", **fields)
    make_items(study, n_items)
    return study


def address_of(pid):
    """A client address of its own per participant id (the per-address limit is tested apart)."""
    h = zlib.crc32(pid.encode())
    return f"10.{h >> 16 & 255}.{h >> 8 & 255}.{h & 255}"


def enter(study, pid, session=None, client=None):
    client = client or Client(REMOTE_ADDR=address_of(pid))
    response = client.get(participant_link(study, prolific(pid, session)))
    assert response.status_code == 302 and response["Location"] == f"/p/{study.slug}/go/", response.status_code
    return client


def current(client, study):
    user = get_user_model().objects.get(pk=client.session["_auth_user_id"])
    return Assignment.objects.filter(study=study, annotator=user, completed_at__isnull=True).first()


def start(client, study):
    """The task page's Start (htmx POST): the response is the item, or HX-Redirect to the flow."""
    return client.post(f"/annotate/{study.slug}/next/", HTTP_HX_REQUEST="true")


def answer(client, study, choice="m1", seconds=5):
    a = current(client, study)
    return client.post(f"/annotate/{study.slug}/items/{a.pk}/submit/",
                       {"q:choice": tokens(a.pk, {"choice": choice})["choice"], "seconds": seconds},
                       HTTP_HX_REQUEST="true")


def skip(client, study):
    a = current(client, study)
    return client.post(f"/annotate/{study.slug}/items/{a.pk}/skip/", {"reason": "technical"}, HTTP_HX_REQUEST="true")


def csv_rows(study):
    text = api_client(make_user(f"res-{timezone.now().timestamp()}", "admins")).get(
        f"/api/studies/{study.slug}/participants.csv").content.decode()
    return list(csv.DictReader(io.StringIO(text)))


# --- who may enter --------------------------------------------------------------------------------

def test_outsiders_cannot_join_and_slugs_cannot_be_enumerated():
    """Unknown slug, wrong key, a study that does not recruit (open, or listing its
    annotators), a draft: the same 404, byte for byte, and no user is made."""
    study = recruiting()
    plain = make_study(slug="no-recruitment")  # open, every annotator may work on it, no links
    listed = make_study(slug="listed")
    listed.annotators.set([make_user("ann1")])
    draft = recruiting(slug="a-draft", status="draft")
    users = get_user_model().objects.count()
    query = prolific("intruder")
    bodies = set()
    for path in (f"/p/no-such-study/{study.entry_key}/{query}", f"/p/{study.slug}/{'x' * 32}/{query}",
                 f"/p/{study.slug}/{study.entry_key[:-1]}/{query}", f"/p/{plain.slug}/{study.entry_key}/{query}",
                 f"/p/{plain.slug}//{query}", f"/p/{listed.slug}/{study.entry_key}/{query}",
                 participant_link(draft, query), f"/p/{study.slug}/{query}", f"/p/{study.slug}/?pid=anything"):
        response = Client().get(path)
        assert response.status_code == 404, path
        bodies.add(re.sub(rb'"X-CSRFToken": "[^"]*"', b"", response.content))
    assert len(bodies) == 1  # nothing tells a wrong key from a missing study
    assert get_user_model().objects.count() == users and Participant.objects.count() == 0
    assert len(study.entry_key) == 32  # 24 random bytes: 192 bits


def test_recruitment_header_opts_in_and_refuses_listed_annotators():
    head = {"study": {"slug": "rec", "kind": "pairwise_alignment", "title": "T",
                      "recruitment": {"platform": "prolific", "places": 40, "screenout_code": "SO-1"}}}
    item = {"item_id": "i1", "input": "q", "reference": "r",
            "candidates": [{"id": "m1", "text": "a"}, {"id": "m2", "text": "b"}]}
    import_batch_bytes("\n".join(json.dumps(o) for o in (head, item)).encode())
    study = Study.objects.get(slug="rec")
    assert study.recruitment == {"platform": "prolific", "places": 40, "screenout_code": "SO-1"}
    assert len(study.entry_key) == 32
    make_user("ann1")
    _, errors = parse_header({"study": {"slug": "s", "kind": "pairwise_alignment", "annotators": ["ann1"],
                                        "recruitment": {"platform": "link"}}})
    assert errors == ["line 1: 'recruitment' cannot be combined with 'annotators': a study that lists its "
                      "annotators takes no participants from links"]
    for bad in ({"platform": "email"}, {"platform": "prolific", "places": 0}, {"platform": "mturk", "extra": 1},
                {"platform": "prolific", "screenout_code": "a b"}, {"platform": "prolific", "screenout_code": "A\n"},
                "prolific"):
        _, errors = parse_header({"study": {"slug": "s", "kind": "pairwise_alignment", "recruitment": bad}})
        assert len(errors) == 1 and errors[0].startswith("line 1: 'recruitment' must be {"), bad
    # A later header cannot make a study that lists its annotators recruit.
    listed = make_study(slug="listed")
    listed.annotators.set([get_user_model().objects.get(username="ann1")])
    later = {"study": {"slug": "listed", "kind": "pairwise_alignment", "recruitment": {"platform": "link"}}}
    with pytest.raises(Exception) as refused:
        import_batch_bytes(json.dumps(later).encode())
    assert refused.value.errors == ["line 1: 'recruitment' cannot be combined with 'annotators': study 'listed' "
                                    "lists its annotators, so it takes no participants from links"]
    assert Study.objects.get(slug="listed").entry_key == ""


# --- bound to the first session ---------------------------------------------------------------------

def test_platform_id_takeover_is_refused():
    """Someone who knows a participant's PROLIFIC_PID (but not their SESSION_ID) is refused
    and sees nothing of theirs; the participant goes on."""
    study = recruiting(n_items=3, quota=3)
    victim = enter(study, "5f2c0a1b", "se-victim")
    start(victim, study)
    answer(victim, study, "m2")
    log = AuditLog.objects.count()
    for query in (prolific("5f2c0a1b", "se-attacker"), "?PROLIFIC_PID=5f2c0a1b&STUDY_ID=st1&SESSION_ID=se-victim%20",
                  "?PROLIFIC_PID=5f2c0a1b%0A&STUDY_ID=st1&SESSION_ID=se-victim"):
        attacker = Client()
        response = attacker.get(participant_link(study, query))
        assert response.status_code in (400, 403), query
        assert "_auth_user_id" not in attacker.session
        assert attacker.get(f"/p/{study.slug}/go/").status_code == 404
        assert attacker.post(f"/api/studies/{study.slug}/assignments/next/").status_code == 403
    response = Client().get(participant_link(study, prolific("5f2c0a1b", "se-attacker")))
    assert response.status_code == 403 and b"This link was already used" in response.content
    assert b"Response" not in response.content and b"request" not in response.content.lower()
    assert (Participant.objects.count(), get_user_model().objects.count(), AuditLog.objects.count()) == (1, 1, log)
    assert Judgment.objects.get().value == "m2"
    assert answer(victim, study, "m1").status_code == 200  # the participant is unaffected
    assert Judgment.objects.filter(annotator__username="prolific:5f2c0a1b").count() == 2


def test_mturk_binds_the_assignment_and_link_binds_the_browser():
    hit = make_study(slug="hit", recruitment={"platform": "mturk"}, instructions="")
    make_items(hit, 2)
    worker = Client()
    url = participant_link(hit, "?workerId=W1&hitId=H1&assignmentId=A1&turkSubmitTo=https://www.mturk.com")
    assert worker.get(url).status_code == 302
    assert worker.get(url).status_code == 302  # the same assignment again (a reload): resumed
    other = Client().get(participant_link(hit, "?workerId=W1&hitId=H1&assignmentId=A2"))
    assert other.status_code == 403 and b"This link was already used" in other.content
    mail = make_study(slug="mail", recruitment={"platform": "link"}, instructions="")
    make_items(mail, 2)
    browser = Client()
    first = browser.get(participant_link(mail, "?pid=p-77"))
    assert first.status_code == 302 and first.cookies[f"humeval_entry_{mail.pk}"]["httponly"]
    assert browser.get(participant_link(mail, "?pid=p-77")).status_code == 302  # same browser: resumed
    stranger = Client().get(participant_link(mail, "?pid=p-77"))
    assert stranger.status_code == 403 and b"This link was already used" in stranger.content
    assert Participant.objects.filter(study=mail).get().browser_key != ""


def test_mturk_preview_is_a_styled_page_and_the_hit_frame_opens_a_tab():
    hit = make_study(slug="hit", recruitment={"platform": "mturk"}, max_items_per_participant=5)
    preview = Client().get(participant_link(hit, "?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1"))
    assert preview.status_code == 200 and b"Preview of this HIT" in preview.content
    assert b'href="/static/css/humeval.css"' in preview.content and b"up to 5 items" in preview.content
    assert "frame-ancestors https://www.mturk.com https://workersandbox.mturk.com" in (
        preview["Content-Security-Policy"])
    assert "X-Frame-Options" not in preview
    framed = Client().get(participant_link(hit, "?workerId=W1&hitId=H1&assignmentId=A1&turkSubmitTo="
                                                "https://workersandbox.mturk.com"), HTTP_SEC_FETCH_DEST="iframe")
    assert framed.status_code == 200 and b'target="_blank"' in framed.content
    assert b'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in framed.content
    assert b'name="assignmentId" value="A1"' in framed.content and b"csrfmiddlewaretoken" not in framed.content
    assert get_user_model().objects.count() == 0  # neither page makes anyone


def test_a_signed_in_researcher_is_not_signed_out_silently(researcher):
    study = recruiting()
    client = Client()
    client.force_login(researcher)
    page = client.get(participant_link(study, prolific("p1")))
    assert page.status_code == 200 and b"You are signed in as rita-researcher" in page.content
    assert client.session["_auth_user_id"] == str(researcher.pk) and Participant.objects.count() == 0
    assert client.get(f"/studies/{study.slug}/").status_code == 200  # still the researcher
    moved = client.post(participant_link(study, prolific("p1")), {"continue": "1"})
    assert moved.status_code == 302 and client.session["_auth_user_id"] != str(researcher.pk)
    assert Participant.objects.count() == 1
    # /login/ and /logout/ work from a participant session
    assert client.get("/login/").status_code == 200
    assert client.post("/logout/").status_code in (200, 302) and "_auth_user_id" not in client.session
    assert client.get(f"/p/{study.slug}/go/").status_code == 404


# --- places ------------------------------------------------------------------------------------------

def test_fifty_fake_entries_cannot_starve_a_real_participant():
    """50 scripted entries hold no place until they start items; those that start take at
    most `places`, the rest are screened out (screen-out code, never the completion code);
    places come back when the holders time out, and a real participant then completes."""
    study = recruiting(places=3, quota=2, n_items=12)
    fakes = [enter(study, f"fake{n:02d}") for n in range(50)]
    assert (Participant.objects.count(), Study.objects.get().places_taken) == (50, 0)
    real = enter(study, "real1")
    assert b"Item 1" in start(real, study).content
    answer(real, study)
    assert answer(real, study)["HX-Redirect"] == f"/p/{study.slug}/go/"
    done = real.get(f"/p/{study.slug}/go/")
    assert done.status_code == 200 and b"DONE42" in done.content and b"SCR33N" not in done.content
    outcomes = []
    for fake in fakes:
        response = start(fake, study)
        if "HX-Redirect" in response:
            page = fake.get(response["HX-Redirect"])
            assert b"no places left" in page.content and SCREEN.encode() in page.content
            assert b"DONE42" not in page.content
            outcomes.append("screened_out")
        else:
            outcomes.append("item")
    assert outcomes.count("item") == 2 and outcomes.count("screened_out") == 48
    assert Study.objects.get().places_taken == 3
    statuses = [r["status"] for r in csv_rows(study)]
    assert (statuses.count("completed"), statuses.count("in_progress"), statuses.count("screened_out")) == (1, 2, 48)
    # the two holders walk away: their items expire, the places come back
    Assignment.objects.filter(completed_at__isnull=True).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert reclaim_expired(study) == 2
    assert Study.objects.get().places_taken == 1
    late = enter(study, "real2")
    start(late, study)
    answer(late, study)
    answer(late, study)
    assert b"DONE42" in late.get(f"/p/{study.slug}/go/").content
    statuses = [r["status"] for r in csv_rows(study)]
    assert (statuses.count("completed"), statuses.count("timed_out"), statuses.count("screened_out")) == (2, 2, 48)


def test_full_study_screens_out_with_its_code_and_redirect():
    study = recruiting(places=1, quota=1, completion_url=COMPLETE)
    first = enter(study, "first")
    start(first, study)
    second = enter(study, "second")
    response = start(second, study)
    assert response["HX-Redirect"] == f"/p/{study.slug}/go/"
    out = second.get(f"/p/{study.slug}/go/")  # the platform takes the screen-out code at its completion URL
    assert out.status_code == 302 and out["Location"] == f"{COMPLETE}?cc={SCREEN}"
    page = second.get(f"/p/{study.slug}/go/")
    assert page.status_code == 200 and b"Sorry, no places left" in page.content and b"SCR33N" in page.content
    assert b"DONE42" not in page.content
    assert second.post(f"/api/studies/{study.slug}/assignments/next/").status_code == 204
    rows = {r["participant"]: (r["status"], r["items"]) for r in csv_rows(study)}
    assert rows == {"first": ("in_progress", "0"), "second": ("screened_out", "0")}
    assert Participant.objects.get(external_id="second").place_taken_at is None
    # no screen-out code: the platform's return instruction
    bare = make_study(slug="bare", recruitment={"platform": "prolific", "places": 1}, instructions="")
    make_items(bare, 2)
    start(enter(bare, "a"), bare)
    late = enter(bare, "b")
    page = late.get(start(late, bare)["HX-Redirect"])
    assert b"Please return your submission on Prolific" in page.content and b"screen-out code" not in page.content


def test_returning_gives_the_place_back():
    study = recruiting(places=1, quota=2)
    leaver = enter(study, "leaver")
    start(leaver, study)
    answer(leaver, study)
    assert Study.objects.get().places_taken == 1
    page = leaver.post(f"/p/{study.slug}/go/", {"step": "return"})
    assert b"Thank you for your time" in page.content
    assert Study.objects.get().places_taken == 0
    assert leaver.post(f"/api/studies/{study.slug}/assignments/next/").status_code == 204
    assert [r["status"] for r in csv_rows(study)] == ["returned"]
    newcomer = enter(study, "newcomer")
    assert b"Item 1" in start(newcomer, study).content


def test_default_places_follow_the_overlap():
    from annotate.participants.recruitment import places_limit

    study = recruiting(quota=3, n_items=10, overlap=2)
    assert places_limit(study) == 7  # ceil(10 x 2 / 3)
    assert places_limit(recruiting(slug="no-quota", n_items=10, overlap=2)) == 2


# --- skips, quota, the code ------------------------------------------------------------------------

def test_a_skip_under_a_quota_still_reaches_the_code():
    study = recruiting(quota=2, n_items=4, post_questions=[{"key": "hard", "question": "Hard?", "type": "text"}])
    client = enter(study, "skipper")
    start(client, study)
    skip(client, study)
    user = Participant.objects.get().user
    assert annotator_progress(study, user)["done"] == 0 and annotator_progress(study, user)["total"] == 2
    answer(client, study)
    assert annotator_progress(study, user) == {"done": 1, "assigned": 2, "total": 2, "remaining": 1}
    assert answer(client, study)["HX-Redirect"] == f"/p/{study.slug}/go/"
    assert client.get(f"/p/{study.slug}/go/").context["step"] == "post"
    client.post(f"/p/{study.slug}/go/", {"step": "post", "hard": "no"})
    assert b"DONE42" in client.get(f"/p/{study.slug}/go/").content
    assert [(r["status"], r["items"]) for r in csv_rows(study)] == [("completed", "2")]


def test_skipping_everything_earns_no_code():
    study = recruiting(quota=2, n_items=2)
    client = enter(study, "lazy")
    start(client, study)
    skip(client, study)
    response = skip(client, study)
    assert response["HX-Redirect"] == f"/p/{study.slug}/go/"
    page = client.get(f"/p/{study.slug}/go/")
    assert b"no places left" in page.content and b"DONE42" not in page.content
    assert [(r["status"], r["items"]) for r in csv_rows(study)] == [("screened_out", "0")]


def test_seconds_are_capped_by_the_time_since_the_item_was_handed_out():
    study = recruiting(quota=3)
    client = enter(study, "fast")
    start(client, study)
    a = current(client, study)
    user = a.annotator
    created, stored = submit(a.pk, user, {"choice": "m1"}, seconds=30, now=a.created_at + timedelta(seconds=2))[1:]
    assert stored and created[0].seconds == 2.0  # the page said 30 s, 2 s had passed
    start(client, study)
    b = current(client, study)
    judgments = submit(b.pk, user, {"choice": "m1"}, seconds=1.5, now=b.created_at + timedelta(seconds=9))[1]
    assert judgments[0].seconds == 1.5  # an honest page is believed
    start(client, study)
    response = answer(client, study, seconds=30)  # through the page, at once
    assert response.status_code == 200
    assert Judgment.objects.order_by("-id").first().seconds < 5
    # staff-made annotators' pages are believed as before
    staff = make_study(slug="staff")
    make_items(staff, 1)
    ann = make_user("ann9")
    from annotate.desk.assignment import next_assignment

    c = next_assignment(staff, ann)
    assert submit(c.pk, ann, {"choice": "m1"}, seconds=30, now=c.created_at + timedelta(seconds=2))[1][0].seconds == 30


# --- no edits after completion or closing ------------------------------------------------------------

def test_no_edit_after_completion_nor_in_a_paused_or_closed_study(annotators):
    study = recruiting(quota=1, n_items=3, overlap=3)
    client = enter(study, "finisher")
    start(client, study)
    a = current(client, study)
    answer(client, study)
    assert client.get(f"/p/{study.slug}/go/").status_code == 200  # the completion page: finished
    assert Participant.objects.get().status == "completed"
    url = f"/api/assignments/{a.pk}/judgments/"
    edit = client.patch(url, json.dumps(tokens(a.pk, {"choice": "m2"})), content_type="application/json")
    assert edit.status_code == 409 and edit.json() == {
        "detail": "you completed this study; its answers can no longer change"}
    page = client.post(f"/annotate/{study.slug}/items/{a.pk}/edit/", {"q:choice": tokens(a.pk, {"choice": "m2"})[
        "choice"]}, HTTP_HX_REQUEST="true")
    assert b"Not changed" in page.content or page.status_code == 302 or "HX-Redirect" in page
    assert client.post(f"/api/studies/{study.slug}/assignments/next/").status_code == 204
    assert list(Judgment.objects.values_list("value", flat=True)) == ["m1"]
    # anyone's answers: no edit while the study is paused or closed
    staff = api_client(annotators[0])
    mine = staff.post(f"/api/studies/{study.slug}/assignments/next/").json()["assignment"]
    body = tokens(mine, {"choice": "m1"})
    assert staff.post(f"/api/assignments/{mine}/judgments/", body, format="json").status_code == 201
    for status in ("paused", "closed"):
        Study.objects.filter(pk=study.pk).update(status=status)
        refused = staff.patch(f"/api/assignments/{mine}/judgments/", tokens(mine, {"choice": "m2"}), format="json")
        assert refused.status_code == 409 and refused.json() == {
            "detail": f"the study is {status}; answers can no longer be edited"}
    Study.objects.filter(pk=study.pk).update(status="open")
    assert staff.patch(f"/api/assignments/{mine}/judgments/", tokens(mine, {"choice": "m2"}),
                       format="json").status_code == 200


# --- the researcher's side ------------------------------------------------------------------------

def test_recruitment_panel_shows_the_whole_link_and_the_funnel(researcher, annotators):
    study = recruiting(places=2, quota=1, n_items=4, consent="Agree?")
    done = enter(study, "done1")
    done.post(f"/p/{study.slug}/go/", {"step": "consent", "consent": "yes"})  # reserves the first item
    answer(done, study)
    done.get(f"/p/{study.slug}/go/")
    enter(study, "looker")  # entered, never consented
    declined = enter(study, "nope")
    declined.post(f"/p/{study.slug}/go/", {"step": "consent", "consent": "no"})
    Participant.objects.filter(external_id="done1").update(started_at=timezone.now() - timedelta(minutes=12))
    dash = Client()
    dash.force_login(researcher)
    page = dash.get(f"/studies/{study.slug}/").content.decode()
    link = (f"http://testserver/p/{study.slug}/{study.entry_key}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
            "&amp;STUDY_ID={{%STUDY_ID%}}&amp;SESSION_ID={{%SESSION_ID%}}")
    assert f'<code id="participant-link">{link}</code>' in page  # whole, not cut with "…"
    assert '<dd id="places-taken">1 of 2</dd>' in page and '<dd id="places-left">1</dd>' in page
    assert '<dd id="median-minutes">12.0 min (n = 1 completed)</dd>' in page
    funnel = re.search(r'<table id="funnel">.*?<tbody><tr>(.*?)</tr>', page, re.S).group(1)
    assert re.findall(r'<td class="num">(\d+)</td>', funnel) == ["3", "1", "1", "1", "1", "0", "0", "0"]
    # pause, open, close: audited; a new link: the old one answers 404, sessions go on
    for action, status in (("pause", "paused"), ("open", "open"), ("close", "closed"), ("open", "open")):
        assert dash.post(f"/studies/{study.slug}/recruitment/", {"action": action}).status_code == 302
        assert Study.objects.get(pk=study.pk).status == status
    assert AuditLog.objects.filter(action="study.settings").count() == 4
    old = participant_link(study, prolific("late"))
    assert dash.post(f"/studies/{study.slug}/recruitment/", {"action": "rotate"}).status_code == 302
    study.refresh_from_db()
    assert Client().get(old).status_code == 404
    assert Client().get(participant_link(study, prolific("late"))).status_code == 302
    assert done.get(f"/p/{study.slug}/go/").status_code == 200
    assert api_client(annotators[0]).get(f"/studies/{study.slug}/").status_code in (302, 403)
    plain = Client()
    plain.force_login(annotators[0])
    assert plain.post(f"/studies/{study.slug}/recruitment/", {"action": "close"}).status_code == 403
    # the include-flagged switch carries into the report panel and the downloads
    flagged_page = dash.get(f"/studies/{study.slug}/?include_flagged=1").content.decode()
    assert "flagged participants included" in flagged_page
    assert f"/api/studies/{study.slug}/report/?format=json&amp;include_flagged=1" in flagged_page


def test_practice_feedback_names_the_texts_as_shown_and_shows_them_again():
    practice = {"item_id": "p1", "data": {"input": "Practice request.", "reference": "Ref.",
                                          "candidates": [{"id": "warm", "text": "The warm one."},
                                                         {"id": "stiff", "text": "The stiff one."}]},
                "gold": {"choice": "warm"}, "feedback": "The first answer is warmer."}
    study = recruiting(practice_items=[practice])
    client = enter(study, "learner")
    page = client.get(f"/p/{study.slug}/go/").content.decode()
    assert page.index("The warm one.") < page.index("The stiff one.")  # the batch's order: "the first answer"
    from annotate.desk.blinding import OPTION, make_token

    reveal = client.post(f"/p/{study.slug}/go/", {"step": "practice", "index": "1",
                                                   "q:choice": make_token(None, OPTION, "stiff")}).content.decode()
    assert ('Expected: <span class="expected">Response A</span>. You answered: <span class="given">Response B'
            '</span>') in reveal
    assert "The warm one." in reveal and "The stiff one." in reveal  # the texts again, labelled as before
    review = reveal[reveal.index("practice-review"):]
    assert review.index(">Response A<") < review.index("The warm one.") < review.index(">Response B<")


def test_drafts_are_kept_per_person():
    """A shared browser: the next person's draft key for the same item differs."""
    assert item_handle(5, 1) != item_handle(5, 2) and item_handle(5, 1) == item_handle(5, 1)


def test_first_item_is_one_screen_after_consent():
    study = recruiting(consent="You agree.", instructions="Pick the better one.")
    client = enter(study, "quick")
    assert client.get(f"/p/{study.slug}/go/").context["step"] == "consent"
    after = client.post(f"/p/{study.slug}/go/", {"step": "consent", "consent": "yes"})
    assert after["Location"] == f"/p/{study.slug}/go/"
    assert client.get(after["Location"])["Location"] == f"/annotate/{study.slug}/"
    task = client.get(f"/annotate/{study.slug}/").content.decode()
    assert 'id="item-form"' in task and "Pick the better one." in task  # the item and the instructions, no Start
    assert "My judgments" not in task and 'id="start"' not in task and 'data-lean="true" hidden' in task
    assert Item.objects.filter(n_assigned=1).count() == 1


def test_the_panel_gives_back_the_places_of_expired_items(researcher):
    study = recruiting(places=2, quota=2)
    client = enter(study, "gone")
    start(client, study)
    Assignment.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    dash = Client()
    dash.force_login(researcher)
    page = dash.get(f"/studies/{study.slug}/").content.decode()
    assert '<dd id="places-taken">0 of 2</dd>' in page
    funnel = re.search(r'<table id="funnel">.*?<tbody><tr>(.*?)</tr>', page, re.S).group(1)
    assert re.findall(r'<td class="num">([\d–]+)</td>', funnel) == ["1", "–", "1", "0", "0", "0", "1", "0"]
    assert (Assignment.objects.count(), Item.objects.filter(n_assigned=1).count()) == (0, 0)
    assert b"Item 1" in start(client, study).content  # back with the same link: a place again
    assert Participant.objects.get().status == "in_progress" and Study.objects.get().places_taken == 1


def test_the_admin_checks_recruitment_and_draws_the_key(admin_user_):
    from annotate.admin import StudyForm

    study = make_study(slug="admin-made")
    base = {f: getattr(study, f) for f in ("slug", "kind", "title", "instructions", "annotations_per_item",
                                           "gold_rate", "assignment_timeout_minutes", "status")}
    bad = StudyForm(data={**base, "config": "{}", "recruitment": '{"platform": "email"}'}, instance=study)
    assert not bad.is_valid() and bad.errors["recruitment"][0].startswith("'recruitment' must be {")
    superuser = make_user("root", None, is_superuser=True, is_staff=True)
    client = Client()
    client.force_login(superuser)
    data = {**base, "config": "{}", "recruitment": '{"platform": "link", "places": 5}', "practice_items": "[]",
            "pre_questions": "[]", "post_questions": "[]", "quality": "{}", "randomize_order": "on"}
    response = client.post(f"/admin/annotate/study/{study.pk}/change/", data)
    assert response.status_code == 302, response.content[:2000]
    study.refresh_from_db()
    assert study.recruitment == {"platform": "link", "places": 5} and len(study.entry_key) == 32
