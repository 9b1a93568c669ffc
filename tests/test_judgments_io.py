"""Judgments and predictions import/export (interfaces.md CSV formats)."""
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotate.models import Assignment, AuditLog, Item, Judgment, Prediction
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_io import import_judgments, import_predictions
from tests.factories import aspects, explained, header, jsonl, make_user, pairwise, similarity

pytestmark = pytest.mark.django_db
HEAD = "study,item_id,annotator,question,value,shown_order,seconds,submitted_at\n"  # files before `comment`
COMMENT_HEAD = HEAD.rstrip("\n") + ",comment\n"
EXPORT_HEAD = COMMENT_HEAD.rstrip("\n") + ",platform,study_id,session_id\n"
PRED_HEAD = "study,item_id,evaluator,annotator,question,value\n"


@pytest.fixture
def studies():
    import_batch_bytes(jsonl(header("pw", "pairwise_alignment", allow_tie=True), pairwise("p1"), pairwise("p2")))
    import_batch_bytes(jsonl(header("ex", "explanation_choice"), explained("e1")))
    import_batch_bytes(jsonl(header("sim", "similarity_survey"), similarity("s1")))
    import_batch_bytes(jsonl(header("asp", "aspect_pairwise", aspects=[
        {"key": "fun", "question": "More fun?"}, {"key": "end", "question": "Better ending?"}]), aspects("a1")))


# Rows in export order: item position, then annotator username, then insertion order.
ROUND_TRIP = COMMENT_HEAD + """\
pw,p1,ann1,choice,m2,m2|m1,12.5,2026-03-01T10:00:00+00:00,
pw,p1,ann2,choice,tie,m1|m2,3,2026-03-01T10:05:00+00:00,"Close call, both fine."
pw,p2,ann1,choice,m1,,,,
ex,e1,ann1,choice,m1,m1|m2,40.25,2026-03-02T08:00:00+00:00,
ex,e1,ann1,usefulness,4,,40.25,2026-03-02T08:00:00+00:00,
sim,s1,ann3,ref,2,1|0,20,2026-03-03T09:00:00+00:00,
sim,s1,ann3,gen-c0,6,0|1,20,2026-03-03T09:00:00+00:00,
asp,a1,ann2,fun,plot-a,plot-b|plot-a,9,2026-03-04T12:30:00.250000+00:00,
asp,a1,ann2,end,plot-b,plot-b|plot-a,9,2026-03-04T12:30:00.250000+00:00,
"""



def as_export(lines):
    """Rows as the export writes them: three empty platform cells at the end."""
    return "".join(line.rstrip("\n") + ",,,\n" for line in lines)


def load(text, **kwargs):
    return import_judgments(io.BytesIO(text.encode()), **kwargs)


def export(slug, fmt="csv"):
    out = io.StringIO()
    call_command("export_judgments", slug, "--format", fmt, stdout=out)
    return out.getvalue()


def errors_of(text):
    with pytest.raises(BatchInvalid) as caught:
        load(text)
    return caught.value.errors


def test_round_trip_batch_judgments_export(studies):
    result = load(ROUND_TRIP, source="run.csv")
    assert result == {"studies": ["asp", "ex", "pw", "sim"], "created": 9, "skipped": 0, "annotators_created": 3}
    body = ROUND_TRIP.splitlines(keepends=True)[1:]
    for slug in ("pw", "ex", "sim", "asp"):
        expected = EXPORT_HEAD + as_export(line for line in body if line.startswith(slug + ","))
        assert export(slug) == expected
    # The exports, concatenated without their repeated headers, are the input file itself
    # (plus the empty platform columns at the end), and import again as they are.
    exported = EXPORT_HEAD + "".join(export(s)[len(EXPORT_HEAD):] for s in ("pw", "ex", "sim", "asp"))
    assert exported == EXPORT_HEAD + as_export(body)
    assert load(exported)["skipped"] == 9


