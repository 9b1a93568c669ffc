"""Issue #15 items 5 and 6: "I can't judge this" (skip), comments, the reservation's
"extend", and editing one's own judgments with an audit trail."""
import io
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.test import Client

from annotate.desk.submission import MAX_EXTENSIONS, AssignmentGone, extend
from annotate.kinds import get_kind
from annotate.models import Assignment, AuditLog, Item, Judgment
from annotate.reports.data import study_report
from annotate.studies.judgments_io import import_judgments
from tests.factories import add_judgments, api_client, blinding, make_items, make_judged_study, make_study, tokens

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
FILE_HEAD = "study,item_id,annotator,question,value,shown_order,seconds,submitted_at,comment\n"
EXPORT_HEAD = FILE_HEAD.rstrip("\n") + ",platform,study_id,session_id\n"  # + a participant's platform ids


def exported(*rows):
    """Rows as the export writes them: the platform columns empty (staff-made annotators)."""
    return "".join(row + ",,,\n" for row in rows)


def take(client, slug):
    response = client.post(f"/api/studies/{slug}/assignments/next/")
    assert response.status_code == 200, response.content
    return response.json()["assignment"]


def skip(client, assignment_id, body):
    return client.post(f"/api/assignments/{assignment_id}/skip/", body, format="json")


def answer(client, assignment_id, real_answers, **extra):
    """POST the answers (given in real ids) in the assignment's tokens, as the annotator does."""
    return client.post(f"/api/assignments/{assignment_id}/judgments/", {**tokens(assignment_id, real_answers), **extra},
                       format="json")


def reserve(page, slug):
    """The Start button (htmx POST): a GET of the task page reserves nothing."""
    assert page.post(f"/annotate/{slug}/next/", HTTP_HX_REQUEST="true").status_code == 200


def export(slug):
    out = io.StringIO()
    call_command("export_judgments", slug, stdout=out)
    return out.getvalue()


# --- skip --------------------------------------------------------------------------------------

def test_skip_stores_one_row_and_a_repeat_changes_nothing(annotators):
    study = make_study(overlap=1)
    make_items(study, 1)
    client = api_client(annotators[0])
    assignment_id = take(client, study.slug)
    response = skip(client, assignment_id, {"reason": "not_understood", "comment": " Too technical. ", "seconds": 7})
    assert response.status_code == 201, response.content
    body = response.json()
    submitted_at = body["judgment"].pop("submitted_at")
    assert body == {"assignment": assignment_id, "created": True,
                    "judgment": {"question": "_skip", "value": "not_understood", "shown_order": "",
                                 "seconds": 7.0, "comment": "Too technical."}}
    repeat = skip(client, assignment_id, {"reason": "other"})  # double POST: the first skip stands
    assert repeat.status_code == 200 and repeat.json()["created"] is False
    assert repeat.json()["judgment"]["value"] == "not_understood"
    rows = list(Judgment.objects.values_list("item__item_id", "annotator__username", "question", "value",
                                             "shown_order", "seconds", "comment"))
    assert rows == [("item-0000", "ann1", "_skip", "not_understood", "", 7.0, "Too technical.")]
    a = Assignment.objects.get(pk=assignment_id)
    assert (a.skipped, a.completed_at.isoformat(), a.seconds) == (True, submitted_at, 7.0)
    item = Item.objects.get()
    assert (item.n_assigned, item.n_completed) == (0, 0)  # the slot went back to the pool
    assert export(study.slug) == EXPORT_HEAD + exported(
        f"pairwise-alignment,item-0000,ann1,_skip,not_understood,,7,{submitted_at},Too technical.")


def test_skipped_item_goes_to_someone_else_not_back_to_the_skipper(annotators):
    study = make_study(overlap=1)
    make_items(study, 1)
    skipper, other = api_client(annotators[0]), api_client(annotators[1])
    assert skip(skipper, take(skipper, study.slug), {"reason": "unsafe"}).status_code == 201
    assert skipper.post(f"/api/studies/{study.slug}/assignments/next/").status_code == 204
    second = other.post(f"/api/studies/{study.slug}/assignments/next/")
    assert second.status_code == 200 and second.json()["item_id"] == blinding(second.json()["assignment"]).item
    assert Assignment.objects.get(pk=second.json()["assignment"]).item.item_id == "item-0000"
    assert answer(other, second.json()["assignment"], {"choice": "m1"}).status_code == 201
    item = Item.objects.get()
    assert (item.n_assigned, item.n_completed) == (1, 1)  # complete with one answer; the skip held no slot


