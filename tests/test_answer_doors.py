"""One answer rule at every door (annotate/studies/answers.py, docs/formats.md "Answers").

The same raw values go through the web form, the REST submit, import_judgments (CSV and
JSONL), the gold answers of a batch and the option part of predictions; each door must
store the same normalized value or refuse. Expected verdicts are the table below: a
stored value, or None for refused.
"""
import contextlib
import csv
import io
import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotate.desk.assignment import next_assignment
from annotate.models import Assignment, Item, Judgment, Prediction, Study
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_csv import JUDGMENT_COLUMNS, PREDICTION_COLUMNS
from annotate.studies.judgments_io import import_judgments, import_predictions
from tests.factories import blinding, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]

# Rating question `ref` of a similarity survey, scale [1, 6].
RATING_TEXT = {
    "4": "4", " 4 ": "4", "04": "4", "+4": "4", "4.0": "4", "4.00": "4", "6": "6", "1": "1", "\t5\n": "5",
    "4.5": None, "7": None, "0": None, "-4": None, "1e0": None, "1_0": None, "٤": None, "four": None,
    "": None, "   ": None, "4.": None, ".0": None, "NaN": None, "inf": None, "true": None,
    "99999999999999999999": None,
}
RATING_JSON = [(4, "4"), (4.0, "4"), ("4", "4"), (4.5, None), (True, None), (None, None), ([4], None), (7, None)]
# Choice question `choice` of a pairwise study whose candidates are `m1` and `2` (no ties).
CHOICE_TEXT = {
    "m1": "m1", " m1 ": "m1", "\tm1\n": "m1", "2": "2", " 2": "2",
    "M1": None, "m3": None, "tie": None, "": None, "02": None, "2.0": None, "m1 m2": None,
}
CHOICE_JSON = [(2, "2"), ("m1", "m1"), (2.0, "2"), (2.5, None), (True, None), (None, None), (["m1"], None),
               ({"m1": 1}, None)]
N_ITEMS = 40


def as_annotator(assignment_id, qid, raw):
    """(question key, raw value) as an annotator sends them: the assignment's tokens
    (annotate.desk.blinding) in place of the pair id and of a candidate id inside the raw text,
    its whitespace kept; anything else as it is. A JSON number is never a token."""
    tokens = blinding(assignment_id)
    core = raw.strip() if isinstance(raw, str) else None
    if core in tokens.option_tokens:
        raw = raw.replace(core, tokens.option(core))
    return tokens.question(qid), raw


# At the annotator doors options are tokens (strings): a JSON number cannot name one.
ANNOTATOR_CHOICE_JSON = [(raw, None if isinstance(raw, (int, float)) else value) for raw, value in CHOICE_JSON]


def similarity_item(item_id, **extra):
    return {"item_id": item_id, "document": {"id": "d", "text": "Rain closed two bridges."}, "users": ["u1", "u2"],
            "pairs": [{"id": "ref", "source": "reference", "texts": ["Bridges shut", "Storm hits town"]}], **extra}


def pairwise_item(item_id, **extra):
    return {"item_id": item_id, "input": "Note to my landlord.", "reference": "Sam, heater's dead. Ana",
            "candidates": [{"id": "m1", "text": "Heater broken."}, {"id": "2", "text": "Heating failed."}], **extra}


STUDIES = {"rating": ("doors-sim", "similarity_survey", similarity_item, "ref"),
           "choice": ("doors-pw", "pairwise_alignment", pairwise_item, "choice")}


def lines(*objects):
    return ("\n".join(json.dumps(o) for o in objects) + "\n").encode()


def head(slug, kind):
    return {"study": {"slug": slug, "kind": kind, "title": "Doors", "annotations_per_item": 1, "gold_rate": 0.0}}


@pytest.fixture
def studies():
    for slug, kind, item, _ in STUDIES.values():
        import_batch_bytes(lines(head(slug, kind), *[item(f"i{n}") for n in range(N_ITEMS)]))


def outcome(question, before):
    """The value stored since `before` judgments, or None when nothing was stored."""
    new = Judgment.objects.filter(question=question).order_by("id")[before:]
    values = [j.value for j in new]
    assert len(values) <= 1
    return values[0] if values else None


def through_form(which, raws):
    slug, _, _, qid = STUDIES[which]
    user = make_user(f"form-{which}")
    client = APIClient()
    client.force_login(user)
    study = Study.objects.get(slug=slug)
    verdicts = {}
    for raw in raws:
        assignment = next_assignment(study, user)
        before = Judgment.objects.filter(question=qid).count()
        url = reverse("annotate-submit", args=[slug, assignment.pk])
        key, value = as_annotator(assignment.pk, qid, raw)
        response = client.post(url, {f"q:{key}": value, "seconds": "3"})
        assert response.status_code == 200
        verdicts[raw] = outcome(qid, before)
    return verdicts


def through_api(which, raws):
    slug, _, _, qid = STUDIES[which]
    client = APIClient()
    client.force_authenticate(make_user(f"api-{which}"))
    verdicts = {}
    for raw in raws:
        assignment = client.post(f"/api/studies/{slug}/assignments/next/").json()["assignment"]
        before = Judgment.objects.filter(question=qid).count()
        key, value = as_annotator(assignment, qid, raw)
        response = client.post(f"/api/assignments/{assignment}/judgments/", {key: value, "seconds": 3}, format="json")
        assert response.status_code in (201, 400), response.content
        verdicts[json.dumps(raw)] = outcome(qid, before)
        assert (response.status_code == 201) == (verdicts[json.dumps(raw)] is not None)
    return verdicts


def _import(data):
    with contextlib.suppress(BatchInvalid):
        import_judgments(io.BytesIO(data))