def test_jsonl_export_reimports_as_the_same_rows(studies):
    load(ROUND_TRIP)
    text = export("ex", "jsonl")
    rows = [json.loads(line) for line in text.splitlines()]
    assert rows[1] == {"study": "ex", "item_id": "e1", "annotator": "ann1", "question": "usefulness", "value": "4",
                       "shown_order": "", "seconds": 40.25, "submitted_at": "2026-03-02T08:00:00+00:00",
                       "comment": "", "platform": "", "study_id": "", "session_id": ""}
    assert load(text) == {"studies": ["ex"], "created": 0, "skipped": 2, "annotators_created": 0}


def test_assignments_counters_users_and_audit(studies):
    load(ROUND_TRIP)
    ann1 = get_user_model().objects.get(username="ann1")
    assert not ann1.has_usable_password() and not ann1.groups.exists()
    a = Assignment.objects.get(item__item_id="p1", annotator=ann1)
    assert a.shown_order == {"choice": ["m2", "m1"]} and a.seconds == 12.5
    assert a.completed_at == datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    sim = Assignment.objects.get(item__item_id="s1")
    assert sim.shown_order == {"ref": ["1", "0"], "gen-c0": ["0", "1"]}
    no_time = Assignment.objects.get(item__item_id="p2")
    assert no_time.seconds is None and no_time.completed_at is not None and no_time.shown_order == {}
    counters = dict((i, (n, c)) for i, n, c in Item.objects.values_list("item_id", "n_assigned", "n_completed"))
    assert counters == {"p1": (2, 2), "p2": (1, 1), "e1": (1, 1), "s1": (1, 1), "a1": (1, 1)}
    assert set(Judgment.objects.values_list("assignment__annotator__username", "annotator__username").distinct()) == {
        ("ann1", "ann1"), ("ann2", "ann2"), ("ann3", "ann3")}
    assert AuditLog.objects.filter(action="import_judgments").count() == 4


def test_reimport_is_idempotent(studies):
    load(ROUND_TRIP)
    counts = (Judgment.objects.count(), Assignment.objects.count(), get_user_model().objects.count())
    assert load(ROUND_TRIP) == {"studies": ["asp", "ex", "pw", "sim"], "created": 0, "skipped": 9,
                                "annotators_created": 0}
    assert (Judgment.objects.count(), Assignment.objects.count(), get_user_model().objects.count()) == counts
    assert Item.objects.get(item_id="p1").n_completed == 2


def test_open_assignment_is_completed_and_expired_one_recounted(studies):
    """p1: ann1 holds an open assignment (counted), ann2 an expired one (not counted).
    Before: n_assigned = 1. Importing both judgments completes both: n_assigned = n_completed = 2."""
    ann1, ann2 = make_user("ann1", None), make_user("ann2", None)
    item = Item.objects.get(item_id="p1")
    now = datetime.now(UTC)
    Assignment.objects.create(study=item.study, item=item, annotator=ann1, expires_at=now + timedelta(minutes=5),
                              shown_order={"choice": ["m1", "m2"]})
    Assignment.objects.create(study=item.study, item=item, annotator=ann2, expires_at=now - timedelta(minutes=5))
    Item.objects.filter(pk=item.pk).update(n_assigned=1)
    result = load(HEAD + "pw,p1,ann1,choice,m1,,,\npw,p1,ann2,choice,m2,m2|m1,5,\n")
    assert result["annotators_created"] == 0
    item.refresh_from_db()
    assert (item.n_assigned, item.n_completed) == (2, 2)
    kept = Assignment.objects.get(item=item, annotator=ann1)
    assert kept.shown_order == {"choice": ["m1", "m2"]} and kept.completed_at is not None
    assert Assignment.objects.get(item=item, annotator=ann2).seconds == 5.0


