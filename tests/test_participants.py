"""Participants from recruiting platforms (issue #15 items 1-4, 7-9; docs/running-a-study.md):
study status, participant links and their scoped sessions, consent / instructions /
practice / pre and post questions, the completion redirect and quota, per-participant
order, quality flags in reports and participants.csv, and the preview that writes nothing."""
import csv
import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from annotate.desk.assignment import next_assignment
from annotate.desk.blinding import OPTION, make_token
from annotate.desk.progress import annotator_progress
from annotate.desk.submission import submit
from annotate.models import Assignment, AuditLog, Item, Judgment, Participant, Study
from annotate.participants.participation import BadLink, LinkIds, completion_redirect, join, link_ids
from annotate.reports.data import study_report
from annotate.studies.batch_format import parse_header
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_io import export_judgment_rows, import_judgments
from tests.factories import api_client, make_items, make_user, participant_link, tokens
from tests.factories import make_study as make_any_study

RECRUIT = {"platform": "prolific"}


def make_study(*args, **fields):
    """A study that recruits from Prolific (participant links work only there)."""
    fields.setdefault("recruitment", RECRUIT)
    return make_any_study(*args, **fields)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]

def practice_token(real):
    """The token of option `real` on a practice or preview form (an unsaved assignment)."""
    return make_token(None, OPTION, real)


PROLIFIC = "?PROLIFIC_PID=5f2c0a1b&STUDY_ID=st01&SESSION_ID=se01"


def participant_client(slug, query=PROLIFIC):
    study = Study.objects.get(slug=slug)
    client = Client()
    response = client.get(participant_link(study, query))
    assert response.status_code == 302 and response["Location"] == f"/p/{slug}/go/", response.content[:300]
    return client


def answer_all(client, slug, choice="m1", seconds=5):
    """Submits every item the task page hands out (through the htmx submit URL)."""
    n = 0
    while True:
        user = get_user_model().objects.get(pk=client.session["_auth_user_id"])
        current = Assignment.objects.filter(study__slug=slug, annotator=user, completed_at__isnull=True).first()
        if current is None:
            page = client.get(f"/annotate/{slug}/")  # a GET reserves nothing: Start is a POST
            if page.status_code == 302:
                return n
            started = client.post(f"/annotate/{slug}/next/", HTTP_HX_REQUEST="true")
            current = Assignment.objects.filter(study__slug=slug, annotator=user, completed_at__isnull=True).first()
            if current is None:
                assert "HX-Redirect" in started, started.content[:300]
                return n
        answer = tokens(current.pk, {"choice": choice})["choice"]  # the annotator's doors speak tokens
        client.post(f"/annotate/{slug}/items/{current.pk}/submit/", {"q:choice": answer, "seconds": seconds},
                    HTTP_HX_REQUEST="true")
        n += 1


# --- 1. status --------------------------------------------------------------------------------

@pytest.mark.parametrize("status", ["draft", "paused", "closed"])
def test_only_open_studies_hand_out_items(annotators, status):
    study = make_study(overlap=1, status=status)
    make_items(study, 2)
    assert next_assignment(study, annotators[0]) is None
    response = api_client(annotators[0]).post(f"/api/studies/{study.slug}/assignments/next/")
    assert response.status_code == 409 and response.json() == {
        "detail": f"This study is {status}: it hands out no items."}
    study.status = "open"
    study.save()
    assert next_assignment(study, annotators[0]).item.item_id == "item-0000"


def test_closing_keeps_answers_of_open_assignments(annotators):
    study = make_study(overlap=1)
    make_items(study, 2)
    a = next_assignment(study, annotators[0])
    Study.objects.filter(pk=study.pk).update(status="closed")
    submit(a.pk, annotators[0], {"choice": "m2"}, seconds=3)
    assert list(Judgment.objects.values_list("value", flat=True)) == ["m2"]
    study.refresh_from_db()
    assert study_report(study)[0]["n_judgments"] == 1


