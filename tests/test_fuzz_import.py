"""Hostile input for the two importers (hypothesis): any file either imports or is refused
with BatchInvalid listing `line N: ...` reasons, never another exception, and a refused
file writes nothing (row counts of every table unchanged).

The generated files are mostly well-formed with one or more fields replaced by arbitrary
JSON (NUL characters, lone surrogates, NaN, huge numbers, deep nesting, HTML), plus raw
byte garbage, BOMs, blank lines and truncated lines: the inputs a careless export or a
hostile uploader produces.
"""
import csv
import io
import json

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from annotate.kinds import KINDS
from annotate.models import Assignment, AuditLog, Batch, Item, Judgment, Prediction, Study
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_io import import_judgments
from tests.factories import add_items, make_study, short_pairwise

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
MODELS = (Study, Batch, Item, Prediction, AuditLog, Judgment, Assignment)

nasty_text = st.sampled_from([
    "", " ", "\x00", "a\x00b", "\ud800", "<script>alert(1)</script>", "x" * 250, "é" * 70, "tie", "pair_order",
    "NaN", "1e309", "-0", "\u202e", "line\nbreak", "m1", "m2", "rev-1",
]) | st.text(max_size=20)
nasty_number = st.sampled_from([0, 1, 2, 3, 6, -1, 10**30, 1.5, float("nan"), float("inf"), True])
any_json = st.recursive(
    st.none() | st.booleans() | nasty_number | st.integers() | st.floats() | nasty_text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(nasty_text, children, max_size=3),
    max_leaves=10)


def maybe(valid):
    """The valid value 9 times in 10, else anything."""
    return st.integers(0, 9).flatmap(lambda n: any_json if n == 0 else valid)


@st.composite
def candidate(draw):
    obj = {"id": draw(maybe(st.sampled_from(["m1", "m2"]))), "text": draw(maybe(nasty_text))}
    if draw(st.integers(0, 9)) == 0:
        obj.pop(draw(st.sampled_from(["id", "text"])))
    return obj


@st.composite
def header(draw):
    study = {"slug": draw(maybe(st.sampled_from(["fz-a", "fz-b"]))), "kind": draw(maybe(st.sampled_from(KINDS))),
             "title": draw(maybe(st.just("Fuzz")))}
    for key, value in draw(st.dictionaries(
            st.sampled_from(["instructions", "annotations_per_item", "randomize_order", "allow_tie", "aspects",
                             "scale", "usefulness_scale", "annotators", "gold_rate", "min_seconds",
                             "assignment_timeout_minutes", "bogus"]),
            any_json, max_size=3)).items():
        study[key] = value
    return draw(st.one_of(st.just({"study": study}), st.just({"study": study}), any_json))


@st.composite
def item(draw):
    obj = {
        "item_id": draw(maybe(st.sampled_from(["i1", "i2", "i3"]))),
        "input": draw(maybe(nasty_text)), "reference": draw(maybe(nasty_text)),
        "candidates": draw(maybe(st.lists(candidate(), min_size=2, max_size=2))),
        "premise": "p",
        "document": draw(maybe(st.just({"id": "d", "text": "t"}))), "users": draw(maybe(st.just(["u1", "u2"]))),
        "pairs": draw(maybe(st.just([{"id": "ref", "source": "reference", "texts": ["a", "b"]},
                                     {"id": "p1", "source": "model", "texts": ["c", "d"], "model": "m",
                                      "prompt_style": "C-0-shot"}]))),
        "explanations": draw(maybe(st.just({"m1": {"score": 0.5, "aspects_reference": [], "aspects_generated": [],
                                                  "matches": []},
                                           "m2": {"score": 0.1, "aspects_reference": [], "aspects_generated": [],
                                                  "matches": []}}))),
    }
    for key in draw(st.lists(st.sampled_from(sorted(obj)), max_size=1)):
        obj.pop(key, None)
    for key, value in draw(st.dictionaries(st.sampled_from(["meta", "gold", "metric_scores", "extra"]), any_json,
                                           max_size=2)).items():
        obj[key] = value
    return obj


def to_line(obj, draw):
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()), allow_nan=True)
    return text.encode("utf-8", "surrogatepass")


