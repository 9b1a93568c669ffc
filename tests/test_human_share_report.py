"""Which items humans see, through to the report (issue 35), at a size where PPI gives a
figure (50 labeled items at least): a batch with an evaluator's scores on all 200 items and
`human_share: 0.3` or `allocation: "judge_uncertain"`; one annotator judges through the REST
API whatever the engine offers; the report (REST API) has `ppi.rougeL`, equal to the
estimate recomputed here from the stored rows (ppi_py 0.2.3 for PPI++, the inverse-probability
formula written out for active inference). The same chain with the embedded SmolLM2 writing
and judging the outputs (geval_prob) is tests/runtime/test_human_share_e2e.py (170 items,
51 labeled)."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from annotate.models import Assignment, Item, Judgment, Prediction, Study
from annotate.studies.human_items import slug_seed
from annotate.studies.importing import import_batch_bytes
from tests.factories import api_client, header, jsonl, make_user, pairwise, tokens

REFERENCE = Path(__file__).resolve().parents[1] / ".venv" / "reference"
assert (REFERENCE / "ppi_py").is_dir(), f"{REFERENCE} lacks ppi_py: run scripts/setup.sh"
sys.path.insert(0, str(REFERENCE))
import ppi_py  # noqa: E402

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
N = 200
Z975 = 1.959963984540054


def batch(slug, **keys):
    """200 items of m1 vs m2 with rougeL scores a_i (spread) and b_i = 0.5."""
    rng = np.random.default_rng(7)
    a = np.round(rng.uniform(0.1, 0.9, N), 3)
    lines = [pairwise(f"item-{i:03d}", metric_scores={"rougeL": {"m1": float(a[i]), "m2": 0.5}}) for i in range(N)]
    import_batch_bytes(jsonl(header(slug, "pairwise_alignment", annotations_per_item=1, gold_rate=0.0, **keys),
                             *lines))
    return Study.objects.get(slug=slug)


def human_answer(item):
    """The simulated annotator: m1 with probability 0.2 + 0.6 x its rougeL score, seeded by the item."""
    a = item.data["candidates"][0]
    score = Prediction.objects.get(item=item, evaluator="rougeL", question=a["id"]).value
    coin = np.random.default_rng(int(item.item_id.split("-")[1])).uniform()
    return "m1" if coin < 0.2 + 0.6 * float(score) else "m2"


def judge_everything_offered(slug):
    client = api_client(make_user("ann"))
    served = []
    while (response := client.post(f"/api/studies/{slug}/assignments/next/")).status_code == 200:
        pk = response.json()["assignment"]
        item = Assignment.objects.get(pk=pk).item
        served.append(item.item_id)
        assert client.post(f"/api/assignments/{pk}/judgments/", tokens(pk, {"choice": human_answer(item)}),
                           format="json").status_code == 201
    assert response.status_code == 204
    return sorted(served)


def report_entry(slug):
    report = api_client(make_user("res", role="researchers")).get(f"/api/studies/{slug}/report/").json()
    return report["ppi"]["rougeL"]["win_rate"]["m1 vs m2"]


def stored_units(study):
    """Independently of the report, from the rows: {item_id: human credit of m1},
    {item_id: rougeL's pick (1 m1 above, 0 below, 0.5 equal)}, {item_id: offer_probability}."""
    human = {i: 1.0 if v == "m1" else 0.0
             for i, v in Judgment.objects.filter(study=study).values_list("item__item_id", "value")}
    scores: dict[str, dict[str, float]] = {}
    for i, q, v in Prediction.objects.filter(study=study, evaluator="rougeL").values_list(
            "item__item_id", "question", "value"):
        scores.setdefault(i, {})[q] = float(v)
    pick = {i: 1.0 if s["m1"] > s["m2"] else 0.0 if s["m1"] < s["m2"] else 0.5 for i, s in scores.items()}
    pi = dict(Item.objects.filter(study=study).values_list("item_id", "offer_probability"))
    return human, pick, pi


def test_human_share_offers_60_of_200_and_the_report_has_ppi_over_them():
    study = batch("share-report", human_share=0.3)
    offered = sorted(Item.objects.filter(study=study, offered=True).values_list("item_id", flat=True))
    ids = sorted(Item.objects.filter(study=study).values_list("item_id", flat=True))
    assert offered == sorted(ids[i] for i in np.random.default_rng(slug_seed("share-report")).permutation(N)[:60])
    assert judge_everything_offered("share-report") == offered
    entry = report_entry("share-report")
    human, pick, pi = stored_units(study)
    assert set(pi.values()) == {0.3}
    labeled = sorted(human)
    unlabeled = sorted(set(pick) - set(human))
    assert (entry["n_labeled"], entry["n_unlabeled"]) == (60, 140) == (len(labeled), len(unlabeled))
    y = np.array([human[i] for i in labeled])
    f, g = np.array([pick[i] for i in labeled]), np.array([pick[i] for i in unlabeled])
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f, g))[0])
    lo, hi = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(y, f, g, alpha=0.05))
    assert entry["ppi"]["mean"] == pytest.approx(point, abs=1e-6)
    assert entry["ppi"]["ci95"] == pytest.approx([lo, hi], abs=1e-6)
    assert all(math.isfinite(v) for v in entry["ppi"]["ci95"]) and "reason" not in entry
    assert entry["classical"]["mean"] == pytest.approx(float(y.mean()), abs=1e-12)


def test_judge_uncertain_offers_by_rougel_margin_and_the_report_weights_by_it():
    study = batch("active-report", allocation="judge_uncertain", uncertainty_evaluator="rougeL", human_budget=0.3)
    human_before, pick, pi = stored_units(study)
    assert not human_before and sum(pi.values()) == pytest.approx(0.3 * N)
    # Items whose rougeL margin is small are offered with a higher probability.
    scores = {i: float(v) for i, v in Prediction.objects.filter(study=study, evaluator="rougeL", question="m1")
              .values_list("item__item_id", "value")}
    margin = {i: abs(scores[i] - 0.5) for i in pi}
    ordered = sorted(pi, key=lambda i: margin[i])
    assert pi[ordered[0]] > pi[ordered[-1]]
    served = judge_everything_offered("active-report")
    assert served == sorted(Item.objects.filter(study=study, offered=True).values_list("item_id", flat=True))
    entry = report_entry("active-report")
    human, pick, pi = stored_units(study)
    ids = sorted(pi)
    xi = np.array([i in human for i in ids])
    p = np.array([pi[i] for i in ids])
    f = np.array([pick[i] for i in ids])
    y = np.array([human.get(i, 0.0) for i in ids])
    # Zrnic & Candes's estimator, written out: A = xi y / pi, B = f (xi / pi - 1), lambda =
    # cov(A, B) / var(B) clipped to [0, 1], z = A - lambda B, mean(z) -+ 1.96 sd(z) / sqrt(N).
    a_, b_ = xi * y / p, f * (xi / p - 1)
    lam = min(1.0, max(0.0, float(np.mean((a_ - a_.mean()) * (b_ - b_.mean())) / np.var(b_))))
    z = a_ - lam * b_
    se = float(np.std(z)) / math.sqrt(N)
    assert entry["n_labeled"] == len(served) >= 50
    assert entry["ppi"]["mean"] == pytest.approx(float(z.mean()), abs=1e-9)
    assert entry["ppi"]["ci95"] == pytest.approx([z.mean() - Z975 * se, z.mean() + Z975 * se], abs=1e-9)
    assert entry["lambda"] == pytest.approx(lam, abs=1e-9)