def test_header_keys_are_validated_and_stored():
    head = {"study": {"slug": "pp", "kind": "pairwise_alignment", "title": "T", "status": "paused",
                      "consent": "You **agree**.", "completion_code": "C0DE-1",
                      "completion_url": "https://app.prolific.com/submissions/complete",
                      "max_items_per_participant": 4, "quality": {"min_gold_accuracy": 0.8},
                      "pre_questions": [{"key": "age", "question": "Age?", "type": "number"}],
                      "post_questions": [{"key": "hard", "question": "Hard?", "type": "choice",
                                          "options": ["yes", "no"]}]}}
    item = {"item_id": "i1", "input": "q", "reference": "r",
            "candidates": [{"id": "m1", "text": "a"}, {"id": "m2", "text": "b"}]}
    practice = dict(item, item_id="p1", practice=True, gold="m1", feedback="Because **A**.")
    body = "\n".join(json.dumps(o) for o in (head, item, practice)).encode()
    assert import_batch_bytes(body).as_json() == {"study": "pp", "created": 2, "skipped": 0}
    study = Study.objects.get(slug="pp")
    assert (study.status, study.completion_code, study.max_items_per_participant, study.quality) == (
        "paused", "C0DE-1", 4, {"min_gold_accuracy": 0.8})
    assert study.practice_items == [{"item_id": "p1", "data": {k: item[k] for k in ("input", "reference",
                                                                                     "candidates")},
                                     "gold": {"choice": "m1"}, "feedback": "Because **A**."}]
    assert list(Item.objects.values_list("item_id", flat=True)) == ["i1"]  # practice never an Item
    # a later header opens the study (audited); the same file again skips everything
    head["study"]["status"] = "open"
    body = "\n".join(json.dumps(o) for o in (head, item, practice)).encode()
    assert import_batch_bytes(body).as_json() == {"study": "pp", "created": 0, "skipped": 2}
    study.refresh_from_db()
    assert study.status == "open"
    assert AuditLog.objects.filter(action="study.settings").get().after == {
        **{k: head["study"][k] for k in ("status", "consent", "completion_code", "completion_url",
                                         "max_items_per_participant", "pre_questions", "post_questions",
                                         "quality")}}


QUALITY_REFUSED = ("'quality' must be {\"min_gold_accuracy\": number in [0, 1], \"min_median_seconds\": number >= 0, "
                   "\"fast_seconds\": number >= 0, \"max_fast_submits\": number >= 0} (all optional; the last two "
                   "together)")


@pytest.mark.parametrize("key, value, reason", [
    ("status", "ready", "'status' must be one of draft, open, paused, closed"),
    ("completion_code", "a b", "'completion_code' must be 1-100 letters, digits, '-' or '_'"),
    ("completion_url", "javascript:alert(1)", "'completion_url' must be an http(s) URL of at most 500 characters"),
    ("max_items_per_participant", 0, "'max_items_per_participant' must be an integer from 1 to 2147483647"),
    ("quality", {"min_gold_accuracy": 2}, QUALITY_REFUSED),
    ("quality", {"fast_seconds": 2}, QUALITY_REFUSED),
    ("pre_questions", [{"key": "k", "question": "Q", "type": "choice"}],
     "'pre_questions' question 1: 'options' is required for choice questions and only for them"),
    ("post_questions", [{"key": "k", "question": "Q", "type": "date"}],
     "'post_questions' question 1: 'type' must be one of text, choice, number"),
])
def test_bad_header_keys(key, value, reason):
    header, errors = parse_header({"study": {"slug": "s", "kind": "pairwise_alignment", key: value}})
    assert header is None and errors == [f"line 1: {reason}"]


def test_practice_item_needs_gold():
    head = {"study": {"slug": "pq", "kind": "pairwise_alignment", "title": "T"}}
    item = {"item_id": "p1", "input": "q", "reference": "r", "practice": True,
            "candidates": [{"id": "m1", "text": "a"}, {"id": "m2", "text": "b"}]}
    with pytest.raises(Exception) as refused:
        import_batch_bytes("\n".join(json.dumps(o) for o in (head, item)).encode())
    assert refused.value.errors == ["line 2: a practice item needs 'gold' (the answer revealed after answering)"]


# --- 2. links and scoped sessions ---------------------------------------------------------------

