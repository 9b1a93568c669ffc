"""Issue 31 item 1 (runtime side): a four-system LaMP-4 plan where systems give identical
outputs on every question. Before, each such question was dropped whole (here: 0 of 3
kept, the chain failed on an empty batch); now every question is kept with its distinct
outputs, an identical output is one candidate standing for each of its systems
(`also_systems`), and the batch step and the report count the identical pairs.

The fake server (tests/runtime/fake_llm.py) answers with the titles of the profile items
in the prompt, sorted, so two systems that retrieved the same items answer the same:
310 and 311 (two-item profiles): bm25-k2 and random-k2 both take the whole profile, bm25-k1
one item; 313 (one item): the three retrieving systems take it; 312 (empty profile) is
left out as before. The live-worker test runs the chain in `celery worker`."""
import json
import re
from io import StringIO

import pytest
from django.core.management import call_command

from annotate.models import Item, Prediction, Study
from annotate.reports.data import study_report
from models_runtime.models import Job
from models_runtime.plans import validate_plan
from tests.factories import add_judgments, complete_assignments

from .test_plans import ASK, OUTPUTS, QUESTIONS, plan
from .test_worker import BROKER, groups_back, run_in_worker  # noqa: F401 - fixture

SYSTEMS = [{"id": "no-profile", "model": "fake", "retriever": "none"},
           {"id": "bm25-k1", "model": "fake", "retriever": "bm25", "k": 1},
           {"id": "bm25-k2", "model": "fake", "retriever": "bm25", "k": 2},
           {"id": "random-k2", "model": "fake", "retriever": "random", "k": 2}]
ONE_ITEM = {"id": "313", "input": ASK + "the library extends its opening hours",
            "profile": [{"id": "3130", "title": "Library news", "text": "the library buys new books"}]}
GOLDS = {**OUTPUTS, "golds": [*OUTPUTS["golds"], {"id": "313", "output": "Library stays open longer"}]}
MERGED = {"questions": 3, "pairs": 5,
          "per_pair": {"bm25-k1|bm25-k2": 1, "bm25-k1|random-k2": 1, "bm25-k2|random-k2": 3}}


def titles_answer(prompt):
    titles = sorted(re.findall(r'"([^"]+)" is the title', prompt))
    return "Headline: " + (" and ".join(titles) if titles else "no profile")


def four_system_plan(tmp_path):
    (tmp_path / "dev_questions.json").write_text(json.dumps([*QUESTIONS, ONE_ITEM]))
    (tmp_path / "dev_outputs.json").write_text(json.dumps(GOLDS))
    return plan(systems=SYSTEMS)


def check_batch_and_items(result):
    batch = result["steps"]["batch"]
    assert (batch["n_items"], batch["item_ids"]) == (3, ["310", "311", "313"])
    assert batch["left_out"] == [{"id": "312", "why": "empty profile (system bm25-k1 retrieves)"}]
    assert batch["identical_outputs"] == MERGED
    items = {i.item_id: i.data["candidates"] for i in Item.objects.filter(study__slug="lamp4-pilot")}
    shown = {k: [(c["id"], c.get("also_systems")) for c in cands] for k, cands in items.items()}
    assert shown == {"310": [("no-profile", None), ("bm25-k1", None), ("bm25-k2", ["random-k2"])],
                     "311": [("no-profile", None), ("bm25-k1", None), ("bm25-k2", ["random-k2"])],
                     "313": [("no-profile", None), ("bm25-k1", ["bm25-k2", "random-k2"])]}
    assert items["313"][1]["text"] == "Library news"  # postprocess "title" keeps what follows "Headline:"
    # the score step scores each shown candidate once: 3 + 3 + 2 candidates x 2 metrics
    assert Prediction.objects.filter(study__slug="lamp4-pilot").count() == 16


