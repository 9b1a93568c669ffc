"""The study-kind contract: every registered kind goes the whole data path with exact values.

import_batch -> next assignment (API) -> submit (API) -> export_judgments -> import_judgments
into a fresh copy of the study -> report. A tiny hand-made study per kind: two items, two
annotators, every item judged by both; item i1 gets agreeing answers, item i2 split ones,
so the majority, the counts and the picks below are worked out by hand. A kind added to
the registry without a sample here fails `test_every_registered_kind_has_a_sample`.
"""
import csv
import io
import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotate.importing import import_batch_bytes
from annotate.judgments_io import import_judgments
from annotate.kinds import KINDS, all_kinds, get_kind
from annotate.models import Assignment, Judgment, Study
from annotate.report_data import study_report
from evaluation.report.build import BUILDERS
from evaluation.report.table import CORRELATION_HEADER
from evaluation.vocabulary import ASPECT_PAIRWISE, EXPLANATION_CHOICE, PAIRWISE_ALIGNMENT, SIMILARITY_SURVEY
from tests.factories import blinding, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
ANNOTATORS = ("ann1", "ann2")
SECONDS = {"ann1": 7.5, "ann2": 12}


def candidates():
    return [{"id": "m1", "text": "Hi Sam, the heater is cold again."},
            {"id": "m2", "text": "Dear landlord, the heating system has failed."}]


def explanation(score):
    return {"score": score, "precision": score, "recall": score,
            "aspects_reference": [{"aspect": "request", "description": "asks for a repair", "evidence": ["fix it"]}],
            "aspects_generated": [{"aspect": "request", "description": "asks for a visit", "evidence": ["come by"]}],
            "matches": [{"side": "recall", "from": "request", "to": "request", "reason": "same ask",
                         "content_match": True, "content_reason": "both ask", "style_match": False,
                         "style_reason": "one is formal"}]}


def pairwise_items():
    base = {"input": "Tell my landlord the heater broke.", "reference": "Sam, heater's dead again. Ana"}
    return [{"item_id": "i1", **base, "candidates": candidates(), "metric_scores": {"bleu": {"m1": 0.9, "m2": 0.1}},
             "meta": {"batch": "contract"}},
            {"item_id": "i2", **base, "candidates": candidates(), "metric_scores": {"bleu": {"m1": 0.2, "m2": 0.6}}}]


def explanation_items():
    items = pairwise_items()
    items[0]["explanations"] = {"m1": explanation(0.8), "m2": explanation(0.3)}
    items[1]["explanations"] = {"m1": explanation(0.1), "m2": explanation(0.7)}
    return items


def similarity_items():
    def item(item_id):
        return {"item_id": item_id, "document": {"id": f"doc-{item_id}", "text": "Rain closed two bridges."},
                "users": ["u1", "u2"],
                "pairs": [{"id": "ref", "source": "reference", "texts": ["Bridges shut", "Storm hits town"]},
                          {"id": "gen", "source": "model", "model": "smollm2", "prompt_style": "C-0-shot",
                           "texts": ["Rain closes bridges", "Rain closes two bridges"]}]}
    return [item("i1"), item("i2")]


def aspect_items():
    plots = [{"id": "plot-a", "text": "She answers the letter."}, {"id": "plot-b", "text": "She burns the letter."}]
    return [{"item_id": item_id, "premise": "A keeper finds a letter to her future self.", "candidates": plots}
            for item_id in ("i1", "i2")]


