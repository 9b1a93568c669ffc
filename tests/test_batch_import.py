"""Batch import (studies.md): the validator's errors, all-or-nothing, idempotence, the command."""
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from annotate.kinds import KINDS, all_kinds
from annotate.models import AuditLog, Batch, Item, Prediction, Study
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch_bytes, import_batch_path
from tests.factories import SAMPLES, aspects, explained, header, jsonl, make_user, pairwise, similarity, write

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parent.parent


def owners(key):
    """The kinds owning a header key, in registry order (as the error message names them)."""
    return [kind.name for kind in all_kinds() if key in kind.header_keys]


def errors_of(*objects, **kwargs):
    with pytest.raises(BatchInvalid) as caught:
        import_batch_bytes(jsonl(*objects), **kwargs)
    return caught.value.errors


def nothing_written():
    return (Study.objects.count(), Item.objects.count(), Batch.objects.count(), AuditLog.objects.count(),
            Prediction.objects.count()) == (0, 0, 0, 0, 0)


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_each_kind_imports(kind):
    make = SAMPLES[kind]
    result = import_batch_bytes(jsonl(header(f"s-{kind.replace('_', '-')}", kind), make("a"), make("b")))
    assert result.as_json() == {"study": f"s-{kind.replace('_', '-')}", "created": 2, "skipped": 0}
    study = Study.objects.get()
    assert (study.kind, study.title, study.annotations_per_item) == (kind, f"Test {kind}", 3)
    assert list(Item.objects.values_list("item_id", "position")) == [("a", 1), ("b", 2)]
    item = Item.objects.get(item_id="a")
    expected_data = {k: v for k, v in make("a").items() if k != "item_id"}
    assert item.data == expected_data
    assert item.meta is None and item.gold is None and not item.is_gold