def test_link_ids():
    assert link_ids({"PROLIFIC_PID": "abc", "STUDY_ID": "s", "SESSION_ID": "x"}, "prolific") == LinkIds(
        "prolific", "abc", "s", "x")
    assert link_ids({"workerId": "W1", "assignmentId": "A1", "hitId": "H1"}, "mturk") == LinkIds(
        "mturk", "W1", "H1", "A1")
    assert link_ids({"pid": "p-1"}, "link") == LinkIds("link", "p-1", "", "")
    for platform, bad in (("prolific", {"PROLIFIC_PID": ""}), ("prolific", {"PROLIFIC_PID": "a" * 65}),
                          ("link", {"pid": "a b"}), ("mturk", {"workerId": "<x>", "assignmentId": "A"}),
                          ("prolific", {"PROLIFIC_PID": "ok", "SESSION_ID": "no/pe"}), ("link", {"other": "1"}),
                          ("prolific", {"PROLIFIC_PID": "ok"}),  # no SESSION_ID: nothing to bind to
                          ("mturk", {"workerId": "W1"}), ("prolific", {"pid": "abc", "SESSION_ID": "s"}),
                          ("prolific", {"PROLIFIC_PID": "abc\n", "SESSION_ID": "s"}),  # ids match whole
                          ("prolific", {"PROLIFIC_PID": "abc", "SESSION_ID": "s "})):
        with pytest.raises(BadLink):
            link_ids(bad, platform)


def test_link_creates_then_resumes_the_participant():
    study = make_study(overlap=1)
    make_items(study, 2)
    client = participant_client(study.slug)
    p = Participant.objects.get()
    assert (p.user.username, p.platform, p.external_id, p.platform_study_id, p.platform_session_id) == (
        "prolific:5f2c0a1b", "prolific", "5f2c0a1b", "st01", "se01")
    assert not p.user.has_usable_password() and not p.user.groups.exists()
    assert client.session.get_expiry_age() == 12 * 3600
    assert client.session["participant_scope"] == {"study": study.slug, "user": p.user.pk}
    again = participant_client(study.slug)  # the same platform session, e.g. on another device: resumed
    assert Participant.objects.count() == 1 and again.session["_auth_user_id"] == str(p.user.pk)
    other = Client().get(participant_link(study, "?PROLIFIC_PID=5f2c0a1b&STUDY_ID=st01&SESSION_ID=other"))
    assert other.status_code == 403 and b"This link was already used" in other.content
    assert Participant.objects.get().platform_session_id == "se01"  # first ids kept


@pytest.mark.parametrize("query", ["", "?PROLIFIC_PID=", "?PROLIFIC_PID=a%20b&SESSION_ID=s",
                                   "?PROLIFIC_PID=" + "x" * 65 + "&SESSION_ID=s", "?PROLIFIC_PID=ok",
                                   "?PROLIFIC_PID=ok&SESSION_ID=%3Cscript%3E", "?PROLIFIC_PID=ok%0A&SESSION_ID=s",
                                   "?workerId=W1&assignmentId=A1"])
def test_bad_links_answer_400(query):
    study = make_study()
    response = Client().get(participant_link(study, query))
    assert response.status_code == 400 and b"This link is incomplete" in response.content
    assert b"&lt;script" not in response.content or b"<script>" not in response.content
    assert get_user_model().objects.count() == 0 and Participant.objects.count() == 0


def test_draft_study_does_not_exist_and_closed_takes_nobody_new():
    draft = make_study(slug="draft", status="draft")
    assert Client().get(participant_link(draft, PROLIFIC)).status_code == 404
    shut = make_study(slug="shut", status="closed")
    response = Client().get(participant_link(shut, PROLIFIC))
    assert response.status_code == 200 and b"This study is closed" in response.content
    assert Participant.objects.count() == 0


