"""`human_share` end to end (issue 35): a study plan whose header offers humans 30% of the
items; the embedded SmolLM2 writes both systems' outputs and judges every item (GEMBA, with
ROUGE-L beside it); one annotator judges the offered items through the REST API, never
seeing another; the report then carries the evaluators' `ppi` entries over the human subset.

Also: a plan with a bad `human_share` is refused before anything runs."""
import hashlib
import json
import math
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from annotate.models import Assignment, Item, Judgment, Prediction, Study
from annotate.studies.human_items import slug_seed
from models_runtime.models import Job
from models_runtime.plans import PlanInvalid, validate_plan
from tests.factories import api_client, make_user, tokens

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]

ASK = "Generate a title for the following abstract of a paper: "
TOPICS = ["graphs", "images", "speech", "proteins", "markets", "robots", "weather", "music", "poems", "cities"]
# SmolLM2 on two shared CPU cores writes and judges about one output a second at best: ten
# questions keep the test to minutes. 30% of 10 is 3 labeled items, fewer than the 50 PPI needs
# (ppi.MIN_LABELED), so the PPI figure is null with its reason here; the figures themselves are
# checked at 200 items with scores imported as metric_scores (tests/test_human_share_report.py).
N_QUESTIONS = 10
SLUG = "share-e2e"


def questions():
    out, golds = [], []
    for n in range(N_QUESTIONS):
        topic, other = TOPICS[n % 10], TOPICS[(n * 3 + 1) % 10]
        out.append({"id": f"q{n}", "input": f"{ASK}we study {topic} with method {n} and compare it to {other}",
                    "profile": [{"id": f"p{n}", "title": f"Learning {other} {n % 7}",
                                 "abstract": f"a method for {other} number {n % 7}"}]})
        golds.append({"id": f"q{n}", "output": f"Studying {topic} with method {n}"})
    return out, {"task": "LaMP-5", "golds": golds}


def plan(**study):
    return {"study": {"slug": SLUG, "kind": "pairwise_alignment", "title": "Human share e2e",
                      "annotations_per_item": 1, "gold_rate": 0.0, "human_share": 0.3, **study},
            "input": {"format": "lamp", "task": "LaMP-5", "questions": "q.json", "outputs": "o.json"},
            "systems": [{"id": "bm25-k1", "model": "smollm2", "retriever": "bm25", "k": 1},
                        {"id": "no-profile", "model": "smollm2", "retriever": "none"}],
            "generation": {"max_tokens": 6, "temperature": 0.0, "stop": ["\n"], "postprocess": "first_line"},
            "metrics": ["rougeL"], "judges": ["gemba"], "judge_model": "smollm2", "device": "cpu"}


def write_plan(tmp_path, **study):
    qs, outs = questions()
    (tmp_path / "q.json").write_text(json.dumps(qs))
    (tmp_path / "o.json").write_text(json.dumps(outs))
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan(**study)))
    return path


def test_a_plan_with_bad_human_item_settings_is_refused_before_anything_runs(tmp_path):
    write_plan(tmp_path)
    with pytest.raises(PlanInvalid) as caught:
        validate_plan(plan(human_share=1.5), tmp_path, tmp_path / "work")
    assert any("'human_share' must be a number in (0, 1] (the share of items humans are offered), got 1.5" in e
               for e in caught.value.errors), caught.value.errors
    assert not Job.objects.exists() and not Study.objects.exists()
    bad = plan()
    del bad["study"]["human_share"]
    bad["study"].update(allocation="judge_uncertain", uncertainty_evaluator="geval", human_budget=0.3)
    with pytest.raises(PlanInvalid) as caught:
        validate_plan(bad, tmp_path, tmp_path / "work")
    assert caught.value.errors == ["study.uncertainty_evaluator: 'geval' is none of the plan's metrics and judges: "
                                   "its scores would never be stored, so no item would be offered to humans"]
    bad["study"]["uncertainty_evaluator"] = "gemba"
    assert validate_plan(bad, tmp_path, tmp_path / "work")["study_header"]["allocation"] == "judge_uncertain"


def human_choice(item):
    """The simulated annotator's pick: the candidate sharing more words with the user's own
    output (ties: a coin from the item id), so the human answer is related to ROUGE-L."""
    ref = set(item.data["reference"].lower().split())
    a, b = item.data["candidates"][:2]
    score = [len(ref & set(c["text"].lower().split())) for c in (a, b)]
    if score[0] != score[1]:
        return a["id"] if score[0] > score[1] else b["id"]
    return (a, b)[hashlib.sha256(item.item_id.encode()).digest()[0] % 2]["id"]