# kind -> (extra header keys, items, answers {(item_id, annotator): {question: value}},
#          expected per-item CSV table (header + rows), expected report values)
SAMPLES = {
    PAIRWISE_ALIGNMENT: (  # with ties: the recorded option order ends in `tie`
        {"allow_tie": True}, pairwise_items(),
        {("i1", "ann1"): {"choice": "m1"}, ("i1", "ann2"): {"choice": "m1"},
         ("i2", "ann1"): {"choice": "m1"}, ("i2", "ann2"): {"choice": "tie"}},
        [["item_id", "question", "is_gold", "n_judgments", "majority", "n_m1", "n_tie", "pick_bleu"],
         ["i1", "choice", "0", "2", "m1", "2", "0", "m1"],
         ["i2", "choice", "0", "2", "", "1", "1", "m2"]],
        {("n_judgments",): 4, ("majority",): {"i1": "m1", "i2": None}, ("no_majority",): 1,
         ("alignment", "bleu", "n"): 1, ("alignment", "bleu", "agree"): 1}),
    EXPLANATION_CHOICE: (
        {"usefulness_scale": [1, 5]}, explanation_items(),
        {("i1", "ann1"): {"choice": "m1", "usefulness": 4}, ("i1", "ann2"): {"choice": "m1", "usefulness": 5},
         ("i2", "ann1"): {"choice": "m1", "usefulness": 4}, ("i2", "ann2"): {"choice": "m2", "usefulness": 5}},
        [["item_id", "question", "is_gold", "n_judgments", "majority", "n_4", "n_5", "n_m1", "n_m2",
          "pick_bleu", "pick_expert"],
         ["i1", "choice", "0", "2", "m1", "0", "0", "2", "0", "m1", "m1"],
         ["i1", "usefulness", "0", "2", "", "1", "1", "0", "0", "", ""],
         ["i2", "choice", "0", "2", "", "0", "0", "1", "1", "m2", "m2"],
         ["i2", "usefulness", "0", "2", "", "1", "1", "0", "0", "", ""]],
        {("n_judgments",): 8, ("majority",): {"i1": "m1", "i2": None}, ("no_majority",): 1,
         ("usefulness", "n"): 4, ("usefulness", "mean"): 4.5, ("choice_matches_expert",): 0.75}),
    SIMILARITY_SURVEY: (
        {"scale": [1, 6]}, similarity_items(),
        {("i1", "ann1"): {"ref": 2, "gen": 5}, ("i1", "ann2"): {"ref": 2, "gen": 6},
         ("i2", "ann1"): {"ref": 3, "gen": 5}, ("i2", "ann2"): {"ref": 4, "gen": 5}},
        [["item_id", "question", "is_gold", "n_judgments", "majority", "n_2", "n_3", "n_4", "n_5", "n_6"],
         ["i1", "gen", "0", "2", "", "0", "0", "0", "1", "1"],
         ["i1", "ref", "0", "2", "2", "2", "0", "0", "0", "0"],
         ["i2", "gen", "0", "2", "5", "0", "0", "0", "2", "0"],
         ["i2", "ref", "0", "2", "", "0", "1", "1", "0", "0"]],
        # mean similarity per pair id over the four ratings: ref (2+2+3+4)/4, gen (5+6+5+5)/4
        {("n_judgments",): 8, ("mean_similarity",): {"gen": 5.25, "ref": 2.75}}),
    ASPECT_PAIRWISE: (
        {"aspects": [{"key": "fun", "question": "Which is more fun?"},
                     {"key": "end", "question": "Which ends better?"}]},
        aspect_items(),
        {("i1", "ann1"): {"fun": "plot-a", "end": "plot-b"}, ("i1", "ann2"): {"fun": "plot-a", "end": "plot-a"},
         ("i2", "ann1"): {"fun": "plot-b", "end": "plot-b"}, ("i2", "ann2"): {"fun": "plot-b", "end": "plot-b"}},
        [["item_id", "question", "is_gold", "n_judgments", "majority", "n_plot-a", "n_plot-b"],
         ["i1", "end", "0", "2", "", "1", "1"],
         ["i1", "fun", "0", "2", "plot-a", "2", "0"],
         ["i2", "end", "0", "2", "plot-b", "0", "2"],
         ["i2", "fun", "0", "2", "plot-b", "0", "2"]],
        # majority per aspect: fun i1 plot-a, i2 plot-b; end i1 none (1:1), i2 plot-b
        {("n_judgments",): 8, ("aspects", "fun", "majority_share"): {"plot-a": 0.5, "plot-b": 0.5},
         ("aspects", "end", "majority_share"): {"plot-b": 1.0}}),
}


