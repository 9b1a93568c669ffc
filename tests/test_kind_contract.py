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

from annotate.kinds import KINDS, all_kinds, get_kind
from annotate.models import Assignment, Judgment, Study
from annotate.reports.data import study_report
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_io import import_judgments, import_predictions
from evaluation.report.build import BUILDERS
from evaluation.report.kinds import (
    ASPECT_PAIRWISE,
    BEST_WORST,
    EXPLANATION_CHOICE,
    PAIRWISE_ALIGNMENT,
    RANKING,
    SIMILARITY_SURVEY,
)
from evaluation.report.ppi.part import CSV_HEADER as PPI_HEADER
from evaluation.report.table import CORRELATION_HEADER, SYSTEMS_HEADER
from tests.factories import blinding, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
ANNOTATORS = ("ann1", "ann2")
SECONDS = {"ann1": 7.5, "ann2": 12}


def two_candidate_display(item, shown):
    """pairwise_alignment / aspect_pairwise: the item's texts and its candidates in the order served."""
    by_id = {c["id"]: c for c in item["candidates"]}
    texts = {k: item[k] for k in ("input", "reference", "premise") if k in item}
    return {**texts, "candidates": [{"id": cid, "text": by_id[cid]["text"]} for cid in shown["candidates"]]}


def explanation_display(item, shown):
    return {"candidates": [{"id": cid, "explanation": {
        "aspects_reference": item["explanations"][cid]["aspects_reference"],
        "aspects_generated": item["explanations"][cid]["aspects_generated"],
        "matches": item["explanations"][cid]["matches"]}} for cid in shown["candidates"]]}


def similarity_display(item, shown):
    texts = {p["id"]: p["texts"] for p in item["pairs"]}
    return {"pairs": [{"id": pid, "texts": [texts[pid][int(k)] for k in shown[pid]]} for pid in shown["pair_order"]]}


def similarity_answers(values):
    return dict(zip(("ref", "p1", "p2", "p3"), values))


def scalar_display(item, shown):
    return {"input": item["input"], "text": item["candidate"]["text"]}


SCALAR = "scalar_rating"
SCALAR_PREDICTIONS = ("study,item_id,evaluator,annotator,question,value\n"
                      "{study},ex-0,perse,ann1,score,6\n{study},ex-0,perse,ann2,score,5\n"
                      "{study},ex-1,perse,ann1,score,8\n{study},ex-1,perse,ann2,score,\n")