def test_skip_refusals(annotators):
    study = make_study(overlap=2)
    make_items(study, 2)
    owner, stranger = api_client(annotators[0]), api_client(annotators[1])
    assignment_id = take(owner, study.slug)
    assert skip(stranger, assignment_id, {"reason": "other"}).status_code == 404  # not theirs
    assert skip(owner, assignment_id, {"reason": "bored"}).json() == {
        "errors": {"reason": "must be one of not_understood, unsafe, technical, other"}}
    assert skip(owner, assignment_id, {}).status_code == 400
    assert skip(owner, assignment_id, {"reason": "other", "comment": "x" * 2001}).json() == {
        "errors": {"comment": "must be at most 2000 characters"}}
    assert owner.post(f"/api/assignments/{assignment_id}/skip/", "[1]", content_type="application/json"
                      ).status_code == 400
    assert not Judgment.objects.exists()
    assert answer(owner, assignment_id, {"choice": "m1"}).status_code == 201
    assert skip(owner, assignment_id, {"reason": "other"}).status_code == 409  # already answered
    second = take(owner, study.slug)
    assert skip(owner, second, {"reason": "technical"}).status_code == 201
    # A skipped assignment takes no answers and no edits.
    assert answer(owner, second, {"choice": "m1"}).status_code == 404
    assert owner.patch(f"/api/assignments/{second}/judgments/", tokens(second, {"choice": "m1"}),
                       format="json").status_code == 409
    assert list(Judgment.objects.order_by("id").values_list("question", "value")) == [("choice", "m1"),
                                                                                       ("_skip", "technical")]


def test_skips_are_counted_in_reports_and_change_no_statistic():
    """Agreement, annotators and counts with and without a skip row are the same; the
    skip shows up only under `skipped`."""
    items = [(f"i{n}", {"input": "q", "reference": "r", "candidates": [{"id": "m1", "text": "a"},
                                                                        {"id": "m2", "text": "b"}]}, None)
             for n in range(3)]
    votes = [("i0", "a1", "choice", "m1", "m1|m2", 5.0), ("i0", "a2", "choice", "m1", "m2|m1", 6.0),
             ("i1", "a1", "choice", "m2", "m1|m2", 5.0), ("i1", "a2", "choice", "m1", "m2|m1", 7.0),
             ("i2", "a1", "choice", "m2", "m2|m1", 4.0), ("i2", "a2", "choice", "m2", "m1|m2", 3.0)]
    study = make_judged_study("skips", "pairwise_alignment", items, votes, overlap=2)
    before, _ = study_report(study)
    assert before["skipped"] == {"n": 0, "by_reason": {}}
    add_judgments(study, [("i1", "a3", "_skip", "unsafe", "", 2.0), ("i2", "a1x", "_skip", "unsafe", "", 1.0),
                          ("i0", "a3x", "_skip", "other", "", 1.0)])
    after, _ = study_report(study)
    assert after.pop("skipped") == {"n": 3, "by_reason": {"other": 1, "unsafe": 2}}
    before.pop("skipped")
    assert after == before
    assert after["n_judgments"] == 6 and sorted(after["annotators"]) == ["a1", "a2"]
    html = study_report(study, "html")[1]
    assert "3 (other: 1, unsafe: 2)" in html


# --- comments ----------------------------------------------------------------------------------

def test_comment_is_stored_with_every_judgment_and_exported(annotators):
    study = make_study("explanation_choice", overlap=2)
    make_items(study, 1)
    client = api_client(annotators[0])
    assignment_id = take(client, study.slug)
    order = client.post(f"/api/studies/{study.slug}/assignments/next/").json()["questions"][0]["options"]
    response = client.post(f"/api/assignments/{assignment_id}/judgments/",
                           {"choice": order[0], "usefulness": 4, "comment": "Both, really.", "seconds": 3},
                           format="json")
    assert response.status_code == 201
    assert [j["comment"] for j in response.json()["judgments"]] == ["Both, really.", "Both, really."]
    import csv
    rows = list(csv.reader(io.StringIO(export(study.slug))))
    assert rows[0] == EXPORT_HEAD.strip().split(",")
    assert [(r[3], r[8]) for r in rows[1:]] == [("choice", "Both, really."), ("usefulness", "Both, really.")]