@pytest.mark.model
@pytest.mark.slow
def test_human_share_plan_judge_humans_report(settings, tmp_path):
    settings.HUMEVAL_GENERATION_CACHE = str(tmp_path / "generations.sqlite3")
    settings.HUMEVAL_PIPELINE_DIR = str(tmp_path / "work")
    settings.CELERY_BROKER_URL = ""
    out = StringIO()
    call_command("pipeline", str(write_plan(tmp_path)), stdout=out, stderr=StringIO())
    result = json.loads(out.getvalue())
    assert result["state"] == "done", result
    study = Study.objects.get(slug=SLUG)
    items = Item.objects.filter(study=study)
    n = items.count()
    assert n == result["result"]["steps"]["batch"]["n_items"] == N_QUESTIONS - result["result"]["steps"]["batch"][
        "n_left_out"]
    # The draw: exactly ceil(0.3 n) items offered, the seeded permutation of the sorted item ids.
    k = math.ceil(round(0.3 * n, 9))
    ids = sorted(items.values_list("item_id", flat=True))
    chosen = sorted(ids[i] for i in np.random.default_rng(slug_seed(SLUG)).permutation(n)[:k])
    assert sorted(items.filter(offered=True).values_list("item_id", flat=True)) == chosen
    assert set(items.values_list("offer_probability", flat=True)) == {k / n}
    # SmolLM2 judged every item: a GEMBA row per candidate (empty where its answer had no
    # score), and ROUGE-L beside it.
    assert Prediction.objects.filter(study=study, evaluator="gemba").count() == 2 * n
    assert Prediction.objects.filter(study=study, evaluator="rougeL").exclude(value="").count() == 2 * n
    # One annotator judges through the REST API: exactly the offered items, then 204.
    ann = make_user("ann")
    client = api_client(ann)
    served = []
    while (response := client.post(f"/api/studies/{SLUG}/assignments/next/")).status_code == 200:
        pk = response.json()["assignment"]
        item = Assignment.objects.get(pk=pk).item
        served.append(item.item_id)
        assert client.post(f"/api/assignments/{pk}/judgments/", tokens(pk, {"choice": human_choice(item)}),
                           format="json").status_code == 201
    assert response.status_code == 204
    assert sorted(served) == chosen
    assert Judgment.objects.filter(study=study).count() == k
    # The report: each evaluator's ppi entry counts the human subset as labeled.
    researcher = make_user("res", role="researchers")
    report = api_client(researcher).get(f"/api/studies/{SLUG}/report/").json()
    check_ppi(report, study, n, k)


def check_ppi(report, study, n, k):
    """The report's `ppi.<evaluator>` entries over the human subset (statistics.md,
    "Prediction-powered estimates in the report"): k labeled items, n - k unlabeled; with
    fewer than 50 labeled items the PPI figure is null with its reason, and the classical
    estimate is the mean of the humans' credit of bm25-k1, recomputed here from the rows."""
    assert report["complete_items"] == k
    credit = {item_id: 1.0 if value == "bm25-k1" else 0.0
              for item_id, value in Judgment.objects.filter(study=study).values_list("item__item_id", "value")}
    assert len(credit) == k
    [(pair, entry)] = report["ppi"]["rougeL"]["win_rate"].items()
    assert pair == "bm25-k1 vs no-profile"
    assert (entry["n_labeled"], entry["n_unlabeled"]) == (k, n - k)
    assert entry["ppi"]["mean"] is None and entry["ppi"]["ci95"] is None
    assert entry["reason"] == entry["ppi"]["reason"] == f"fewer than 50 labeled items ({k})"
    assert entry["classical"]["mean"] == pytest.approx(float(np.mean(list(credit.values()))), abs=1e-12)
    assert entry["estimator"] and entry["prediction"]
    # SmolLM2's GEMBA answers rarely hold a score (stored empty): its entry, where it has one,
    # counts the same human subset and gives no PPI figure either.
    for gemba in (report["ppi"].get("gemba") or {}).get("win_rate", {}).values():
        assert gemba["n_labeled"] == k and gemba["ppi"]["mean"] is None and gemba["reason"]