@st.composite
def batch_file(draw):
    lines = [to_line(draw(header()), draw)] + [to_line(draw(item()), draw) for _ in range(draw(st.integers(0, 4)))]
    damage = draw(st.sampled_from(["none", "none", "garbage", "truncate", "bom", "blank", "empty"]))
    if damage == "garbage":
        lines.insert(draw(st.integers(0, len(lines))), draw(st.binary(max_size=30)))
    elif damage == "truncate":
        index = draw(st.integers(0, len(lines) - 1))
        lines[index] = lines[index][: draw(st.integers(0, len(lines[index])))]
    elif damage == "bom":
        lines[0] = b"\xef\xbb\xbf" + lines[0]
    elif damage == "blank":
        lines.insert(draw(st.integers(0, len(lines))), b"   ")
    elif damage == "empty":
        lines = []
    return b"\n".join(lines) + draw(st.sampled_from([b"", b"\n", b"\r\n"]))


def counts():
    return {model.__name__: model.objects.count() for model in MODELS}


def assert_clean_refusal(exc, before):
    assert exc.errors, "BatchInvalid without reasons"
    for error in exc.errors:
        assert error.startswith("line ") or error.startswith("... and "), error
    assert counts() == before, "a refused file wrote to the database"


def imported_or_cleanly_refused(before, run_import):
    """run_import()'s result, or None when it refused the file (then checked by
    assert_clean_refusal against the row counts `before`)."""
    try:
        return run_import()
    except BatchInvalid as exc:
        event("refused")
        assert_clean_refusal(exc, before)
        return None


@FUZZ
@given(data=batch_file())
def test_batch_import_never_crashes_and_refusals_write_nothing(data):
    before = counts()
    result = imported_or_cleanly_refused(before, lambda: import_batch_bytes(data, source="fuzz"))
    if result is None:
        return
    event(f"accepted, {result.created} created")
    after = counts()
    assert after["Item"] - before["Item"] == result.created
    assert after["Batch"] == before["Batch"] + 1


@FUZZ
@given(data=batch_file())
def test_batch_import_is_idempotent_for_any_accepted_file(data):
    """A file that imports once imports again with created = 0 and nothing new."""
    try:
        first = import_batch_bytes(data, source="fuzz")
    except BatchInvalid:
        return
    before = counts()
    again = import_batch_bytes(data, source="fuzz")
    assert again.created == 0 and again.skipped == first.created + first.skipped
    after = counts()
    assert after["Item"] == before["Item"] and after["Prediction"] == before["Prediction"]


# --- judgments CSV ---------------------------------------------------------------------------------

COLUMNS = ["study", "item_id", "annotator", "question", "value", "shown_order", "seconds", "submitted_at"]
cell = {
    "study": st.sampled_from(["fj", "fj", "nope"]) | nasty_text,
    "item_id": st.sampled_from(["j1", "j2", "j1", "zz"]) | nasty_text,
    "annotator": st.sampled_from(["ann1", "newbie", "ann1"]) | nasty_text,
    "question": st.sampled_from(["choice", "choice", "usefulness"]) | nasty_text,
    "value": st.sampled_from(["m1", "m2", "tie", "3"]) | nasty_text,
    "shown_order": st.sampled_from(["", "m1|m2", "m2|m1", "m1|m1", "m1|m3"]) | nasty_text,
    "seconds": st.sampled_from(["", "3.5", "-1", "nan", "inf", "1e309", "abc"]) | nasty_text,
    "submitted_at": st.sampled_from(["", "2026-03-01T12:00:00Z", "2026-13-45", "yesterday",
                                     "2026-03-01T12:00:00"]) | nasty_text,
}


@st.composite
def judgments_file(draw):
    columns = draw(st.one_of(st.just(COLUMNS), st.permutations(COLUMNS), st.lists(st.sampled_from(COLUMNS + ["x"]),
                                                                                   max_size=8)))
    rows = [{c: draw(cell.get(c, nasty_text)) for c in columns} for _ in range(draw(st.integers(0, 4)))]
    if draw(st.booleans()):
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([row[c] for c in columns])
        text = out.getvalue()
    else:
        text = "\n".join(json.dumps(row) for row in rows)
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 5)) == 0:
        data = data[: draw(st.integers(0, len(data)))] + draw(st.binary(max_size=10))
    return data


