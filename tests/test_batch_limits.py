"""Batch values the database cannot keep are refused at import (issue 14, items 4, 8, 11).

Each case is an attack input that used to be accepted and then broke every submit (an
aspect key longer than Judgment.question), or answered 500 (NaN, 1e999, huge integers,
header integers beyond PostgreSQL's integer). Now: a `line N: reason` error at every door
(command, REST API, web upload) and not one row written.
"""
import json
from io import BytesIO, StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotate.models import Assignment, AuditLog, Batch, Item, Judgment, Prediction, Study
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_io import import_judgments
from tests.factories import aspects, explained, header, make_user, pairwise, similarity

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
BIG = 2**31  # one past PostgreSQL's integer
JUDGMENTS_HEAD = "study,item_id,annotator,question,value,shown_order,seconds,submitted_at\n"


def counts():
    return tuple(m.objects.count() for m in (Study, Batch, Item, Prediction, Assignment, Judgment, AuditLog))


def body(*lines):
    """A batch file from JSON-able objects or raw line strings (for NaN and friends)."""
    return ("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n").encode()


def refused(data):
    before = counts()
    with pytest.raises(BatchInvalid) as caught:
        import_batch_bytes(data)
    assert counts() == before
    return caught.value.errors


PAIRWISE_HEAD = json.dumps(header("limits", "pairwise_alignment"))
ITEM = json.dumps(pairwise("a"))[:-1]  # the item line without its closing brace, to append raw JSON

COLUMN_CASES = {  # item 4: every id and value fits the column it is stored in
    "aspect key of 201 characters": (
        body(header("limits", "aspect_pairwise", aspects=[{"key": "k" * 201, "question": "Which?"}])),
        [f"line 1: aspect key {repr('k' * 201)[:59]}… is over 200 characters"]),
    "aspect key with surrounding space": (
        body(header("limits", "aspect_pairwise", aspects=[{"key": " fun", "question": "Which?"}])),
        ["line 1: aspect key ' fun' starts or ends with whitespace or contains a control character"]),
    "candidate id of 201 characters": (
        body(header("limits", "pairwise_alignment"),
             pairwise("a", candidates=[{"id": "c" * 201, "text": "t"}, {"id": "m2", "text": "u"}])),
        [f"line 2: candidate id {repr('c' * 201)[:59]}… is reserved or contains '|' (or is over 200 characters)"]),
    "candidate id with a line break": (
        body(header("limits", "aspect_pairwise"),
             aspects("a", candidates=[{"id": "plot\na", "text": "t"}, {"id": "plot-b", "text": "u"}])),
        ["line 2: candidate id 'plot\\na' starts or ends with whitespace or contains a control character"]),
    "pair id of 201 characters": (
        body(header("limits", "similarity_survey"),
             similarity("a", pairs=[{"id": "p" * 201, "source": "reference", "texts": ["a", "b"]}])),
        ["line 2: pair 1: 'id' is over 200 characters"]),
    "metric score written in 251 characters": (
        body(header("limits", "pairwise_alignment"), pairwise("a", metric_scores={"bleu": {"m1": 10**250}})),
        ["line 2: metric_scores['bleu'] values must be written in at most 200 characters"]),
    "metric score too large for a double": (
        body(header("limits", "pairwise_alignment"), pairwise("a", metric_scores={"bleu": {"m1": 10**400}})),
        ["line 2: metric_scores['bleu'] values must be finite numbers"]),
    "explanation score too large for a double": (
        body(header("limits", "explanation_choice"),
             {**explained("a"), "explanations": {"m1": {**explained("a")["explanations"]["m1"], "score": 10**400},
                                                 "m2": explained("a")["explanations"]["m2"]}}),
        ["line 2: explanation of 'm1': 'score' must be a number"]),
}