def test_old_files_without_comment_import_and_skip_rows_import():
    study = make_study(overlap=2)
    make_items(study, 2)
    old = ("study,item_id,annotator,question,value,shown_order,seconds,submitted_at\n"
           "pairwise-alignment,item-0000,x1,choice,m1,,,\n")
    assert import_judgments(io.BytesIO(old.encode()))["created"] == 1
    new = (FILE_HEAD + "pairwise-alignment,item-0000,x2,_skip,unsafe,,2,2026-03-01T10:00:00+00:00,Rude.\n"
           "pairwise-alignment,item-0001,x1,choice,m2,,,,fine\n")
    assert import_judgments(io.BytesIO(new.encode()))["created"] == 2
    skipped = Assignment.objects.get(annotator__username="x2")
    assert (skipped.skipped, skipped.completed_at) == (True, datetime(2026, 3, 1, 10, tzinfo=UTC))
    counters = dict(Item.objects.values_list("item_id", "n_completed"))
    assert counters == {"item-0000": 1, "item-0001": 1}
    assert Judgment.objects.get(annotator__username="x2").comment == "Rude."
    assert export(study.slug) == EXPORT_HEAD + exported(
        "pairwise-alignment,item-0000,x1,choice,m1,,,,",
        "pairwise-alignment,item-0000,x2,_skip,unsafe,,2,2026-03-01T10:00:00+00:00,Rude.",
        "pairwise-alignment,item-0001,x1,choice,m2,,,,fine")
    from annotate.studies.batch_format import BatchInvalid
    mixed = FILE_HEAD + "pairwise-alignment,item-0000,x1,_skip,other,,,,\n"
    with pytest.raises(BatchInvalid) as caught:
        import_judgments(io.BytesIO(mixed.encode()))
    assert caught.value.errors == ["line 2: x1 both skipped and answered 'item-0000'"]
    bad = FILE_HEAD + "pairwise-alignment,item-0001,x3,_skip,bored,,,,\n"
    with pytest.raises(BatchInvalid) as caught:
        import_judgments(io.BytesIO(bad.encode()))
    assert caught.value.errors == [
        "line 2: value for '_skip' must be one of ['not_understood', 'unsafe', 'technical', 'other'], got 'bored'"]


# --- extend ------------------------------------------------------------------------------------

def test_extend_moves_the_expiry_once_and_only_for_the_owner(annotators):
    study = make_study(overlap=2, assignment_timeout_minutes=20)
    make_items(study, 1)
    owner = api_client(annotators[0])
    assignment_id = take(owner, study.slug)
    first_expiry = Assignment.objects.get(pk=assignment_id).expires_at
    assert api_client(annotators[1]).post(f"/api/assignments/{assignment_id}/extend/").status_code == 404
    now = first_expiry - timedelta(minutes=1)
    assignment, extended = extend(assignment_id, annotators[0], now=now)
    assert extended is True and assignment.expires_at == now + timedelta(minutes=20)
    assert Assignment.objects.get(pk=assignment_id).expires_at == now + timedelta(minutes=20)
    assert MAX_EXTENSIONS == 1
    response = owner.post(f"/api/assignments/{assignment_id}/extend/")  # the one extension is used
    assert response.json() == {"assignment": assignment_id, "expires_at": (now + timedelta(minutes=20)).isoformat(),
                               "extended": False}
    with pytest.raises(AssignmentGone):  # past its expiry: cannot be revived
        extend(assignment_id, annotators[0], now=now + timedelta(minutes=21))