JUDGMENT_ERRORS = {
    "unknown study": ("nope,p1,ann1,choice,m1,,,", "line 3: unknown study 'nope'"),
    "unknown item": ("pw,p9,ann1,choice,m1,,,", "line 3: unknown item_id 'p9' in study 'pw'"),
    "unknown question": ("pw,p1,ann1,fun,m1,,,",
                         "line 3: unknown question 'fun' for this pairwise_alignment item (questions: choice)"),
    "choice not a candidate": ("pw,p1,ann1,choice,m3,,,",
                               "line 3: value for 'choice' must be one of ['m1', 'm2', 'tie'], got 'm3'"),
    "tie not allowed": ("asp,a1,ann1,fun,tie,,,",
                        "line 3: value for 'fun' must be one of ['plot-a', 'plot-b'], got 'tie'"),
    "rating out of scale": ("sim,s1,ann1,ref,7,,,", "line 3: value for 'ref' must be an integer in [1, 6], got '7'"),
    "rating not an integer": ("ex,e1,ann1,usefulness,3.5,,,",
                              "line 3: value for 'usefulness' must be an integer in [1, 5], got '3.5'"),
    "bad shown_order": ("pw,p1,ann1,choice,m1,m1|m3,,", "line 3: shown_order must order m1|m2, got 'm1|m3'"),
    "bad pair order": ("sim,s1,ann1,ref,3,0|2,,", "line 3: shown_order must order 0|1, got '0|2'"),
    "bad seconds": ("pw,p1,ann1,choice,m1,,-1,", "line 3: seconds must be a finite number >= 0"),
    "seconds not a number": ("pw,p1,ann1,choice,m1,,soon,", "line 3: could not convert string to float: 'soon'"),
    "bad timestamp": ("pw,p1,ann1,choice,m1,,,yesterday", "line 3: Invalid isoformat string: 'yesterday'"),
    "empty annotator": ("pw,p1,,choice,m1,,,", "line 3: empty annotator"),
    "empty value": ("pw,p1,ann1,choice,,,,", "line 3: empty value"),
    "field count": ("pw,p1,ann1,choice,m1", "line 3: expected 8 fields, got 5"),
}


@pytest.mark.parametrize("case", list(JUDGMENT_ERRORS))
def test_judgment_row_errors(studies, case):
    row, expected = JUDGMENT_ERRORS[case]
    assert errors_of(HEAD + "pw,p2,ann1,choice,m1,,,\n" + row + "\n") == [expected]
    assert Judgment.objects.count() == 0 and Assignment.objects.count() == 0
    assert not get_user_model().objects.filter(username="ann1").exists()


def test_bad_header_duplicates_and_conflicts(studies):
    assert errors_of("study,item_id,annotator,question,value\npw,p1,a,choice,m1\n") == [
        "line 1: header must be study,item_id,annotator,question,value,shown_order,seconds,submitted_at "
        "(optional at the end: comment,platform,study_id,session_id,repeat) "
        "(missing: ['shown_order', 'seconds', 'submitted_at'], unexpected: none)"]
    assert errors_of(HEAD + "pw,p1,ann1,choice,m1,,,\n\npw,p1,ann1,choice,m1,,,\n") == [
        "line 4: duplicate of line 2 (same item, annotator and question)"]
    load(HEAD + "pw,p1,ann1,choice,m1,,,\n")
    assert errors_of(HEAD + "pw,p2,ann1,choice,m1,,,\npw,p1,ann1,choice,m2,,,\n") == [
        "line 3: ann1 already answered 'choice' on 'p1' with 'm1', not 'm2'"]
    assert Judgment.objects.count() == 1


def test_multiline_cell_reports_the_row_start_line(studies):
    text = HEAD + 'pw,p1,ann1,choice,m1,,,\npw,"p\n2",ann1,choice,m1,,,\npw,p9,ann1,choice,m1,,,\n'
    assert errors_of(text) == ["line 3: unknown item_id 'p\\n2' in study 'pw'",
                               "line 5: unknown item_id 'p9' in study 'pw'"]