NUMBER_CASES = {  # item 8: numbers JSON or PostgreSQL cannot keep
    "NaN in meta": (body(PAIRWISE_HEAD, ITEM + ', "meta": {"x": NaN}}'),
                    ["line 2: NaN is not a JSON number (JSON has no NaN or Infinity)"]),
    "Infinity in a metric score": (body(PAIRWISE_HEAD, ITEM + ', "metric_scores": {"bleu": {"m1": Infinity}}}'),
                                   ["line 2: Infinity is not a JSON number (JSON has no NaN or Infinity)"]),
    "-Infinity in the header": (body('{"study": {"slug": "limits", "kind": "pairwise_alignment", "title": "T", '
                                     '"min_seconds": -Infinity}}'),
                                ["line 1: -Infinity is not a JSON number (JSON has no NaN or Infinity)"]),
    "1e999 in meta": (body(PAIRWISE_HEAD, ITEM + ', "meta": [1e999]}'),
                      ["line 2: number '1e999' is too large (numbers must fit a double, at most about 1.8e308)"]),
    "integer of 4301 digits": (body(PAIRWISE_HEAD, ITEM + ', "meta": ' + "9" * 4301 + "}"),
                               ["line 2: an integer with 4301 digits is too long (at most 4300)"]),
    "negative integer of 5000 digits in the header": (
        body('{"study": {"slug": "limits", "kind": "similarity_survey", "title": "T", "scale": [-' + "1" * 5000
             + ", 1]}}"),
        ["line 1: an integer with 5000 digits is too long (at most 4300)"]),
    "annotations_per_item 2**31": (body(header("limits", "pairwise_alignment", annotations_per_item=BIG)),
                                   ["line 1: 'annotations_per_item' must be at most 2147483647, got 2147483648"]),
    "assignment_timeout_minutes 2**31": (
        body(header("limits", "pairwise_alignment", assignment_timeout_minutes=BIG)),
        ["line 1: 'assignment_timeout_minutes' must be an integer from 1 to 2147483647"]),
    "scale bound 2**31": (body(header("limits", "similarity_survey", scale=[BIG - 5, BIG])),
                          ["line 1: 'scale' bounds must be integers from -2147483648 to 2147483647"]),
    "usefulness_scale bound -2**31 - 1": (body(header("limits", "explanation_choice", usefulness_scale=[-BIG - 1, 0])),
                                          ["line 1: 'usefulness_scale' bounds must be integers from -2147483648 "
                                           "to 2147483647"]),
    "min_seconds 10**400": (body(header("limits", "pairwise_alignment", min_seconds=10**400)),
                            ["line 1: 'min_seconds' must be a number >= 0 or null"]),
    "gold_rate 10**400": (body(header("limits", "pairwise_alignment", gold_rate=10**400)),
                          ["line 1: 'gold_rate' must be a number in [0, 1]"]),
}

SCALE_CASES = {  # item 11: at most 11 points on a rating scale
    "scale of 12 points": (body(header("limits", "similarity_survey", scale=[1, 12])),
                           ["line 1: 'scale' may have at most 11 points, got [1, 12] (12 points)"]),
    "scale of 100,000 points": (body(header("limits", "similarity_survey", scale=[1, 100000])),
                                ["line 1: 'scale' may have at most 11 points, got [1, 100000] (100000 points)"]),
    "usefulness_scale of 12 points": (body(header("limits", "explanation_choice", usefulness_scale=[0, 11])),
                                      ["line 1: 'usefulness_scale' may have at most 11 points, got [0, 11] "
                                       "(12 points)"]),
}
CASES = {**COLUMN_CASES, **NUMBER_CASES, **SCALE_CASES}


@pytest.mark.parametrize("case", list(CASES))
def test_refused_with_line_errors_and_nothing_written(case):
    data, expected = CASES[case]
    assert refused(data) == expected


@pytest.mark.parametrize("scale", [[1, 11], [-5, 5], [0, 10]])
def test_eleven_point_scales_are_accepted(scale):
    import_batch_bytes(body(header("eleven", "similarity_survey", scale=scale), similarity("a")))
    assert Study.objects.get().config == {"scale": scale}