def test_scoped_session_reaches_only_its_study(annotators):
    study = make_study(slug="mine", overlap=1)
    make_items(study, 2)
    other = make_study(slug="other", overlap=1)
    make_items(other, 2)
    client = participant_client("mine")
    client.get("/p/mine/go/")
    for path in ("/", "/studies/mine/", "/studies/other/", "/annotate/other/", "/annotate/mine/quality/",
                 "/admin/", "/admin/annotate/study/", "/api/studies/", "/api/studies/mine/",
                 "/api/studies/mine/report/", "/api/studies/mine/participants.csv",
                 "/api/studies/other/assignments/next/", "/p/other/go/", f"/p/mine/{study.entry_key}/preview/",
                 "/annotate/mine/mine/", "/api/schema/"):
        assert client.get(path).status_code == 404, path
    assert client.post("/api/studies/other/assignments/next/").status_code == 404
    assert client.post("/api/token/rotate/").status_code == 404
    response = client.post("/api/studies/mine/assignments/next/")
    assert response.status_code == 200
    mine = response.json()["assignment"]
    theirs = next_assignment(other, annotators[0])
    assert client.post(f"/api/assignments/{theirs.pk}/judgments/", {"choice": "m1"},
                       content_type="application/json").status_code == 404
    assert client.post(f"/api/assignments/{mine}/judgments/", {"choice": tokens(mine, {"choice": "m1"})["choice"],
                                                               "seconds": 4},
                       content_type="application/json").status_code == 201
    page = client.get("/annotate/mine/")  # no pre questions or practice: the instructions are on the task page
    assert page.status_code == 200 and b"Read <strong>carefully</strong>." in page.content


def test_same_platform_id_in_two_studies_stays_scoped():
    make_items(make_study(slug="s1", overlap=1), 1)
    make_items(make_study(slug="s2", overlap=1), 1)
    first = participant_client("s1", "?PROLIFIC_PID=abc&SESSION_ID=x1")
    second = participant_client("s2", "?PROLIFIC_PID=abc&SESSION_ID=x2")
    assert Participant.objects.count() == 2 and get_user_model().objects.count() == 1
    assert first.get("/annotate/s2/").status_code == 404
    assert second.get("/annotate/s1/").status_code == 404
    assert first.post("/api/studies/s2/assignments/next/").status_code == 404


def test_judgments_export_ends_with_platform_ids_and_old_files_still_import(annotators):
    study = make_study(overlap=2)
    make_items(study, 1)
    client = participant_client(study.slug)
    client.post(f"/p/{study.slug}/go/", {"step": "instructions"})
    assert answer_all(client, study.slug, seconds=4) == 1
    a = next_assignment(study, annotators[0])
    submit(a.pk, annotators[0], {"choice": "m2"}, seconds=2)
    rows = [(r["annotator"], r.get("platform", ""), r.get("study_id", ""), r.get("session_id", ""))
            for r in export_judgment_rows(study)]
    assert rows == [("ann1", "", "", ""), ("prolific:5f2c0a1b", "prolific", "st01", "se01")]
    response = api_client(make_user("ada", role="admins")).get(f"/api/studies/{study.slug}/judgments/")
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert lines[0] == ("study,item_id,annotator,question,value,shown_order,seconds,submitted_at,"
                        "comment,platform,study_id,session_id")
    assert lines[2].startswith("pairwise-alignment,item-0000,prolific:5f2c0a1b,choice,m1,")
    assert lines[2].endswith(",prolific,st01,se01")
    # the export imports again (idempotent), and so does an older file without the columns
    assert import_judgments(io.BytesIO("\n".join(lines).encode()))["skipped"] == 2
    old = ("study,item_id,annotator,question,value,shown_order,seconds,submitted_at\n"
           "pairwise-alignment,item-0000,prolific:5f2c0a1b,choice,m1,,,\n")
    assert import_judgments(io.BytesIO(old.encode()))["skipped"] == 1


# --- 3, 4. the flow: consent, instructions, pre, practice, items, post, completion ---------------

def flow_study(**fields):
    fields.setdefault("consent", "You agree that **your answers** are kept.\n\n<script>alert(1)</script>")
    fields.setdefault("completion_url", "https://app.prolific.com/submissions/complete")
    study = make_study(overlap=3, completion_code="CODE42",
                       pre_questions=[{"key": "age", "question": "Your age?", "type": "number"}],
                       post_questions=[{"key": "hard", "question": "Was it hard?", "type": "choice",
                                        "options": ["yes", "no"]},
                                       {"key": "note", "question": "Anything else?", "type": "text"}],
                       practice_items=[{"item_id": "p1", "data": {"input": "Practice request.", "reference": "Ref.",
                                                                  "candidates": [{"id": "m1", "text": "Good one."},
                                                                                 {"id": "m2", "text": "Bad one."}]},
                                        "gold": {"choice": "m1"}, "feedback": "The first one follows the **tone**."}],
                       **fields)
    make_items(study, 3)
    return study