# kind -> the sample: `header` (besides the kind's example header), `answers` {(item_id,
# annotator): {question: value}} for the kind's two example items (ex-0, ex-1), `display`
# (what the annotator must see, from the batch item and the order served), the expected
# per-item CSV `table` (header + rows) and report values, all worked out by hand.
SAMPLES = {
    PAIRWISE_ALIGNMENT: dict(  # with ties: the recorded option order ends in `tie`
        header={"allow_tie": True}, display=two_candidate_display,
        answers={("ex-0", "ann1"): {"choice": "m1"}, ("ex-0", "ann2"): {"choice": "m1"},
                 ("ex-1", "ann1"): {"choice": "m1"}, ("ex-1", "ann2"): {"choice": "tie"}},
        table=[["item_id", "question", "is_gold", "n_judgments", "majority", "n_m1", "n_tie", "pick_rougeL"],
               ["ex-0", "choice", "0", "2", "m1", "2", "0", "m1"],
               ["ex-1", "choice", "0", "2", "", "1", "1", "m2"]],
        report={("n_judgments",): 4, ("majority",): {"ex-0": "m1", "ex-1": None}, ("no_majority",): 1,
                ("alignment", "rougeL", "n"): 1, ("alignment", "rougeL", "agree"): 1}),
    EXPLANATION_CHOICE: dict(
        header={}, display=explanation_display,
        answers={("ex-0", "ann1"): {"choice": "m1", "usefulness": 4},
                 ("ex-0", "ann2"): {"choice": "m1", "usefulness": 5},
                 ("ex-1", "ann1"): {"choice": "m1", "usefulness": 4},
                 ("ex-1", "ann2"): {"choice": "m2", "usefulness": 5}},
        table=[["item_id", "question", "is_gold", "n_judgments", "majority", "n_4", "n_5", "n_m1", "n_m2",
                "pick_expert", "pick_rougeL"],
               ["ex-0", "choice", "0", "2", "m1", "0", "0", "2", "0", "m1", "m1"],
               ["ex-0", "usefulness", "0", "2", "", "1", "1", "0", "0", "", ""],
               ["ex-1", "choice", "0", "2", "", "0", "0", "1", "1", "m2", "m2"],
               ["ex-1", "usefulness", "0", "2", "", "1", "1", "0", "0", "", ""]],
        # the higher ExPerT score: m1 on ex-0, m2 on ex-1; 3 of the 4 choices match it
        report={("n_judgments",): 8, ("majority",): {"ex-0": "m1", "ex-1": None}, ("no_majority",): 1,
                ("usefulness", "n"): 4, ("usefulness", "mean"): 4.5, ("choice_matches_expert",): 0.75}),
    SIMILARITY_SURVEY: dict(
        header={}, display=similarity_display,
        answers={("ex-0", "ann1"): similarity_answers([2, 5, 3, 1]),
                 ("ex-0", "ann2"): similarity_answers([2, 6, 3, 2]),
                 ("ex-1", "ann1"): similarity_answers([3, 5, 4, 1]),
                 ("ex-1", "ann2"): similarity_answers([4, 5, 4, 1])},
        table=[["item_id", "question", "is_gold", "n_judgments", "majority", "n_1", "n_2", "n_3", "n_4", "n_5", "n_6"],
               ["ex-0", "p1", "0", "2", "", "0", "0", "0", "0", "1", "1"],
               ["ex-0", "p2", "0", "2", "3", "0", "0", "2", "0", "0", "0"],
               ["ex-0", "p3", "0", "2", "", "1", "1", "0", "0", "0", "0"],
               ["ex-0", "ref", "0", "2", "2", "0", "2", "0", "0", "0", "0"],
               ["ex-1", "p1", "0", "2", "5", "0", "0", "0", "0", "2", "0"],
               ["ex-1", "p2", "0", "2", "4", "0", "0", "0", "2", "0", "0"],
               ["ex-1", "p3", "0", "2", "1", "2", "0", "0", "0", "0", "0"],
               ["ex-1", "ref", "0", "2", "", "0", "0", "1", "1", "0", "0"]],
        # mean similarity per pair id over its four ratings, e.g. ref (2+2+3+4)/4
        report={("n_judgments",): 16, ("mean_similarity",): {"p1": 5.25, "p2": 3.5, "p3": 1.25, "ref": 2.75}}),
    ASPECT_PAIRWISE: dict(
        header={}, display=two_candidate_display,
        answers={("ex-0", "ann1"): {"fun": "plotA", "end": "plotB"},
                 ("ex-0", "ann2"): {"fun": "plotA", "end": "plotA"},
                 ("ex-1", "ann1"): {"fun": "plotB", "end": "plotB"},
                 ("ex-1", "ann2"): {"fun": "plotB", "end": "plotB"}},
        table=[["item_id", "question", "is_gold", "n_judgments", "majority", "n_plotA", "n_plotB"],
               ["ex-0", "end", "0", "2", "", "1", "1"],
               ["ex-0", "fun", "0", "2", "plotA", "2", "0"],
               ["ex-1", "end", "0", "2", "plotB", "0", "2"],
               ["ex-1", "fun", "0", "2", "plotB", "0", "2"]],
        # majority per aspect: fun ex-0 plotA, ex-1 plotB; end ex-0 none (1:1), ex-1 plotB
        report={("n_judgments",): 8, ("aspects", "fun", "majority_share"): {"plotA": 0.5, "plotB": 0.5},
                ("aspects", "end", "majority_share"): {"plotB": 1.0}}),
    RANKING: dict(  # full orders, best first; ex-1 split: Kendall's W 0.5 (hand-worked below)
        header={}, display=two_candidate_display,
        answers={("ex-0", "ann1"): {"rank": "m1>m2>m3>m4"}, ("ex-0", "ann2"): {"rank": "m1>m2>m3>m4"},
                 ("ex-1", "ann1"): {"rank": "m1>m3>m2>m4"}, ("ex-1", "ann2"): {"rank": "m2>m1>m4>m3"}},
        # no n_<order> columns (whole orders); W of ex-1: rank sums m1 3, m2 4, m3 6, m4 7 about 5,
        # S = 10, W = 12 * 10 / (2^2 * (4^3 - 4)) = 0.5
        table=[["item_id", "question", "is_gold", "n_judgments", "majority", "kendall_w"],
               ["ex-0", "rank", "0", "2", "m1>m2>m3>m4", "1.0"],
               ["ex-1", "rank", "0", "2", "", "0.5"]],
        # m1 above m2 in 3 of 4 rankings; W mean (1 + 0.5) / 2 over 2 items; m1 ranked first
        report={("n_judgments",): 4, ("pairwise_wins", "m1", "m2"): 3.0, ("pairwise_n", "m1", "m2"): 4,
                ("kendall_w", "value"): 0.75, ("kendall_w", "n"): 2, ("ranking", "m1", "rank"): 1,
                ("ranking_detail", "n_rankings"): 4, ("value_counts", "rank"): {"m1": 3, "m2": 1}}),
    BEST_WORST: dict(  # four outputs, all shown (tuple_size 4); best != worst on every screen
        header={}, display=two_candidate_display,
        answers={("ex-0", "ann1"): {"best": "m1", "worst": "m4"}, ("ex-0", "ann2"): {"best": "m1", "worst": "m3"},
                 ("ex-1", "ann1"): {"best": "m2", "worst": "m1"}, ("ex-1", "ann2"): {"best": "m3", "worst": "m1"}},
        table=[["item_id", "question", "is_gold", "n_judgments", "majority", "n_m1", "n_m2", "n_m3", "n_m4"],
               ["ex-0", "best", "0", "2", "m1", "2", "0", "0", "0"],
               ["ex-0", "worst", "0", "2", "", "0", "0", "1", "1"],
               ["ex-1", "best", "0", "2", "", "0", "1", "1", "0"],
               ["ex-1", "worst", "0", "2", "m1", "2", "0", "0", "0"]],
        # each system shown on all 4 screens: m1 best 2 worst 2 -> 0; m2 best 1 -> 1/4; m3 best 1 worst 1 -> 0;
        # m4 worst 1 -> -1/4. Majority best: ex-0 m1 (2 votes), ex-1 none (m2 : m3).
        report={("n_judgments",): 8, ("n_screens",): 4, ("majority",): {"ex-0": "m1", "ex-1": None},
                ("bws", "m1", "bws_score"): 0.0, ("bws", "m2", "bws_score"): 0.25, ("bws", "m3", "bws_score"): 0.0,
                ("bws", "m4", "bws_score"): -0.25, ("bws", "m1", "n_shown"): 4, ("bws", "m1", "n_best"): 2,
                ("bws", "m1", "n_worst"): 2, ("bws", "m4", "n_worst"): 1,
                # implied pairs, 5 a screen (best > 3 others, 2 middle > worst): m1 wins 3+3+0+0 of 3+3+3+3,
                # m2 1+1+3+1 of 2+2+3+2, m3 1+0+1+3 of 2+3+2+3, m4 0+1+1+1 of 3+2+2+2
                ("systems", "m1", "human", "win_rate"): 0.5, ("systems", "m2", "human", "wins"): 6,
                ("systems", "m2", "human", "n"): 9, ("systems", "m3", "human", "n"): 10,
                ("systems", "m4", "human", "wins"): 3, ("ranking", "m2", "rank"): 1, ("ranking", "m4", "rank"): 4,
                # rougeL means m1 .25, m2 .35, m3 .25, m4 .15 order the systems as the bws scores do (ties alike)
                ("correlations_system", "rougeL", "kendall", "r"): 1.0, ("split_half", "n"): 2}),
    SCALAR: dict(  # the review is the item's comment; an evaluator's per-annotator predictions come in a CSV
        header={}, display=scalar_display,
        answers={("ex-0", "ann1"): {"score": 7}, ("ex-0", "ann2"): {"score": 4},
                 ("ex-1", "ann1"): {"score": 9}, ("ex-1", "ann2"): {"score": 4}},
        comments={("ex-0", "ann1"): "Warm and odd, I'd watch it.", ("ex-0", "ann2"): "Too slow for me.",
                  ("ex-1", "ann1"): "Loved the letters.", ("ex-1", "ann2"): ""},
        predictions=[SCALAR_PREDICTIONS],
        table=[["item_id", "question", "is_gold", "n_judgments", "majority", "n_4", "n_7", "n_9", "mean_score",
                "metric_rougeL"],
               ["ex-0", "score", "0", "2", "", "1", "1", "0", "5.5", "0.2"],
               ["ex-1", "score", "0", "2", "", "1", "0", "1", "6.5", "0.3"]],
        # scores 7, 4 (ex-0) and 9, 4 (ex-1): mean 6, sample variance (1 + 4 + 9 + 4) / 3 = 6; per item
        # 4.5 and 12.5. perse covers three pairs (the fourth is unparsed): (6, 7), (5, 4), (8, 9), in the
        # same order on both sides. rougeL: x = (.2, .2, .3, .3), y = (7, 4, 9, 4): one concordant
        # and one discordant pair across x, ties n1 = 2 (x), n2 = 1 (y): tau-b = 1 / sqrt(4 * 5). Pairs of
        # one item are not independent: 3 pairs in 2 items get no p-value (statistics.md, "Clustered data").
        report={("n_judgments",): 4, ("scores", "mean"): 6.0, ("scores", "n"): 4, ("scores", "ci95"): None,
                ("scores", "ci_reason"): "fewer than 5 clusters (2)", ("reviewer_variance", "value"): 8.5,
                ("reviewer_variance", "n_items"): 2, ("evaluators", "perse", "n_pairs"): 3,
                ("evaluators", "perse", "n_unparsed"): 1, ("evaluators", "perse", "spearman", "r"): 1.0,
                ("evaluators", "perse", "kendall", "r"): 1.0, ("evaluators", "perse", "kendall", "p"): None,
                ("evaluators", "perse", "kendall", "p_reason"):
                    "clustered units: intervals and p-values need n >= 20 and >= 5 items",
                ("evaluators", "rougeL", "kendall", "r"): 1 / 20 ** 0.5,
                ("evaluators", "reviewer_avg", "n_pairs"): 4, ("evaluators", "item_avg", "n_items"): 2,
                ("correlations", "rougeL", "n"): 4, ("agreement", "score", "level"): "interval"}),
}