def test_item_fields_hash_meta_gold_and_metric_scores():
    line = pairwise("x1", meta={"source": "unit", "n": 3}, gold="m2",
                    metric_scores={"rougeL": {"m1": 0.31, "m2": 0.2}, "bleu": {"m1": 12, "m2": 30.5}})
    import_batch_bytes(jsonl(header("hashes", "pairwise_alignment"), line))
    item = Item.objects.get()
    canonical = json.dumps(line, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert item.content_hash == hashlib.sha256(canonical.encode()).hexdigest()
    assert item.meta == {"source": "unit", "n": 3}
    assert item.gold == {"choice": "m2"} and item.is_gold
    assert "metric_scores" in item.data and "gold" not in item.data and "meta" not in item.data
    predictions = set(Prediction.objects.values_list("evaluator", "annotator", "question", "value"))
    assert predictions == {("rougeL", "", "m1", "0.31"), ("rougeL", "", "m2", "0.2"),
                           ("bleu", "", "m1", "12"), ("bleu", "", "m2", "30.5")}


def test_gold_forms_per_kind():
    """A bare gold value means `choice` (pairwise) or every aspect (aspect_pairwise)."""
    import_batch_bytes(jsonl(header("g-asp", "aspect_pairwise", aspects=[
        {"key": "fun", "question": "Which is more fun?"}, {"key": "end", "question": "Which ends better?"}]),
        aspects("a1", gold="plot-b"), aspects("a2", gold={"end": "plot-a"})))
    assert Item.objects.get(item_id="a1").gold == {"fun": "plot-b", "end": "plot-b"}
    assert Item.objects.get(item_id="a2").gold == {"end": "plot-a"}
    import_batch_bytes(jsonl(header("g-sim", "similarity_survey"), similarity("s1", gold={"ref": 2})))
    assert Item.objects.get(item_id="s1").gold == {"ref": 2}
    import_batch_bytes(jsonl(header("g-exp", "explanation_choice", usefulness_scale=[0, 3]),
                             explained("e1", gold={"choice": "m1", "usefulness": 0})))
    assert Item.objects.get(item_id="e1").gold == {"choice": "m1", "usefulness": 0}


def test_header_settings_are_stored():
    make_user("ann-x", None)
    import_batch_bytes(jsonl(header("settings", "similarity_survey", scale=[0, 4], annotations_per_item=5,
                                    randomize_order=False, instructions="Rate *similarity*.",
                                    annotators=["ann-x"], gold_rate=0.2)))
    study = Study.objects.get()
    assert study.config == {"scale": [0, 4]}
    assert (study.annotations_per_item, study.randomize_order, study.instructions, study.gold_rate) == (
        5, False, "Rate *similarity*.", 0.2)
    assert [u.username for u in study.annotators.all()] == ["ann-x"]


# --- every validation error, exact messages -------------------------------------------------

H = header("bad", "pairwise_alignment")
CASES = {
    "bad json": ([H, "{not json"], ["line 2: bad JSON: Expecting property name enclosed in double quotes at column 2"]),
    "not an object": ([H, [1, 2]], ["line 2: expected a JSON object, got list"]),
    "missing keys": ([H, {"item_id": "a", "input": "x"}],
                     ["line 2: missing key 'reference'", "line 2: missing key 'candidates'"]),
    "wrong candidate count": ([H, {**pairwise("a"), "candidates": [{"id": "m1", "text": "t"}]}],
                              ["line 2: 'candidates' must be a list of 2 to 8, got 1"]),
    "same candidate ids": ([H, {**pairwise("a"), "candidates": [{"id": "m", "text": "t"}, {"id": "m", "text": "u"}]}],
                           ["line 2: candidates 1 and 2 have the same id 'm'"]),
    "reserved candidate id": ([H, {**pairwise("a"),
                                   "candidates": [{"id": "tie", "text": "t"}, {"id": "m", "text": "u"}]}],
                              ["line 2: candidate id 'tie' is reserved or contains '|' (or is over 200 characters)"]),
    "empty text": ([H, {**pairwise("a"), "reference": "   "}], ["line 2: 'reference' must be a non-empty string"]),
    "empty candidate text": ([H, {**pairwise("a"),
                                  "candidates": [{"id": "m1", "text": ""}, {"id": "m2", "text": "u"}]}],
                             ["line 2: candidate 1 must be an object with non-empty 'id' and 'text'"]),
    "missing item_id": ([H, {k: v for k, v in pairwise("a").items() if k != "item_id"}],
                        ["line 2: 'item_id' must be a non-empty string of at most 200 characters"]),
    "unknown item key": ([H, pairwise("a", premise="x")],
                         ["line 2: unknown key 'premise' for pairwise_alignment (free data goes in 'meta')"]),
    "duplicate item_id": ([H, pairwise("a"), pairwise("b"), pairwise("a")],
                          ["line 4: duplicate item_id 'a' (first on line 2)"]),
    "gold not a candidate": ([H, pairwise("a", gold="m3")],
                             ["line 2: 'gold' for 'choice' must be one of ['m1', 'm2'], got 'm3'"]),
    "tie gold without allow_tie": ([H, pairwise("a", gold="tie")],
                                   ["line 2: 'gold' for 'choice' must be one of ['m1', 'm2'], got 'tie'"]),
    "metric score names unknown candidate": ([H, pairwise("a", metric_scores={"bleu": {"m9": 1}})],
                                             ["line 2: metric_scores['bleu'] names unknown candidates ['m9']"]),
    "metric score not a number": ([H, pairwise("a", metric_scores={"bleu": {"m1": "high"}})],
                                  ["line 2: metric_scores['bleu'] values must be finite numbers"]),
    "header not a study": ([{"slug": "x"}], ['line 1: the header must be {"study": {...}}']),
    "unknown kind": ([header("bad", "rankings")],
                     [f"line 1: 'kind' must be one of {', '.join(KINDS)}, got 'rankings'"]),
    "bad slug": ([header("Bad slug!", "aspect_pairwise")],
                 ["line 1: 'slug' must be 1-100 letters, digits, '-' or '_'"]),
    "overlap not >= 1": ([header("bad", "aspect_pairwise", annotations_per_item=0)],
                         ["line 1: 'annotations_per_item' must be an integer >= 1, got 0"]),
    "overlap not an int": ([header("bad", "aspect_pairwise", annotations_per_item="3")],
                           ["line 1: 'annotations_per_item' must be an integer >= 1, got '3'"]),
    "unknown header key": ([header("bad", "aspect_pairwise", colour="red")],
                           ["line 1: unknown header key 'colour' (allowed: slug, kind, title, instructions, "
                            "annotations_per_item, randomize_order, allow_tie, "
                            + ", ".join(sorted({k for kind in all_kinds() for k in kind.header_keys}))
                            + ", annotators, researchers, gold_rate, min_seconds, assignment_timeout_minutes, "
                            "min_votes, retest, allocation, min_per_pair, stop_when, status, consent, "
                            "completion_code, completion_url, max_items_per_participant, pre_questions, "
                            "post_questions, quality, recruitment, comprehension, human_share, human_seed, "
                            "uncertainty_evaluator, human_budget)"]),
    "scale min >= max": ([header("bad", "similarity_survey", scale=[6, 1])],
                         ["line 1: 'scale' must have min < max, got [6, 1]"]),
    "scale not ints": ([header("bad", "similarity_survey", scale=[1, 6.5])],
                       ["line 1: 'scale' must be [min, max] integers"]),
    "scale on wrong kind": ([header("bad", "aspect_pairwise", scale=[1, 6])],
                            [f"line 1: 'scale' applies to {' and '.join(owners('scale'))} studies, "
                             "not aspect_pairwise"]),
    "aspects duplicate keys": ([header("bad", "aspect_pairwise", aspects=[{"key": "a", "question": "Q1"},
                                                                         {"key": "a", "question": "Q2"}])],
                               ["line 1: 'aspects' keys must be unique"]),
    "aspects malformed": ([header("bad", "aspect_pairwise", aspects=[{"key": "a"}])],
                          ['line 1: \'aspects\' must be a non-empty list of {"key", "question"} '
                           'with non-empty strings']),
    "usefulness scale bad": ([header("bad", "explanation_choice", usefulness_scale=[5])],
                             ["line 1: 'usefulness_scale' must be [min, max] integers"]),
    "tie on similarity": ([header("bad", "similarity_survey", allow_tie=True)],
                          ["line 1: 'allow_tie' applies to pairwise kinds, not similarity_survey"]),
    "new study without title": ([{"study": {"slug": "bad", "kind": "aspect_pairwise"}}],
                                ["line 1: 'title' is required to create a new study"]),
    "unknown annotator": ([header("bad", "aspect_pairwise", annotators=["nobody"])],
                          ["line 1: 'annotators' names unknown user 'nobody'"]),
    "empty file": ([], ["line 1: empty file, expected a study header"]),
    "similarity rating out of scale": ([header("bad", "similarity_survey"), similarity("a", gold={"ref": 7})],
                                       ["line 2: 'gold' for 'ref' must be an integer in [1, 6], got 7"]),
    "similarity two reference pairs": (
        [header("bad", "similarity_survey"),
         similarity("a", pairs=[{"id": "r1", "source": "reference", "texts": ["a", "b"]},
                                {"id": "r2", "source": "reference", "texts": ["c", "d"]}])],
        ["line 2: 'pairs' must have exactly one pair with source 'reference', got 2"]),
    "similarity bad pair": (
        [header("bad", "similarity_survey"),
         similarity("a", pairs=[{"id": "r", "source": "reference", "texts": ["a", "b"]},
                                {"id": "r", "source": "human", "texts": ["c"]}])],
        ["line 2: pair 2: duplicate pair id 'r'", "line 2: pair 2: 'source' must be 'reference' or 'model'",
         "line 2: pair 2: 'texts' must be exactly 2 non-empty strings"]),
    "similarity same users": ([header("bad", "similarity_survey"), similarity("a", users=["u1", "u1"])],
                              ["line 2: 'users' must be 2 different user ids"]),
    "similarity document without text": ([header("bad", "similarity_survey"), similarity("a", document={"id": "d"})],
                                         ["line 2: 'document' must be an object with non-empty 'id' and 'text'"]),
    "similarity bare gold": ([header("bad", "similarity_survey"), similarity("a", gold=3)],
                             ["line 2: 'gold' must be an object {pair id: rating}"]),
    "explanations for one candidate only": (
        [header("bad", "explanation_choice"), {**explained("a"), "explanations": {"m1": {}}}],
        ["line 2: 'explanations' must be an object with exactly the candidate ids ['m1', 'm2']"]),
    "explanation missing keys": (
        [header("bad", "explanation_choice"),
         {**explained("a"), "explanations": {"m1": {"score": 1}, "m2": {"score": 1}}}],
        ["line 2: explanation of 'm1' is missing aspects_reference, aspects_generated, matches",
         "line 2: explanation of 'm2' is missing aspects_reference, aspects_generated, matches"]),
    "usefulness gold out of scale": ([header("bad", "explanation_choice"), explained("a", gold={"usefulness": 6})],
                                     ["line 2: 'gold' for 'usefulness' must be an integer in [1, 5], got 6"]),
    "aspect gold unknown aspect": ([header("bad", "aspect_pairwise"), aspects("a", gold={"pace": "plot-a"})],
                                   ["line 2: 'gold' names unknown question 'pace' (questions: interestingness, "
                                    "adaptability, surprise, character, ending)"]),
    "aspect premise empty": ([header("bad", "aspect_pairwise"), aspects("a", premise="")],
                             ["line 2: 'premise' must be a non-empty string"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_validation_error(case):
    objects, expected = CASES[case]
    lines = [o if isinstance(o, str) else json.dumps(o) for o in objects]
    with pytest.raises(BatchInvalid) as caught:
        import_batch_bytes(("\n".join(lines) + "\n").encode() if lines else b"")
    assert caught.value.errors == expected
    assert nothing_written()


def test_not_utf8_and_blank_lines_keep_file_line_numbers():
    data = jsonl(H) + b"\n\n" + jsonl(pairwise("a")) + b"\xff\xfe\n" + jsonl({**pairwise("b"), "input": ""})
    with pytest.raises(BatchInvalid) as caught:
        import_batch_bytes(data)
    assert caught.value.errors == ["line 5: not valid UTF-8", "line 6: 'input' must be a non-empty string"]


def test_every_bad_line_is_reported_and_the_list_is_capped():
    """1,005 bad lines: the first 1,000 errors, then '... and 5 more'."""
    bad = [{**pairwise(f"i{n}"), "input": ""} for n in range(1005)]
    errors = errors_of(H, *bad)
    assert len(errors) == 1001
    assert errors[0] == "line 2: 'input' must be a non-empty string"
    assert errors[999] == "line 1001: 'input' must be a non-empty string"
    assert errors[-1] == "... and 5 more"


def test_all_or_nothing_on_an_existing_study():
    import_batch_bytes(jsonl(H, pairwise("a")))
    before = (Item.objects.count(), Batch.objects.count(), AuditLog.objects.count())
    errors = errors_of(H, pairwise("b"), pairwise("c", metric_scores={"bleu": {"m1": 1, "m2": 2}}),
                       {**pairwise("d"), "candidates": []})
    assert errors == ["line 4: 'candidates' must be a list of 2 to 8, got 0"]
    assert (Item.objects.count(), Batch.objects.count(), AuditLog.objects.count()) == before == (1, 1, 1)
    assert Prediction.objects.count() == 0


def test_kind_mismatch_with_existing_study():
    import_batch_bytes(jsonl(H))
    errors = errors_of(header("bad", "aspect_pairwise"), aspects("a"))
    assert errors == ["line 1: study 'bad' is pairwise_alignment, the header says aspect_pairwise"]


def test_existing_study_settings_govern_and_must_not_be_contradicted():
    import_batch_bytes(jsonl(header("sim", "similarity_survey", scale=[1, 4])))
    # Omitted scale: the study's 1..4 applies, so a gold rating of 5 is out of range.
    assert errors_of(header("sim", "similarity_survey"), similarity("a", gold={"ref": 5})) == [
        "line 2: 'gold' for 'ref' must be an integer in [1, 4], got 5"]
    assert errors_of(header("sim", "similarity_survey", scale=[1, 6])) == [
        "line 1: 'scale' [1, 6] differs from the existing study's [1, 4]"]


def test_idempotent_reimport_and_changed_content(tmp_path):
    path = write(tmp_path, H, pairwise("a"), pairwise("b", metric_scores={"bleu": {"m1": 1, "m2": 2}}))
    assert import_batch_path(path).as_json() == {"study": "bad", "created": 2, "skipped": 0}
    assert import_batch_path(path).as_json() == {"study": "bad", "created": 0, "skipped": 2}
    assert Item.objects.count() == 2 and Prediction.objects.count() == 2
    # Key order and spacing don't matter: same canonical JSON.
    reordered = dict(reversed(list(pairwise("a").items())))
    result = import_batch_bytes(jsonl(H, reordered, pairwise("c")))
    assert result.as_json() == {"study": "bad", "created": 1, "skipped": 1}
    assert Item.objects.get(item_id="c").position == 3
    errors = errors_of(H, pairwise("d"), {**pairwise("a"), "input": "A different request."})
    assert errors == ["line 3: item_id 'a' already exists in study 'bad' with different content"]
    assert Item.objects.count() == 3


def test_expected_slug_must_match():
    assert errors_of(H, expected_slug="other") == ["line 1: header slug 'bad' does not match the study 'other'"]


def test_allow_tie_lets_gold_be_tie_and_audit_records_the_batch():
    user = make_user("loader", None)
    import_batch_bytes(jsonl(header("ties", "pairwise_alignment", allow_tie=True), pairwise("a", gold="tie")),
                       user=user, source="ties.jsonl")
    batch = Batch.objects.get()
    assert (batch.source, batch.created, batch.skipped, batch.uploaded_by) == ("ties.jsonl", 1, 0, user)
    log = AuditLog.objects.get()
    assert (log.action, log.user, log.after["created"], log.after["sha256"]) == ("import_batch", user, 1, batch.sha256)


def test_command_prints_json_and_lists_errors(tmp_path):
    path = write(tmp_path, H, pairwise("a"))
    out = io.StringIO()
    call_command("import_batch", str(path), stdout=out)
    assert json.loads(out.getvalue()) == {"study": "bad", "created": 1, "skipped": 0}
    bad = write(tmp_path, H, {"item_id": "z"}, "oops", name="bad.jsonl")
    err = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("import_batch", str(bad), stdout=io.StringIO(), stderr=err)
    assert caught.value.returncode == 1
    assert err.getvalue().splitlines() == [
        "line 2: missing key 'input'", "line 2: missing key 'reference'", "line 2: missing key 'candidates'",
        "line 3: expected a JSON object, got str"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.postgres("the command's process shares the test database; the SQLite one is in memory")
def test_command_in_a_real_process(tmp_path):
    """stdout holds exactly one JSON document; on failure exit 1 and `line N:` lines on stderr."""
    db = settings.DATABASES["default"]
    url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    env = {**os.environ, "DATABASE_URL": url}
    good = write(tmp_path, H, pairwise("a"), name="good.jsonl")
    bad = write(tmp_path, H, pairwise("b"), {**pairwise("c"), "reference": ""}, name="bad.jsonl")
    run = [sys.executable, "manage.py", "import_batch", "--skip-checks"]
    done = subprocess.run(run + [str(good)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"study": "bad", "created": 1, "skipped": 0}
    failed = subprocess.run(run + [str(bad)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.splitlines()[0] == "line 3: 'reference' must be a non-empty string"
    assert Item.objects.count() == 1