def test_import_judgments_command(studies, tmp_path):
    path = tmp_path / "j.csv"
    path.write_text(ROUND_TRIP)
    out = io.StringIO()
    call_command("import_judgments", str(path), stdout=out)
    assert json.loads(out.getvalue())["created"] == 9
    path.write_text(HEAD + "pw,p1,ann1,choice,m9,,,\n")
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_judgments", str(path), stdout=io.StringIO(), stderr=err)
    assert err.getvalue().splitlines() == ["line 2: value for 'choice' must be one of ['m1', 'm2', 'tie'], got 'm9'"]
    target = tmp_path / "out.csv"
    call_command("export_judgments", "pw", "--out", str(target))
    assert target.read_text().splitlines()[1] == "pw,p1,ann1,choice,m2,m2|m1,12.5,2026-03-01T10:00:00+00:00,,,,"
    with pytest.raises(CommandError, match="unknown study 'nope'"):
        call_command("export_judgments", "nope")


# --- predictions -------------------------------------------------------------------------------

def test_predictions_import_update_idempotent(studies, tmp_path):
    text = PRED_HEAD + """\
pw,p1,rougeL,,m1,0.31
pw,p1,rougeL,,m2,0.25
pw,p1,gemba,,choice,m1
pw,p2,gemba,,choice,N/A
asp,a1,perse,ann2,fun,plot-b
asp,a1,perse,ann2,end,
sim,s1,judge,,ref,4.5
"""
    path = tmp_path / "p.csv"
    path.write_text(text)
    out = io.StringIO()
    call_command("import_predictions", str(path), stdout=out)
    assert json.loads(out.getvalue()) == {"studies": ["asp", "pw", "sim"], "created": 7, "updated": 0, "skipped": 0}
    rows = Prediction.objects.filter(item__item_id="a1").values_list("evaluator", "annotator", "question", "value")
    assert set(rows) == {
        ("perse", "ann2", "fun", "plot-b"), ("perse", "ann2", "end", "")}
    again = import_predictions(io.BytesIO(text.replace("0.31", "0.5").encode()))
    assert again == {"studies": ["asp", "pw", "sim"], "created": 0, "updated": 1, "skipped": 6}
    assert Prediction.objects.get(item__item_id="p1", question="m1").value == "0.5"


PREDICTION_ERRORS = {
    "score not a number": ("pw,p1,rougeL,,m1,high",
                           "line 3: value for 'm1' must be a number, N/A or empty, got 'high'"),
    "choice not a candidate": ("pw,p1,gemba,,choice,m7",
                               "line 3: value for 'choice' must be one of ['m1', 'm2', 'tie'], N/A or empty"),
    "unknown question": ("pw,p1,gemba,,style,m1",
                         "line 3: unknown question 'style': a question id or a candidate id of the item"),
    "empty evaluator": ("pw,p1,,,m1,0.2", "line 3: empty evaluator"),
    "unknown item": ("pw,zz,bleu,,m1,1", "line 3: unknown item_id 'zz' in study 'pw'"),
    "infinite score": ("pw,p1,bleu,,m1,inf", "line 3: value for 'm1' must be a finite number"),
}


@pytest.mark.parametrize("case", list(PREDICTION_ERRORS))
def test_prediction_errors(studies, case):
    row, expected = PREDICTION_ERRORS[case]
    with pytest.raises(BatchInvalid) as caught:
        import_predictions(io.BytesIO((PRED_HEAD + "pw,p2,bleu,,m1,3\n" + row + "\n").encode()))
    assert caught.value.errors == [expected]
    assert Prediction.objects.count() == 0


def test_prediction_conflict_within_file_and_study_restriction(studies):
    with pytest.raises(BatchInvalid) as caught:
        import_predictions(io.BytesIO((PRED_HEAD + "pw,p1,bleu,,m1,3\npw,p1,bleu,,m1,4\n").encode()))
    assert caught.value.errors == ["line 3: conflicts with line 2 (same item, evaluator, annotator, question)"]
    with pytest.raises(BatchInvalid) as caught:
        import_predictions(io.BytesIO((PRED_HEAD + "sim,s1,j,,ref,3\n").encode()), only_study="pw")
    assert caught.value.errors == ["line 2: study 'sim' is not 'pw'"]