def test_extend_through_the_api_and_refused_once_closed(annotators):
    study = make_study(overlap=2, assignment_timeout_minutes=30)
    make_items(study, 1)
    owner = api_client(annotators[0])
    assignment_id = take(owner, study.slug)
    before = datetime.now(UTC)
    response = owner.post(f"/api/assignments/{assignment_id}/extend/")
    after = datetime.now(UTC)
    assert response.status_code == 200 and response.json()["extended"] is True
    expires = datetime.fromisoformat(response.json()["expires_at"])
    assert before + timedelta(minutes=30) <= expires <= after + timedelta(minutes=30)
    assert Assignment.objects.get(pk=assignment_id).extensions == 1
    assert answer(owner, assignment_id, {"choice": "m1"}).status_code == 201
    assert owner.post(f"/api/assignments/{assignment_id}/extend/").status_code == 404  # answered


# --- edits and My judgments --------------------------------------------------------------------

def test_edit_of_value_and_comment_is_audited_and_refused_once_complete(annotators):
    study = make_study(overlap=2)
    make_items(study, 1)
    first = api_client(annotators[0])
    a1 = take(first, study.slug)
    assert answer(first, a1, {"choice": "m1"}, comment="easy").status_code == 201
    response = first.patch(f"/api/assignments/{a1}/judgments/",
                           {**tokens(a1, {"choice": "m2"}), "comment": "on second thought"}, format="json")
    assert response.status_code == 200
    log = AuditLog.objects.get(action="judgment.edit")
    assert (log.user, log.object_id) == (annotators[0], str(a1))
    assert log.before == {"item_id": "item-0000", "values": {"choice": "m1"}, "comment": "easy"}
    assert log.after == {"item_id": "item-0000", "values": {"choice": "m2"}, "comment": "on second thought"}
    assert list(Judgment.objects.values_list("value", "comment")) == [("m2", "on second thought")]
    second = api_client(annotators[1])
    a2 = take(second, study.slug)
    assert answer(second, a2, {"choice": "m1"}).status_code == 201  # the item is complete
    assert first.patch(f"/api/assignments/{a1}/judgments/", tokens(a1, {"choice": "m1"}),
                       format="json").status_code == 409
    assert Judgment.objects.get(annotator=annotators[0]).value == "m2"
    assert AuditLog.objects.filter(action="judgment.edit").count() == 1


def web(user):
    client = Client()
    client.force_login(user)
    return client


def test_my_judgments_page_shows_labels_and_edits_through_the_validator(annotators):
    study = make_study(overlap=2, randomize_order=False)
    make_items(study, 2)
    client = api_client(annotators[0])
    a1 = take(client, study.slug)
    assert answer(client, a1, {"choice": "m2"}, comment="B reads better").status_code == 201
    a2 = take(client, study.slug)
    skip(client, a2, {"reason": "technical"})
    page = web(annotators[0])
    html = page.get(f"/annotate/{study.slug}/mine/").content.decode()
    assert "Response B" in html and "B reads better" in html
    assert "Technical problem" in html
    # No candidate or item ids (as a whole word: the page's random CSRF token may hold "m2").
    assert not re.search(r"\bm2\b", html) and "item-0000" not in html
    assert f"/annotate/{study.slug}/mine/{a1}/edit/" in html
    assert f"/annotate/{study.slug}/mine/{a2}/edit/" not in html  # skips are not edited
    form = page.get(f"/annotate/{study.slug}/mine/{a1}/edit/")
    m1, m2 = (blinding(a1).option(real) for real in ("m1", "m2"))  # the form speaks the assignment's tokens
    assert form.status_code == 200 and re.search(f'value="{m2}"[^>]* checked', form.content.decode())
    refused = page.post(f"/annotate/{study.slug}/mine/{a1}/edit/", {"q:choice": "m3", "comment": "x"})
    assert refused.status_code == 200 and "must be one of" in refused.content.decode()
    assert Judgment.objects.get(pk=Judgment.objects.get(assignment_id=a1).pk).value == "m2"
    saved = page.post(f"/annotate/{study.slug}/mine/{a1}/edit/", {"q:choice": m1, "comment": "B reads better"})
    assert saved.status_code == 302 and saved["Location"] == f"/annotate/{study.slug}/mine/"
    log = AuditLog.objects.get(action="judgment.edit")
    assert (log.before["values"], log.after["values"], log.user) == ({"choice": "m2"}, {"choice": "m1"}, annotators[0])
    assert "comment" not in log.after  # unchanged comment: not logged
    # Another annotator completes the item: the row is locked and the edit page refuses.
    other = api_client(annotators[1])
    assert answer(other, take(other, study.slug), {"choice": "m1"}).status_code == 201
    assert Item.objects.get(item_id="item-0000").n_completed == 2
    assert "Locked (item complete)" in page.get(f"/annotate/{study.slug}/mine/").content.decode()
    locked = page.post(f"/annotate/{study.slug}/mine/{a1}/edit/", {"q:choice": m2})
    assert locked.status_code == 302 and Judgment.objects.get(assignment_id=a1).value == "m1"
    assert web(annotators[1]).get(f"/annotate/{study.slug}/mine/{a1}/edit/").status_code == 404