def test_every_registered_kind_has_a_sample_a_template_and_a_report():
    assert set(SAMPLES) == set(KINDS)
    for kind in all_kinds():
        assert kind.template == f"annotate/_{kind.name}.html"
        assert kind.report_builder is BUILDERS[kind.name]
        assert get_kind(kind.name) is kind
    assert [name for name, _ in Study._meta.get_field("kind").choices] == list(KINDS)


def batch(slug, kind):
    extra, items, *_ = SAMPLES[kind]
    head = {"study": {"slug": slug, "kind": kind, "title": f"Contract {kind}", "annotations_per_item": 2,
                      "gold_rate": 0.0, **extra}}
    return ("\n".join(json.dumps(o) for o in [head, *items]) + "\n").encode()


def expected_display(kind, item, shown):
    """What the annotator must see, built from the batch item and the order served."""
    by_id = {c["id"]: c for c in item.get("candidates", [])}
    if kind == PAIRWISE_ALIGNMENT:
        return {"input": item["input"], "reference": item["reference"],
                "candidates": [{"id": cid, "text": by_id[cid]["text"]} for cid in shown["candidates"]]}
    if kind == EXPLANATION_CHOICE:
        return {"candidates": [{"id": cid, "explanation": {
            "aspects_reference": item["explanations"][cid]["aspects_reference"],
            "aspects_generated": item["explanations"][cid]["aspects_generated"],
            "matches": item["explanations"][cid]["matches"]}} for cid in shown["candidates"]]}
    if kind == SIMILARITY_SURVEY:
        texts = {p["id"]: p["texts"] for p in item["pairs"]}
        return {"pairs": [{"id": pid, "texts": [texts[pid][int(k)] for k in shown[pid]]}
                          for pid in shown["pair_order"]]}
    return {"premise": item["premise"], "candidates": [{"id": cid, "text": by_id[cid]["text"]}
                                                        for cid in shown["candidates"]]}


def annotate_all(kind, slug):
    """Both annotators take and answer every item through the API. Returns the served
    option order per (item, annotator, question)."""
    _, items, answers, *_ = SAMPLES[kind]
    by_item = {item["item_id"]: item for item in items}
    served = {}
    for name in ANNOTATORS:
        client = APIClient()
        client.force_authenticate(make_user(name))
        for _ in range(2):
            response = client.post(f"/api/studies/{slug}/assignments/next/")
            assert response.status_code == 200, response.content
            body = response.json()
            assignment = Assignment.objects.get(pk=body["assignment"])  # the researchers' record
            item_id, shown, tokens = assignment.item.item_id, assignment.shown_order, blinding(assignment.pk)
            assert body["item_id"] == tokens.item != item_id  # the annotator sees an opaque handle
            item = by_item[item_id]
            questions = {tokens.questions.get(q["id"], q["id"]): q for q in body["questions"]}
            for qid, q in questions.items():
                if "options" in q:
                    ties = ["tie"] if kind == PAIRWISE_ALIGNMENT else []
                    assert q["options"] == [tokens.option(o) for o in shown[qid]]
                    assert shown[qid] == shown["candidates"] + ties
                else:
                    assert q["scale"] == ([1, 5] if qid == "usefulness" else [1, 6])
            if kind == SIMILARITY_SURVEY:
                assert [q["id"] for q in body["questions"]] == [tokens.question(p) for p in shown["pair_order"]]
                assert sorted(shown["pair_order"]) == ["gen", "ref"]
            assert body["item"] == tokens.display(expected_display(kind, item, shown))
            mine = answers[(item_id, name)]
            assert set(questions) == set(mine)
            for qid in questions:
                served[(item_id, name, qid)] = "|".join(shown.get(qid, []))
            blinded = {tokens.question(q): tokens.option(v) if isinstance(v, str) else v for q, v in mine.items()}
            submitted = client.post(f"/api/assignments/{body['assignment']}/judgments/",
                                    {**blinded, "seconds": SECONDS[name]}, format="json")
            assert submitted.status_code == 201, submitted.content
            stored = {j.question: j.value for j in Judgment.objects.filter(assignment=assignment)}
            assert stored == {q: str(v) for q, v in mine.items()}  # the real ids
            returned = {j["question"]: j["value"] for j in submitted.json()["judgments"]}
            assert returned == {q: str(v) for q, v in blinded.items()}  # the annotator's tokens
        assert client.post(f"/api/studies/{slug}/assignments/next/").status_code == 204
    return served


