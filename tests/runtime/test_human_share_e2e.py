"""`human_share` end to end (issue 35): a study plan whose header offers humans 30% of the
items; the embedded SmolLM2 writes both systems' outputs and judges every item (geval_prob,
G-Eval's probability-weighted 1-5 score, with ROUGE-L beside it); annotators judge the offered
items through the REST API, never seeing another; the report then carries the evaluators'
`ppi` entries over the human subset, a finite PPI figure that ppi_py recomputes from the rows.

Also: a plan with a bad `human_share` is refused before anything runs."""
import hashlib
import json
import math
import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from annotate.models import Assignment, Item, Judgment, Prediction, Study
from annotate.studies.human_items import slug_seed
from models_runtime.models import Job
from models_runtime.plans import PlanInvalid, validate_plan
from tests.factories import api_client, make_user, tokens

REFERENCE = Path(__file__).resolve().parents[2] / ".venv" / "reference"
assert (REFERENCE / "ppi_py").is_dir(), f"{REFERENCE} lacks ppi_py: run scripts/setup.sh"
sys.path.insert(0, str(REFERENCE))
import ppi_py  # noqa: E402

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]

ASK = "Generate a title for the following abstract of a paper: "
TOPICS = ["graphs", "images", "speech", "proteins", "markets", "robots", "weather", "music", "poems", "cities"]
# 30% of 170 is 51 human items, just over the 50 PPI needs (ppi.MIN_LABELED); SmolLM2 on two
# shared CPU cores writes 340 six-token outputs and scores them (one forward pass each).
N_QUESTIONS = 170
JUDGE = "geval_prob"
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
            "metrics": ["rougeL"], "judges": [JUDGE], "judge_model": "smollm2", "device": "cpu"}


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
    bad["study"]["uncertainty_evaluator"] = JUDGE
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
@pytest.mark.postgres("SmolLM2 writes and judges 340 outputs (~3 min); run once, in the PostgreSQL lane; "
                      "human_share on SQLite: tests/test_human_items.py")
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
    # SmolLM2 scored every candidate (geval_prob always gives a score in [1, 5]), and
    # ROUGE-L beside it.
    scores = Prediction.objects.filter(study=study, evaluator=JUDGE).values_list("value", flat=True)
    assert len(scores) == 2 * n and all(1.0 <= float(v) <= 5.0 for v in scores)
    assert Prediction.objects.filter(study=study, evaluator="rougeL").exclude(value="").count() == 2 * n
    # Two annotators take turns through the REST API: together exactly the offered items, then 204.
    clients = [api_client(make_user(name)) for name in ("ann", "bob")]
    served, done, turn = [], set(), 0
    while len(done) < len(clients):
        client = clients[turn % len(clients)]
        turn += 1
        if (response := client.post(f"/api/studies/{SLUG}/assignments/next/")).status_code != 200:
            assert response.status_code == 204
            done.add(id(client))
            continue
        pk = response.json()["assignment"]
        item = Assignment.objects.get(pk=pk).item
        served.append(item.item_id)
        assert client.post(f"/api/assignments/{pk}/judgments/", tokens(pk, {"choice": human_choice(item)}),
                           format="json").status_code == 201
    assert sorted(served) == chosen
    assert Judgment.objects.filter(study=study).count() == k
    assert set(Judgment.objects.filter(study=study).values_list("annotator__username", flat=True)) == {"ann", "bob"}
    researcher = make_user("res", role="researchers")
    report = api_client(researcher).get(f"/api/studies/{SLUG}/report/").json()
    assert report["complete_items"] == k
    check_ppi(report, study, n, k, JUDGE)
    check_ppi(report, study, n, k, "rougeL")


def stored_units(study, evaluator):
    """From the rows, independently of the report: {item_id: human credit of bm25-k1},
    {item_id: the evaluator's pick (1 bm25-k1 scored above no-profile, 0 below, 0.5 equal)}."""
    human = {item_id: 1.0 if value == "bm25-k1" else 0.0
             for item_id, value in Judgment.objects.filter(study=study).values_list("item__item_id", "value")}
    scores: dict[str, dict[str, float]] = {}
    for item_id, system, value in Prediction.objects.filter(study=study, evaluator=evaluator).values_list(
            "item__item_id", "question", "value"):
        scores.setdefault(item_id, {})[system] = float(value)
    pick = {i: 1.0 if s["bm25-k1"] > s["no-profile"] else 0.0 if s["bm25-k1"] < s["no-profile"] else 0.5
            for i, s in scores.items()}
    return human, pick


def check_ppi(report, study, n, k, evaluator):
    """The report's `ppi.<evaluator>` win-rate entry (statistics.md, "Prediction-powered
    estimates in the report"): k labeled items, n - k unlabeled, a finite PPI++ interval equal
    to ppi_py's over the stored rows, and the classical mean of the humans' credit."""
    human, pick = stored_units(study, evaluator)
    assert len(human) == k and len(pick) == n
    [(pair, entry)] = report["ppi"][evaluator]["win_rate"].items()
    assert pair == "bm25-k1 vs no-profile"
    assert (entry["n_labeled"], entry["n_unlabeled"]) == (k, n - k)
    labeled, unlabeled = sorted(human), sorted(set(pick) - set(human))
    y = np.array([human[i] for i in labeled])
    f, g = np.array([pick[i] for i in labeled]), np.array([pick[i] for i in unlabeled])
    assert entry["classical"]["mean"] == pytest.approx(float(y.mean()), abs=1e-12)
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f, g))[0])
    lo, hi = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(y, f, g, alpha=0.05))
    assert entry["ppi"]["mean"] == pytest.approx(point, abs=1e-6)
    assert entry["ppi"]["ci95"] == pytest.approx([lo, hi], abs=1e-6)
    assert all(math.isfinite(v) for v in entry["ppi"]["ci95"]) and "reason" not in entry
    print(f"\n{evaluator}: n_labeled {k}, n_unlabeled {n - k}, PPI {entry['ppi']}, classical {entry['classical']}, "
          f"lambda {entry.get('lambda')}, ess_ratio {entry.get('ess_ratio')}")