@pytest.fixture
def judged_study(annotators):
    study = make_study(slug="fj", title="FJ", overlap=3)
    add_items(study, [(f"j{n}", short_pairwise(), None) for n in (1, 2)])
    return study


@FUZZ
@given(data=judgments_file())
def test_judgments_import_never_crashes_and_refusals_write_nothing(judged_study, data):
    before = counts()
    result = imported_or_cleanly_refused(before, lambda: import_judgments(io.BytesIO(data), source="fuzz"))
    if result is None:
        return
    event(f"accepted, {result['created']} created")
    after = counts()
    assert after["Judgment"] - before["Judgment"] == result["created"]
    # Every stored item respects the overlap of 3 and one answer per (item, annotator, question).
    for item in Item.objects.filter(study=judged_study):
        assert item.judgments.values("annotator").distinct().count() <= 3


def test_known_hostile_lines_are_refused_with_line_numbers():
    """Hand-picked: NUL inside a text, a lone surrogate, NaN score, a 10k-deep nesting."""
    head = json.dumps({"study": {"slug": "fz-h", "kind": "pairwise_alignment", "title": "H"}})
    ok_cands = [{"id": "m1", "text": "a"}, {"id": "m2", "text": "b"}]
    lines = [
        head,
        json.dumps({"item_id": "n1", "input": "a\x00b", "reference": "r", "candidates": ok_cands}),
        json.dumps({"item_id": "n2", "input": "\ud800", "reference": "r", "candidates": ok_cands}),
        json.dumps({"item_id": "n3", "input": "q", "reference": "r", "candidates": ok_cands,
                    "metric_scores": {"rougeL": {"m1": float("nan"), "m2": 0.1}}}),
        "[" * 10000 + "]" * 10000,
    ]
    before = counts()
    with pytest.raises(BatchInvalid) as info:
        import_batch_bytes("\n".join(lines).encode())
    assert_clean_refusal(info.value, before)
    lines_reported = {int(e.split(":")[0].split()[1]) for e in info.value.errors if e.startswith("line ")}
    assert {2, 3, 4, 5} <= lines_reported, info.value.errors


# --- predictions CSV -------------------------------------------------------------------------

PREDICTION_COLUMNS = ["study", "item_id", "evaluator", "annotator", "question", "value"]
prediction_cell = {
    "study": st.sampled_from(["fj", "fj", "nope"]) | nasty_text,
    "item_id": st.sampled_from(["j1", "j2", "zz"]) | nasty_text,
    "evaluator": st.sampled_from(["rougeL", "perse"]) | nasty_text,
    "annotator": st.sampled_from(["", "ann1"]) | nasty_text,
    "question": st.sampled_from(["m1", "m2", "choice"]) | nasty_text,
    "value": st.sampled_from(["0.3", "m1", "N/A", "", "nan", "inf", "1e309"]) | nasty_text,
}


@st.composite
def predictions_file(draw):
    columns = draw(st.one_of(st.just(PREDICTION_COLUMNS), st.permutations(PREDICTION_COLUMNS)))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for _ in range(draw(st.integers(0, 4))):
        writer.writerow([draw(prediction_cell[c]) for c in columns])
    return out.getvalue().encode("utf-8", "surrogatepass")


@FUZZ
@given(data=predictions_file())
def test_predictions_import_never_crashes_and_refusals_write_nothing(judged_study, data):
    from annotate.studies.judgments_io import import_predictions

    if imported_or_cleanly_refused(counts(), lambda: import_predictions(io.BytesIO(data), source="fuzz")) is not None:
        event("accepted")


# --- the REST door: any body gets a 4xx with reasons, never a 500 ------------------------------

@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=batch_file())
def test_batch_endpoint_answers_4xx_for_any_refused_body(admin_client_, data):
    before = counts()
    response = admin_client_.post("/api/studies/fz-a/batches/", data=data, content_type="application/x-ndjson")
    assert response.status_code in (201, 400), (response.status_code, response.content[:500])
    if response.status_code == 400:
        errors = response.json()["errors"]
        assert errors and all(e.startswith(("line ", "... and ")) for e in errors)
        assert counts() == before


@pytest.fixture
def admin_client_(admin_user_, settings):
    from django.test import Client

    settings.SECURE_SSL_REDIRECT = False
    client = Client(raise_request_exception=False)
    client.force_login(admin_user_)
    return client