def exported(slug):
    out = io.StringIO()
    call_command("export_judgments", slug, "--format", "csv", stdout=out)
    return list(csv.DictReader(io.StringIO(out.getvalue())))


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_kind_goes_the_whole_data_path(kind):
    _, items, answers, table, expected = SAMPLES[kind]
    slug = f"contract-{kind.replace('_', '-')}"
    assert import_batch_bytes(batch(slug, kind)).as_json() == {"study": slug, "created": 2, "skipped": 0}

    served = annotate_all(kind, slug)

    rows = exported(slug)
    expected_rows = []
    for item in ("i1", "i2"):
        for name in ANNOTATORS:
            for qid, value in answers[(item, name)].items():
                order = served.get((item, name, qid), "")
                expected_rows.append((slug, item, name, qid, str(value), order, str(SECONDS[name])))
    key = ("study", "item_id", "annotator", "question", "value", "shown_order", "seconds")
    assert sorted(tuple(r[k] for k in key) for r in rows) == sorted(expected_rows)
    if kind == SIMILARITY_SURVEY:  # the text order of each pair: a permutation of 0|1
        assert {r["shown_order"] for r in rows} <= {"0|1", "1|0"}
    if kind == EXPLANATION_CHOICE:  # a rating question has no option order
        assert {r["shown_order"] for r in rows if r["question"] == "usefulness"} == {""}
    assert [(r["item_id"], r["annotator"]) for r in rows] == sorted((r["item_id"], r["annotator"]) for r in rows)
    assert all(r["submitted_at"] for r in rows)

    copy = f"{slug}-copy"
    import_batch_bytes(batch(copy, kind))
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows([{**r, "study": copy} for r in rows])
    data = text.getvalue().encode()
    n = len(rows)
    assert import_judgments(io.BytesIO(data)) == {"studies": [copy], "created": n, "skipped": 0,
                                                  "annotators_created": 0}
    assert import_judgments(io.BytesIO(data)) == {"studies": [copy], "created": 0, "skipped": n,
                                                  "annotators_created": 0}
    assert Judgment.objects.filter(study__slug=copy).count() == n

    report, table_text = study_report(Study.objects.get(slug=copy), "csv")
    original, _ = study_report(Study.objects.get(slug=slug), "json")
    assert report == {**original, "study": copy}
    assert (report["kind"], report["n_items"], report["n_gold_items"], report["n_annotators"],
            report["complete_items"]) == (kind, 2, 0, 2, 2)
    for path, value in expected.items():
        got = report
        for key in path:
            got = got[key]
        assert got == value, path
    table_rows = list(csv.reader(io.StringIO(table_text)))
    blank = table_rows.index([])  # the per-item table, one empty line, the correlation table
    assert table_rows[:blank] == table
    assert table_rows[blank + 1] == CORRELATION_HEADER
    # one row per (metric, coefficient); every row names the report key it comes from
    assert {row[0] for row in table_rows[blank + 2:]} <= {"correlations", "correlations_system"}
    assert len(table_rows[blank + 2:]) % 3 == 0