def test_widest_allowed_values_are_stored():
    """The edges of every limit are accepted and stored as given."""
    aspects_header = [{"key": "k" * 200, "question": "Which?"}]
    import_batch_bytes(body(header("edges", "aspect_pairwise", aspects=aspects_header, annotations_per_item=BIG - 1,
                                   assignment_timeout_minutes=BIG - 1),
                            aspects("a", candidates=[{"id": "c" * 200, "text": "t"}, {"id": "d", "text": "u"}],
                                    metric_scores={"bleu": {"d": 10**199}}, meta={"n": 9 * 10**4299})))
    study = Study.objects.get()
    assert (study.annotations_per_item, study.assignment_timeout_minutes) == (BIG - 1, BIG - 1)
    item = Item.objects.get()
    assert item.meta == {"n": 9 * 10**4299}
    assert Prediction.objects.get().value == str(10**199)


DOOR_CASES = ["NaN in meta", "1e999 in meta", "integer of 4301 digits", "annotations_per_item 2**31",
              "scale of 100,000 points", "aspect key of 201 characters"]


@pytest.mark.parametrize("case", DOOR_CASES)
def test_every_door_answers_with_the_line_errors(case, tmp_path):
    """The command, the REST batch upload and the web upload form give the same errors."""
    data, expected = CASES[case]
    before = counts()
    path = tmp_path / "batch.jsonl"
    path.write_bytes(data)
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_batch", str(path), stderr=err)
    assert err.getvalue().splitlines() == expected

    admin = make_user("door-admin", role="admins")
    before = counts()
    api = APIClient()
    api.force_authenticate(admin)
    response = api.post("/api/studies/limits/batches/", data, content_type="application/x-ndjson")
    assert (response.status_code, response.json()) == (400, {"errors": expected})
    web = APIClient()
    web.force_login(admin)
    response = web.post("/batches/upload/", {"batch": SimpleUploadedFile("b.jsonl", data)})
    assert (response.status_code, response.context["errors"]) == (400, expected)
    assert counts() == before


@pytest.mark.parametrize(("raw", "expected"), [
    ('{"slug": "limits", "kind": "pairwise_alignment", "title": "T", "annotations_per_item": 2147483648}',
     {"errors": ["line 1: 'annotations_per_item' must be at most 2147483647, got 2147483648"]}),
    ('{"slug": "limits", "kind": "pairwise_alignment", "title": "T", "min_seconds": 1e999}',
     {"errors": ["line 1: Infinity is not a JSON number (JSON has no NaN or Infinity)"]}),
    ('{"slug": "limits", "kind": "similarity_survey", "title": "T", "scale": [1, 12]}',
     {"errors": ["line 1: 'scale' may have at most 11 points, got [1, 12] (12 points)"]}),
])
def test_rest_study_creation_refuses_the_same_headers(raw, expected):
    api = APIClient()
    api.force_authenticate(make_user("creator", role="admins"))
    before = counts()
    response = api.post("/api/studies/", raw, content_type="application/json")
    assert (response.status_code, response.json()) == (400, expected)
    assert counts() == before


def test_rest_study_creation_refuses_a_huge_integer_as_bad_json():
    api = APIClient()
    api.force_authenticate(make_user("creator", role="admins"))
    before = counts()
    raw = '{"slug": "limits", "kind": "pairwise_alignment", "title": "T", "annotations_per_item": ' + "9" * 5000 + "}"
    response = api.post("/api/studies/", raw, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("JSON parse error")
    assert counts() == before


def test_judgments_import_refuses_a_shown_order_beyond_its_column():
    """Judgment.shown_order holds 500 characters; a longer cell (kept as given for rating
    questions) used to reach the database and fail there."""
    import_batch_bytes(body(header("limits", "explanation_choice"), explained("e1")))
    before = counts()
    row = f"limits,e1,ann1,usefulness,4,{'x|' * 250}y,,\n"
    with pytest.raises(BatchInvalid) as caught:
        import_judgments(BytesIO((JUDGMENTS_HEAD + row).encode()))
    assert caught.value.errors == ["line 2: shown_order must be at most 500 characters"]
    assert counts() == before