def through_judgments_csv(which, raws):
    slug, _, _, qid = STUDIES[which]
    verdicts = {}
    for n, raw in enumerate(raws):
        before = Judgment.objects.filter(question=qid).count()
        text = io.StringIO()
        writer = csv.writer(text)
        writer.writerow(JUDGMENT_COLUMNS)
        writer.writerow([slug, "i0", f"csv-{n}", qid, raw, "", "", ""])
        _import(text.getvalue().encode())
        verdicts[raw] = outcome(qid, before)
    return verdicts


def through_judgments_jsonl(which, raws):
    slug, _, _, qid = STUDIES[which]
    verdicts = {}
    for n, raw in enumerate(raws):
        before = Judgment.objects.filter(question=qid).count()
        row = {"study": slug, "item_id": "i1", "annotator": f"jsonl-{n}", "question": qid, "value": raw,
               "shown_order": "", "seconds": None, "submitted_at": None}
        _import(lines(row))
        verdicts[json.dumps(raw)] = outcome(qid, before)
    return verdicts


def through_gold(which, raws, key=lambda raw: raw):
    slug, kind, item, qid = STUDIES[which]
    verdicts = {}
    for n, raw in enumerate(raws):
        try:
            import_batch_bytes(lines(head(slug, kind), item(f"gold-{n}", gold={qid: raw})))
        except BatchInvalid:
            verdicts[key(raw)] = None
            continue
        gold = Item.objects.get(study__slug=slug, item_id=f"gold-{n}").gold[qid]
        assert isinstance(gold, int if which == "rating" else str)  # ratings stay JSON integers
        verdicts[key(raw)] = str(gold)
    return verdicts


def through_predictions(raws, key=lambda raw: raw, fmt="csv"):
    slug, _, _, qid = STUDIES["choice"]
    verdicts = {}
    for n, raw in enumerate(raws):
        if fmt == "csv":
            text = io.StringIO()
            writer = csv.writer(text)
            writer.writerow(PREDICTION_COLUMNS)
            writer.writerow([slug, "i0", f"judge-{n}", "", qid, raw])
            data = text.getvalue().encode()
        else:
            data = lines({"study": slug, "item_id": "i0", "evaluator": f"judge-{n}", "annotator": "",
                          "question": qid, "value": raw})
        try:
            import_predictions(io.BytesIO(data))
        except BatchInvalid:
            verdicts[key(raw)] = None
            continue
        verdicts[key(raw)] = Prediction.objects.get(evaluator=f"judge-{n}").value
    return verdicts


TEXT_DOORS = {
    "web form": through_form,
    "REST submit": lambda which, raws: {json.loads(k): v for k, v in through_api(which, raws).items()},
    "import_judgments CSV": through_judgments_csv,
    "gold in a batch": through_gold,
}
JSON_DOORS = {
    "REST submit": through_api,
    "import_judgments JSONL": through_judgments_jsonl,
    "gold in a batch": lambda which, raws: through_gold(which, raws, key=json.dumps),
}


@pytest.mark.parametrize("door", list(TEXT_DOORS))
@pytest.mark.parametrize("which", ["rating", "choice"])
def test_text_values_get_one_verdict_at_every_door(studies, door, which):
    table = RATING_TEXT if which == "rating" else CHOICE_TEXT
    assert TEXT_DOORS[door](which, list(table)) == table


@pytest.mark.parametrize("door", list(JSON_DOORS))
@pytest.mark.parametrize("which", ["rating", "choice"])
def test_json_values_get_one_verdict_at_every_door(studies, door, which):
    table = RATING_JSON if which == "rating" else ANNOTATOR_CHOICE_JSON if door == "REST submit" else CHOICE_JSON
    expected = {json.dumps(raw): value for raw, value in table}
    assert JSON_DOORS[door](which, [raw for raw, _ in table]) == expected


def test_prediction_options_get_the_same_verdict(studies):
    """Predictions take the option rule for choice questions; an empty value is kept as
    'could not be parsed' (not an answer), so it is left out of the comparison."""
    texts = {raw: value for raw, value in CHOICE_TEXT.items() if raw.strip()}
    assert through_predictions(list(texts)) == texts
    typed = {json.dumps(raw): value for raw, value in CHOICE_JSON if raw is not None}
    assert through_predictions([json.loads(k) for k in typed], key=json.dumps, fmt="jsonl") == typed


def test_refusals_say_why(studies):
    """The researchers' doors repeat the value; the annotators' doors do not."""
    with pytest.raises(BatchInvalid) as caught:
        import_batch_bytes(lines(head("doors-sim", "similarity_survey"), similarity_item("g", gold={"ref": "4.5"})))
    assert caught.value.errors == ["line 2: 'gold' for 'ref' must be an integer in [1, 6], got '4.5'"]
    with pytest.raises(BatchInvalid) as caught:
        import_judgments(io.BytesIO(b"study,item_id,annotator,question,value,shown_order,seconds,submitted_at\n"
                                    b"doors-pw,i0,x,choice,M1,,,\n"))
    assert caught.value.errors == ["line 2: value for 'choice' must be one of ['m1', '2'], got 'M1'"]
    client = APIClient()
    client.force_authenticate(make_user("why"))
    assignment = client.post("/api/studies/doors-sim/assignments/next/").json()["assignment"]
    ref = blinding(assignment).question("ref")
    response = client.post(f"/api/assignments/{assignment}/judgments/", {ref: "4.5"}, format="json")
    assert response.json() == {"errors": {ref: "must be an integer from 1 to 6"}}
    assert Assignment.objects.get(pk=assignment).completed_at is None