def test_task_page_skip_and_extend_controls(annotators):
    study = make_study(overlap=1, assignment_timeout_minutes=15)
    make_items(study, 2)
    page = web(annotators[0])
    reserve(page, study.slug)
    html = page.get(f"/annotate/{study.slug}/").content.decode()
    assignment = Assignment.objects.get(annotator=annotators[0])
    assert 'id="countdown"' in html and f'data-expires="{assignment.expires_at.isoformat()}"' in html
    assert "Can't judge this item?" in html and 'name="comment"' in html
    extended = page.post(f"/annotate/{study.slug}/items/{assignment.pk}/extend/")
    assignment.refresh_from_db()
    assert assignment.extensions == 1
    assert f'data-expires="{assignment.expires_at.isoformat()}"' in extended.content.decode()
    assert 'id="extend-button"' not in extended.content.decode()
    response = page.post(f"/annotate/{study.slug}/items/{assignment.pk}/skip/",
                         {"reason": "unsafe", "comment": "no"}, HTTP_HX_REQUEST="true")
    assert "Skipped: the item goes to someone else." in response.content.decode()
    assert list(Judgment.objects.values_list("question", "value", "comment")) == [("_skip", "unsafe", "no")]
    nxt = Assignment.objects.get(annotator=annotators[0], completed_at__isnull=True)
    assert nxt.item.item_id == "item-0001"


@pytest.mark.parametrize("kind", ["pairwise_alignment", "explanation_choice", "similarity_survey", "aspect_pairwise"])
def test_every_kind_offers_skip_and_comment_and_reports_the_skip(annotators, kind):
    study = make_study(kind, overlap=2)
    make_items(study, 1)
    page = web(annotators[0])
    reserve(page, study.slug)
    html = page.get(f"/annotate/{study.slug}/").content.decode()
    assert 'id="skip-form"' in html and 'id="item-comment"' in html and 'id="countdown"' in html
    client = api_client(annotators[0])
    assignment_id = take(client, study.slug)
    assert skip(client, assignment_id, {"reason": "other", "comment": "Not my language."}).status_code == 201
    rows = export(study.slug).splitlines()
    assert rows[1].split(",")[2:5] == ["ann1", "_skip", "other"] and rows[1].endswith(",Not my language.,,,")
    report, _ = study_report(study)
    assert report["skipped"] == {"n": 1, "by_reason": {"other": 1}}
    assert (report["n_judgments"], report["n_annotators"], report["annotators"]) == (0, 0, {})
    # Another annotator answers; My judgments shows the answers with the page's labels.
    other = api_client(annotators[1])
    body = other.post(f"/api/studies/{study.slug}/assignments/next/").json()
    answers = {q["id"]: q["options"][1] if "options" in q else q["scale"][1] for q in body["questions"]}
    assert other.post(f"/api/assignments/{body['assignment']}/judgments/", answers, format="json").status_code == 201
    mine = web(annotators[1]).get(f"/annotate/{study.slug}/mine/").content.decode()
    options = {o for q in body["questions"] for o in q.get("options", [])}
    assert mine.count("<li>") == len(body["questions"])
    assert all(f"<strong>{o}</strong>" not in mine for o in options)  # labels, not ids
    noun = get_kind(kind).option_noun
    expected = [f"{noun} B" if "options" in q else str(q["scale"][1]) for q in body["questions"]]
    assert re.findall(r"<strong>([^<]*)</strong></li>", mine) == expected