def test_every_registered_kind_has_a_sample_a_template_and_a_report():
    assert set(SAMPLES) == set(KINDS)
    for kind in all_kinds():
        assert kind.template == f"annotate/_{kind.name}.html"
        assert kind.report_builder is BUILDERS[kind.name]
        assert get_kind(kind.name) is kind
    assert [name for name, _ in Study._meta.get_field("kind").choices] == list(KINDS)


def header(kind):
    """The kind's example header keys and the sample's own."""
    return {**get_kind(kind).example_header(), **SAMPLES[kind]["header"]}


def batch(slug, kind):
    head = {"study": {"slug": slug, "kind": kind, "title": f"Contract {kind}", "annotations_per_item": 2,
                      "gold_rate": 0.0, **header(kind)}}
    return ("\n".join(json.dumps(o) for o in [head, *get_kind(kind).example_items()]) + "\n").encode()


def annotate_all(kind, slug):
    """Both annotators take and answer every item through the API. Returns the served
    option order per (item, annotator, question)."""
    sample, kind_obj = SAMPLES[kind], get_kind(kind)
    by_item = {item["item_id"]: item for item in kind_obj.example_items()}
    config = {**header(kind), "allow_tie": bool(header(kind).get("allow_tie"))}
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
            asked = {q["id"]: q for q in kind_obj.questions(config, item)}
            questions = {tokens.questions.get(q["id"], q["id"]): q for q in body["questions"]}
            assert set(questions) == set(asked)
            for qid, q in questions.items():
                if "options" in q:
                    ties = ["tie"] if config["allow_tie"] else []
                    assert q["options"] == [tokens.option(o) for o in shown[qid]]
                    assert shown[qid] == shown["candidates"] + ties
                else:
                    assert q["scale"] == asked[qid]["scale"]
            if kind == SIMILARITY_SURVEY:
                assert [q["id"] for q in body["questions"]] == [tokens.question(p) for p in shown["pair_order"]]
                assert sorted(shown["pair_order"]) == ["p1", "p2", "p3", "ref"]
            assert body["item"] == tokens.display(kind_obj, sample["display"](item, shown))
            mine = sample["answers"][(item_id, name)]
            assert set(questions) == set(mine)
            for qid in questions:
                served[(item_id, name, qid)] = "|".join(shown.get(qid, []))
            blinded = {tokens.question(q): tokens.answer(v) if isinstance(v, str) else v for q, v in mine.items()}
            extra = {"comment": sample["comments"][(item_id, name)]} if "comments" in sample else {}
            submitted = client.post(f"/api/assignments/{body['assignment']}/judgments/",
                                    {**blinded, "seconds": SECONDS[name], **extra}, format="json")
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
    sample = SAMPLES[kind]
    answers, items = sample["answers"], [item["item_id"] for item in get_kind(kind).example_items()]
    slug = f"contract-{kind.replace('_', '-')}"
    assert import_batch_bytes(batch(slug, kind)).as_json() == {"study": slug, "created": 2, "skipped": 0}

    served = annotate_all(kind, slug)

    rows = exported(slug)
    expected_rows = []
    for item in items:
        for name in ANNOTATORS:
            for qid, value in answers[(item, name)].items():
                order = served.get((item, name, qid), "")
                expected_rows.append((slug, item, name, qid, str(value), order, str(SECONDS[name])))
    key = ("study", "item_id", "annotator", "question", "value", "shown_order", "seconds")
    assert sorted(tuple(r[k] for k in key) for r in rows) == sorted(expected_rows)
    if "comments" in sample:  # the review is stored with every judgment of the item
        assert {(r["item_id"], r["annotator"]): r["comment"] for r in rows} == sample["comments"]
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
    for prediction in sample.get("predictions", []):  # an evaluator's outputs, as import_predictions takes them
        for study in (slug, copy):
            import_predictions(io.BytesIO(prediction.format(study=study).encode()))

    report, table_text = study_report(Study.objects.get(slug=copy), "csv")
    original, _ = study_report(Study.objects.get(slug=slug), "json")
    assert report == {**original, "study": copy}
    assert (report["kind"], report["n_items"], report["n_gold_items"], report["n_annotators"],
            report["complete_items"]) == (kind, 2, 0, 2, 2)
    for path, value in sample["report"].items():
        got = report
        for key in path:
            got = got[key]
        assert got == value, path
    table_rows = list(csv.reader(io.StringIO(table_text)))
    blank = table_rows.index([])  # the per-item table, one empty line, the correlation table
    assert table_rows[:blank] == sample["table"]
    assert table_rows[blank + 1] == CORRELATION_HEADER
    # one row per (metric, coefficient); every row names the report key it comes from; the
    # pairwise kinds' per-system table follows after one more empty line (issue 22)
    rest = table_rows[blank + 2:]
    correlation_rows = rest[:rest.index([])] if [] in rest else rest
    assert {row[0] for row in correlation_rows} <= {"correlations", "correlations_system"}
    assert len(correlation_rows) % 3 == 0
    blocks = [rest[len(correlation_rows) + 1:]] if [] in rest else []
    while blocks and [] in blocks[-1]:  # one empty line before each further table
        blocks[-1:] = [blocks[-1][:blocks[-1].index([])], blocks[-1][blocks[-1].index([]) + 1:]]
    tables = {block[0][0]: block for block in blocks}
    if "systems_table" in tables:
        assert tables["systems_table"][0] == SYSTEMS_HEADER
        assert {row[0] for row in tables["systems_table"][1:]} == {"systems"}
    if "ppi_table" in tables:  # the prediction-powered table (issue 35), after the per-system one
        assert list(tables) == (["systems_table"] if "systems_table" in tables else []) + ["ppi_table"]
        assert tables["ppi_table"][0] == PPI_HEADER
        assert {row[0] for row in tables["ppi_table"][1:]} == {"ppi"}