def test_whole_flow_ends_at_the_completion_url():
    study = flow_study()
    client = participant_client(study.slug)
    page = client.get("/p/pairwise-alignment/go/")
    assert b"<strong>your answers</strong>" in page.content and b"<script>" not in page.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in page.content
    assert client.get("/annotate/pairwise-alignment/")["Location"] == "/p/pairwise-alignment/go/"  # consent first
    client.post("/p/pairwise-alignment/go/", {"step": "consent", "consent": "yes"})
    assert b"Read <strong>carefully</strong>." in client.get("/p/pairwise-alignment/go/").content
    client.post("/p/pairwise-alignment/go/", {"step": "instructions"})
    bad = client.post("/p/pairwise-alignment/go/", {"step": "pre", "age": "old"})
    assert b"Please enter a number." in bad.content
    client.post("/p/pairwise-alignment/go/", {"step": "pre", "age": "34"})
    practice = client.get("/p/pairwise-alignment/go/")
    assert b"Practice item 1 of 1" in practice.content and b"Practice request." in practice.content
    reveal = client.post("/p/pairwise-alignment/go/",
                         {"step": "practice", "index": "1", "q:choice": practice_token("m2")})
    assert b"(different)" in reveal.content and b"<strong>tone</strong>" in reveal.content
    assert Judgment.objects.count() == 0 and Assignment.objects.count() == 0  # practice never counted
    client.post("/p/pairwise-alignment/go/", {"step": "practice", "index": "1", "continue": "1"})
    client.post("/p/pairwise-alignment/go/", {"step": "practice", "index": "1", "continue": "1"})  # a repeat
    assert Participant.objects.get().practice_done == 1
    assert client.get("/p/pairwise-alignment/go/")["Location"] == "/annotate/pairwise-alignment/"
    assert answer_all(client, study.slug) == 3
    assert client.get("/p/pairwise-alignment/go/").context["step"] == "post"
    client.post("/p/pairwise-alignment/go/", {"step": "post", "hard": "no", "note": "fine"})
    done = client.get("/p/pairwise-alignment/go/")  # an HTTP redirect, once; no meta refresh
    assert done.status_code == 302 and done["Location"] == "https://app.prolific.com/submissions/complete?cc=CODE42"
    assert "form-action 'self' https://app.prolific.com;" in done["Content-Security-Policy"]
    again = client.get("/p/pairwise-alignment/go/")
    assert again.status_code == 200 and b"CODE42" in again.content
    assert b"submissions/complete?cc=CODE42" in again.content and b'http-equiv="refresh"' not in again.content
    p = Participant.objects.get()
    assert (p.pre_answers, p.post_answers, p.practice_done, p.status) == (
        {"age": 34.0}, {"hard": "no", "note": "fine"}, 1, "completed")
    assert Judgment.objects.filter(annotator=p.user).count() == 3


def test_nothing_is_served_before_consent_instructions_pre_and_practice():
    """Issue 31, item 7: the flow's order holds on the server. Before each of consent,
    instructions, pre questions and practice is passed, the API hands out nothing (204)
    and the task page sends the participant back to the flow; then both serve the item."""
    study = flow_study()
    client = participant_client(study.slug)
    api = "/api/studies/pairwise-alignment/assignments/next/"
    steps = [{"step": "consent", "consent": "yes"}, {"step": "instructions"}, {"step": "pre", "age": "34"},
             {"step": "practice", "index": "1", "continue": "1"}]
    for passed, form in enumerate(steps):
        assert client.post(api).status_code == 204, passed
        assert client.post("/annotate/pairwise-alignment/next/", HTTP_HX_REQUEST="true")["HX-Redirect"] \
            == "/p/pairwise-alignment/go/", passed
        page = client.get("/annotate/pairwise-alignment/")
        assert (page.status_code, page["Location"]) == (302, "/p/pairwise-alignment/go/"), passed
        assert Assignment.objects.count() == 0, passed
        assert client.get("/p/pairwise-alignment/go/").context["step"] == form["step"], passed
        client.post("/p/pairwise-alignment/go/", form)
    assert Assignment.objects.count() == 1  # the last step's POST reserved the first item
    assert client.post(api).status_code == 200
    assert client.get("/annotate/pairwise-alignment/").status_code == 200