@pytest.mark.django_db
def test_the_command_keeps_every_question_and_says_how_many_were_merged(fake_llm, tmp_path):
    fake_llm.answer = titles_answer
    (tmp_path / "plan.json").write_text(json.dumps(four_system_plan(tmp_path)))
    out, err = StringIO(), StringIO()
    call_command("pipeline", str(tmp_path / "plan.json"), stdout=out, stderr=err)
    report = json.loads(out.getvalue())
    assert report["state"] == "done", report
    check_batch_and_items(report["result"])
    assert err.getvalue().splitlines()[-1] == (
        "note: 3 questions kept with identical outputs shown once and credited to each system (5 system pairs: "
        "bm25-k1|bm25-k2 1, bm25-k1|random-k2 1, bm25-k2|random-k2 3); steps.batch.identical_outputs in the "
        "job's result")


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.postgres("the worker subprocess shares the test database; the SQLite one is in memory")
def test_a_live_worker_keeps_every_question_and_the_report_credits_each_system(
        fake_llm, groups_back, transactional_db, settings, tmp_path, monkeypatch):  # noqa: F811
    import redis

    redis.Redis.from_url(BROKER).ping()
    fake_llm.answer = titles_answer
    for name, value in (("HUMEVAL_MODELS", settings.HUMEVAL_MODELS_JSON),
                        ("HUMEVAL_GENERATION_CACHE", settings.HUMEVAL_GENERATION_CACHE),
                        ("HUMEVAL_PIPELINE_DIR", settings.HUMEVAL_PIPELINE_DIR)):
        monkeypatch.setenv(name, value)  # the worker's settings: the fake server, this test's folders
    params = validate_plan(four_system_plan(tmp_path), tmp_path, settings.HUMEVAL_PIPELINE_DIR)
    job = Job.objects.create(kind="pipeline", params=params)
    job = run_in_worker(job, tmp_path, "the chain to finish")
    check_batch_and_items(job.result)
    # Judgments: on each item, one per shown pair, always for the first system shown.
    study = Study.objects.get(slug="lamp4-pilot")
    pairs = {"310": [("no-profile", "bm25-k1"), ("bm25-k2", "no-profile"), ("bm25-k1", "bm25-k2")],
             "311": [("no-profile", "bm25-k1"), ("bm25-k2", "no-profile"), ("bm25-k1", "bm25-k2")],
             "313": [("bm25-k1", "no-profile"), ("no-profile", "bm25-k1"), ("bm25-k1", "no-profile")]}
    rows = [(i, f"u{n}", "choice", a, f"{a}|{b}", 4.0) for i, shown in pairs.items() for n, (a, b) in enumerate(shown)]
    add_judgments(study, rows)
    complete_assignments(study, rows)
    report = study_report(study)[0]
    systems = report["systems"]
    assert report["identical_outputs"]["per_pair"] == MERGED["per_pair"]
    assert {s: v["n_items"] for s, v in systems.items()} == dict.fromkeys([s["id"] for s in SYSTEMS], 3)
    # Credited comparisons: a judgment of a merged candidate counts once for each system it
    # stands for. 310 and 311 each: no-profile beat bm25-k1; bm25-k2 = random-k2 beat
    # no-profile; bm25-k1 beat bm25-k2 and so random-k2. 313 (bm25-k1 = bm25-k2 = random-k2
    # against no-profile): three judgments, won by the merged candidate twice, each x 3.
    #   random-k2, bm25-k2: 2 + 2 + 3 = 7 comparisons, 1 + 1 + 2 = 4 won
    #   bm25-k1: 3 + 3 + 3 = 9, 2 + 2 + 2 = 6;  no-profile: 3 + 3 + 9 = 15, 1 + 1 + 3 = 5
    human = {s: (v["human"]["n"], v["human"]["wins"]) for s, v in systems.items()}
    assert human == {"random-k2": (7, 4), "bm25-k2": (7, 4), "bm25-k1": (9, 6), "no-profile": (15, 5)}
    # Metric means: random-k2's scores are those of the candidate it shared, per item.
    score = {(p.item.item_id, p.question): float(p.value)
             for p in Prediction.objects.filter(study=study, evaluator="rouge1").select_related("item")}
    mine = [score[("310", "bm25-k2")], score[("311", "bm25-k2")], score[("313", "bm25-k1")]]
    assert systems["random-k2"]["metrics"]["rouge1"]["n"] == 3
    assert systems["random-k2"]["metrics"]["rouge1"]["mean"] == pytest.approx(sum(mine) / 3)