def test_completion_redirect_keeps_a_query_the_url_has():
    study = Study(completion_url="https://example.org/done?src=x&y=1", completion_code="A-1")
    assert completion_redirect(study) == "https://example.org/done?src=x&y=1&cc=A-1"
    assert completion_redirect(Study(completion_url="")) is None


def test_declining_consent_records_nothing_else():
    study = flow_study()
    client = participant_client(study.slug)
    response = client.post("/p/pairwise-alignment/go/", {"step": "consent", "consent": "no"})
    assert b"Thank you for your time" in response.content
    assert client.get("/annotate/pairwise-alignment/").status_code == 404  # no longer an annotator
    assert client.post("/api/studies/pairwise-alignment/assignments/next/").status_code == 404
    p = Participant.objects.get()
    assert p.status == "returned" and p.consented_at is None and p.pre_answers is None
    assert Assignment.objects.count() == 0 and Judgment.objects.count() == 0


def test_quota_ends_the_session_like_the_last_item():
    study = flow_study(consent="", max_items_per_participant=2, completion_url="")
    study.pre_questions = study.post_questions = study.practice_items = []
    study.instructions = ""
    study.save()
    client = participant_client(study.slug)
    assert answer_all(client, study.slug) == 2
    user = Participant.objects.get().user
    assert annotator_progress(study, user) == {"done": 2, "assigned": 2, "total": 2, "remaining": 0}
    assert next_assignment(study, user) is None
    done = client.get("/p/pairwise-alignment/go/")
    assert done.status_code == 200 and b"Your completion code is" in done.content and b"CODE42" in done.content
    assert Participant.objects.get().status == "completed"


def test_paused_study_keeps_the_participant_waiting():
    study = flow_study(consent="")
    study.pre_questions = study.post_questions = study.practice_items = []
    study.instructions = ""
    study.save()
    client = participant_client(study.slug)
    Study.objects.filter(pk=study.pk).update(status="paused")
    page = client.get("/p/pairwise-alignment/go/")
    assert b"This study is paused" in page.content
    assert Participant.objects.get().finished_at is None


# --- 7. order ----------------------------------------------------------------------------------

def test_each_participant_has_their_own_seeded_order():
    study = make_study(overlap=10)
    make_items(study, 12)
    orders = {}
    for pid, seed in (("a", 1), ("b", 2), ("c", 1)):
        p, _ = join(study, LinkIds("link", pid))
        Participant.objects.filter(pk=p.pk).update(seed=seed)
        orders[pid] = []
        while (a := next_assignment(study, p.user)) is not None:
            orders[pid].append(a.item.item_id)
            submit(a.pk, p.user, {"choice": "m1"}, seconds=1)
    assert sorted(orders["a"]) == [f"item-{i:04d}" for i in range(12)]
    assert orders["a"] != orders["b"] and orders["a"] != sorted(orders["a"])
    # c has a's seed but every item now has 2 judgments: equal fullness, so the same order
    assert orders["c"] == orders["a"]


def test_closest_to_completion_still_comes_first():
    study = make_study(overlap=3)
    items = make_items(study, 5)
    Item.objects.filter(pk=items[3].pk).update(n_assigned=2)
    Item.objects.filter(pk=items[1].pk).update(n_assigned=1)
    p, _ = join(study, LinkIds("link", "x"))
    first = next_assignment(study, p.user)
    submit(first.pk, p.user, {"choice": "m1"}, seconds=1)
    second = next_assignment(study, p.user)
    assert (first.item.item_id, second.item.item_id) == ("item-0003", "item-0001")


# --- 8. quality --------------------------------------------------------------------------------

def later(assignment, minutes=5):
    """A submit time some minutes after the item was handed out (a participant's seconds
    are capped by that time)."""
    return assignment.created_at + timedelta(minutes=minutes)


def gold_study():
    study = make_study(overlap=2, gold_rate=0.0, quality={"min_gold_accuracy": 0.75, "min_median_seconds": 2})
    make_items(study, 2)
    make_items(study, 2, gold={"choice": "m1"})
    return study


def test_failing_gold_is_flagged_and_left_out_of_the_report(admin_user_):
    study = gold_study()
    users = {}
    for pid, gold_answer, seconds in (("good", "m1", 6), ("bad", "m2", 6), ("fast", "m1", 1)):
        user = join(study, LinkIds("prolific", pid, "st", f"se-{pid}"))[0].user
        users[pid] = user
        for item in Item.objects.filter(study=study).order_by("position", "id"):
            a = Assignment.objects.create(study=study, item=item, annotator=user, shown_order={"choice": ["m1", "m2"]})
            submit(a.pk, user, {"choice": gold_answer if item.is_gold else "m1"}, seconds=seconds, now=later(a))
    report = study_report(study)[0]
    assert report["excluded_annotators"] == {"prolific:bad": "gold accuracy 0.00 < 0.75",
                                             "prolific:fast": "median seconds 1.0 < 2"}
    assert report["n_annotators"] == 1 and report["n_judgments"] == 4
    assert ("<td>prolific:bad (gold accuracy 0.00 &lt; 0.75); prolific:fast (median seconds 1.0 &lt; 2)</td>"
            in study_report(study, "html")[1])
    assert sorted(report["annotators"]) == ["prolific:good"]
    out = io.StringIO()
    call_command("report", study.slug, "--include-flagged", stdout=out)
    full = json.loads(out.getvalue())
    assert full["excluded_annotators"] == {} and full["n_annotators"] == 3 and full["n_judgments"] == 12
    api = api_client(admin_user_)
    assert api.get(f"/api/studies/{study.slug}/report/").json()["n_annotators"] == 1
    assert api.get(f"/api/studies/{study.slug}/report/?include_flagged=1").json()["n_annotators"] == 3
    text = api.get(f"/api/studies/{study.slug}/participants.csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert text.splitlines()[0] == ("platform,participant,study_id,session_id,status,items,gold_accuracy,"
                                    "median_seconds,flagged,reason,started_at,finished_at,pastes,focus_losses")
    assert [(r["participant"], r["session_id"], r["status"], r["items"], r["gold_accuracy"], r["median_seconds"],
             r["flagged"], r["reason"]) for r in rows] == [
        ("good", "se-good", "in_progress", "4", "1", "6", "false", ""),
        ("bad", "se-bad", "in_progress", "4", "0", "6", "true", "gold accuracy 0.00 < 0.75"),
        ("fast", "se-fast", "in_progress", "4", "1", "1", "true", "median seconds 1.0 < 2")]
    dashboard = Client()
    dashboard.force_login(admin_user_)
    page = dashboard.get(f"/studies/{study.slug}/progress/").content.decode()
    assert "flagged: gold accuracy 0.00 &lt; 0.75" in page and "flagged: median seconds 1.0 &lt; 2" in page


def test_n_fast_submits_flag():
    study = make_study(overlap=1, quality={"fast_seconds": 3, "max_fast_submits": 1})
    make_items(study, 4)
    for pid, times in (("steady", (5, 1, 6, 7)), ("rushed", (1, 2, 9, 8))):
        user = join(study, LinkIds("link", pid))[0].user
        for item, seconds in zip(Item.objects.filter(study=study).order_by("position"), times):
            a = Assignment.objects.create(study=study, item=item, annotator=user, shown_order={})
            submit(a.pk, user, {"choice": "m1"}, seconds=seconds, now=later(a))
        Item.objects.update(n_assigned=0, n_completed=0)
    assert study_report(study)[0]["excluded_annotators"] == {"link:rushed": "2 items under 3 s > 1"}


def test_participants_csv_is_for_researchers_only(annotators, researcher):
    study = gold_study()
    assert api_client(annotators[0]).get(f"/api/studies/{study.slug}/participants.csv").status_code == 403
    assert api_client(researcher).get(f"/api/studies/{study.slug}/participants.csv").status_code == 200
    assert Client().get(f"/api/studies/{study.slug}/participants.csv").status_code in (401, 403)


def test_no_quality_header_flags_nobody(annotators):
    study = make_study(overlap=1)
    make_items(study, 1, gold={"choice": "m1"})
    a = Assignment.objects.create(study=study, item=study.items.get(), annotator=annotators[0], shown_order={})
    submit(a.pk, annotators[0], {"choice": "m2"}, seconds=0.1)
    assert study_report(study)[0]["excluded_annotators"] == {}


def test_gold_items_stay_invisible_in_counts(annotators):
    """A gold item counts as an item done for the annotator; done never exceeds total and
    every submit moves one from remaining to done."""
    study = make_study(overlap=1, gold_rate=1.0)  # every draw is gold while gold is left: deterministic
    make_items(study, 3)
    make_items(study, 3, gold={"choice": "m1"})
    user = annotators[0]
    seen = []
    while (a := next_assignment(study, user)) is not None:
        before = annotator_progress(study, user)
        submit(a.pk, user, {"choice": "m1"}, seconds=1)
        after = annotator_progress(study, user)
        seen.append(a.item.is_gold)
        assert after["done"] == before["done"] + 1 and after["remaining"] == before["remaining"] - 1
        assert after["done"] <= after["total"]
    assert seen == [True, True, True, False, False, False]
    assert annotator_progress(study, user) == {"done": 6, "assigned": 6, "total": 6, "remaining": 0}


# --- 9. preview --------------------------------------------------------------------------------

def counts():
    return (Participant.objects.count(), Assignment.objects.count(), Judgment.objects.count(),
            get_user_model().objects.count(), AuditLog.objects.count())


def test_preview_walks_every_page_and_writes_nothing(researcher):
    study = flow_study(max_items_per_participant=2)
    before = counts()
    client = Client()
    client.force_login(researcher)
    url = f"/p/{study.slug}/{study.entry_key}/preview/"
    first = client.get(url)
    assert b"Preview: this is what a participant sees" in first.content and first.context["step"] == "consent"
    client.post(url, {"step": "consent", "consent": "yes"})
    client.post(url, {"step": "instructions"})
    client.post(url, {"step": "pre", "age": "40"})
    checked = client.post(url, {"step": "practice", "index": "1", "q:choice": practice_token("m1")})
    assert b"(correct)" in checked.content
    client.post(url, {"step": "practice", "index": "1", "continue": "1"})
    page = client.get(url)  # the participant's own task page, same templates
    assert "annotate/task.html" in [t.name for t in page.templates]
    assert b"Preview: this is what a participant sees" in page.content and b"My judgments" not in page.content
    assert b"<strong>0</strong> done" in page.content and b"<strong>2</strong> remaining" in page.content
    bad = client.post(url, {"step": "items"}, HTTP_HX_REQUEST="true")
    assert b"Please answer every question" in bad.content
    saved = client.post(url, {"step": "items", "q:choice": practice_token("m2")}, HTTP_HX_REQUEST="true")
    assert b"Saved (preview: nothing stored)." in saved.content and b"<strong>1</strong> done" in saved.content
    skipped = client.post(url, {"step": "items", "reason": "technical"}, HTTP_HX_REQUEST="true")
    assert b"Skipped" in skipped.content and b"<strong>1</strong> done" in skipped.content  # a skip is no answer
    last = client.post(url, {"step": "items", "q:choice": practice_token("m1")}, HTTP_HX_REQUEST="true")
    assert last["HX-Redirect"] == url  # the quota of answered items: on to the post questions
    assert client.get(url).context["step"] == "post"
    client.post(url, {"step": "post", "hard": "yes", "note": "ok"})
    done = client.get(url)
    assert done.status_code == 200 and b"CODE42" in done.content  # no redirect away from a preview
    assert counts() == before
    assert client.get(url + "?restart=1")["Location"] == url
    assert client.get(url).context["step"] == "consent"


def test_preview_is_for_researchers_and_admins(annotators, admin_user_):
    study = flow_study()
    url = f"/p/{study.slug}/{study.entry_key}/preview/"
    plain = Client()
    plain.force_login(annotators[0])
    assert plain.get(url).status_code == 404
    assert Client().get(url).status_code == 404
    admin = Client()
    admin.force_login(admin_user_)
    assert admin.get(url).status_code == 200
    assert admin.get(f"/p/{study.slug}/wrong-key/preview/").status_code == 404
