"""The report's prediction-powered estimates (`ppi.<evaluator>`; statistics.md,
"Prediction-powered estimates"; report/ppi/part.py) on PostgreSQL studies whose human items
are a recorded random subset (Item.offered / offer_probability set directly): the values
equal ppi_py 0.2.3 (`ppi_mean_pointestimate` / `ppi_mean_ci`, lam tuned) computed here from
the same per-item units, the classical interval is the t interval over the labeled items'
means, and each case without a valid PPI figure gives its reason."""
import csv
import io
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from annotate.models import Item
from annotate.reports.data import fetch_report_input, study_report
from evaluation.report import build_report
from evaluation.report.kinds import PAIRWISE_ALIGNMENT, SCALAR_RATING
from evaluation.report.systems import mean_ci
from tests.factories import make_judged_study, pairwise

REFERENCE = Path(__file__).resolve().parents[1] / ".venv" / "reference"
assert (REFERENCE / "ppi_py").is_dir(), f"{REFERENCE} lacks ppi_py: run scripts/setup.sh"
sys.path.insert(0, str(REFERENCE))
import ppi_py  # noqa: E402

pytestmark = pytest.mark.django_db
N_ITEMS, N_OFFERED = 100, 60
Z = stats.norm.ppf(0.975)


def reference(y, f, g):
    """ppi_py's PPI++ point estimate and 95% interval (lam tuned) of labeled y, f and unlabeled g."""
    y, f, g = (np.asarray(v, dtype=float) for v in (y, f, g))
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f, g))[0])
    lo, hi = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(y, f, g, alpha=0.05))
    return point, [lo, hi]


def t_ci(values):
    x = np.asarray(values, dtype=float)
    half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return [x.mean() - half, x.mean() + half]


def pairwise_study(slug="ppi-pairs", seed=0):
    """100 items of m1 vs m2 with a rougeL score each; humans (2 of 3 annotators) judged
    the 60 items offered; `gemba` chose on every item, `partial` on 90, `constant` always m1."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.1, 0.9, N_ITEMS)
    items, judgments, predictions = [], [], []
    offered = set(rng.permutation(N_ITEMS)[:N_OFFERED].tolist())
    for i in range(N_ITEMS):
        item_id = f"item-{i:03d}"
        a, b = round(float(truth[i] + rng.normal(0, 0.2)), 4), round(float(0.5 + rng.normal(0, 0.05)), 4)
        items.append((item_id, pairwise(item_id, metric_scores={"rougeL": {"m1": a, "m2": b}}), None))
        predictions.append((item_id, "gemba", "", "choice", "m1" if rng.uniform() < truth[i] else "m2"))
        if i < 90:
            predictions.append((item_id, "partial", "", "choice", "m2" if i % 3 else "m1"))
        predictions.append((item_id, "constant", "", "choice", "m1"))
        if i in offered:
            for who in ("ann1", "ann2", "ann3")[: 2 + (i % 4 == 0)]:
                u = rng.uniform()
                value = "tie" if u > 0.95 else ("m1" if u < truth[i] else "m2")
                judgments.append((item_id, who, "choice", value, "m1|m2" if i % 2 else "m2|m1", 5.0))
    study = make_judged_study(slug, PAIRWISE_ALIGNMENT, items, judgments, predictions)
    return study, offered


def record_draw(study, offered, probability):
    """Item.offered / offer_probability as the engine records a draw (probability: one
    number for every item, or {item position: probability}, or None: no draw)."""
    for item in Item.objects.filter(study=study):
        i = int(item.item_id.split("-")[1])
        item.offered = i in offered
        item.offer_probability = probability.get(i) if isinstance(probability, dict) else probability
        item.save(update_fields=["offered", "offer_probability"])


def units(study):
    """Per item (independently of the report): the human credit of m1 averaged over the
    item's judgments, the rougeL pick, gemba's choice."""
    from annotate.models import Judgment, Prediction

    credit = {}
    for item_id, value in Judgment.objects.filter(study=study).values_list("item__item_id", "value"):
        credit.setdefault(item_id, []).append({"m1": 1.0, "m2": 0.0, "tie": 0.5}[value])
    human = {k: float(np.mean(v)) for k, v in credit.items()}
    scores, gemba = {}, {}
    for item_id, evaluator, question, value in Prediction.objects.filter(study=study).values_list(
            "item__item_id", "evaluator", "question", "value"):
        if evaluator == "rougeL":
            scores.setdefault(item_id, {})[question] = float(value)
        elif evaluator == "gemba":
            gemba[item_id] = 1.0 if value == "m1" else 0.0
    pick = {k: 1.0 if s["m1"] > s["m2"] else 0.0 if s["m1"] < s["m2"] else 0.5 for k, s in scores.items()}
    return human, pick, gemba


def test_pairwise_ppi_equals_ppi_py_on_item_units():
    study, offered = pairwise_study()
    record_draw(study, offered, 0.6)
    report, _ = study_report(study)
    human, pick, gemba = units(study)
    labeled = sorted(human)
    unlabeled = sorted(k for k in pick if k not in human)
    assert len(labeled) == N_OFFERED and len(unlabeled) == N_ITEMS - N_OFFERED
    y = [human[k] for k in labeled]
    for evaluator, prediction in (("rougeL", pick), ("gemba", gemba)):
        entry = report["ppi"][evaluator]["win_rate"]["m1 vs m2"]
        point, ci = reference(y, [prediction[k] for k in labeled], [prediction[k] for k in unlabeled])
        assert entry["ppi"]["mean"] == pytest.approx(point, abs=1e-6)
        assert entry["ppi"]["ci95"] == pytest.approx(ci, abs=1e-6)
        assert (entry["n_labeled"], entry["n_unlabeled"]) == (60, 40)
        assert entry["unit"] == "item (judgments averaged per item)"
        assert entry["classical"]["mean"] == pytest.approx(np.mean(y), abs=1e-12)
        assert entry["classical"]["ci95"] == pytest.approx(t_ci(y), abs=1e-9)
        assert 0 <= entry["lambda"] <= 1 and "reason" not in entry
        classical_width = 2 * Z * np.std(y) / math.sqrt(len(y))  # ppi_py's classical_mean_ci width
        assert entry["ess_ratio"] == pytest.approx((classical_width / (ci[1] - ci[0])) ** 2, rel=1e-6)
    # the informative judge narrows the interval; the other evaluators give their reasons
    assert report["ppi"]["gemba"]["win_rate"]["m1 vs m2"]["ess_ratio"] > 1
    partial = report["ppi"]["partial"]["win_rate"]["m1 vs m2"]
    assert partial["ppi"]["mean"] is None and partial["reason"].startswith("10 item(s) have no prediction")
    assert partial["classical"]["ci95"] == pytest.approx(t_ci(y), abs=1e-9)
    constant = report["ppi"]["constant"]["win_rate"]["m1 vs m2"]
    assert constant["ppi"]["ci95"] is None and constant["reason"].startswith("the predictions are constant")
    # the CSV's ppi_table: one row per evaluator with its n's; the HTML's interval plots
    _, text = study_report(study, "csv")
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("ppi_table,"))
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    assert [(r["evaluator"], r["target"], r["n_labeled"], r["n_unlabeled"]) for r in rows] == [
        (e, "m1 vs m2", "60", "40") for e in ("constant", "gemba", "partial", "rougeL")]
    gemba_row = rows[1]
    assert float(gemba_row["ppi_mean"]) == report["ppi"]["gemba"]["win_rate"]["m1 vs m2"]["ppi"]["mean"]
    assert rows[0]["reason"].startswith("the predictions are constant") and rows[0]["ppi_mean"] == ""
    _, page = study_report(study, "html")
    assert page.count('<figure id="fig-ppi-') == 2  # gemba and rougeL have a PPI interval
    assert "m1 vs m2: human only" in page and "m1 vs m2: human + gemba" in page


def test_pairwise_ppi_null_cases():
    study, offered = pairwise_study("ppi-null", seed=1)
    # not drawn at random: no offer_probability recorded
    record_draw(study, offered, None)
    entry = build_report(fetch_report_input(study))["ppi"]["gemba"]["win_rate"]["m1 vs m2"]
    assert entry["ppi"]["mean"] is None and entry["ppi"]["ci95"] is None
    assert entry["reason"].startswith("the human items were not drawn at random (no offer_probability recorded for "
                                      "100 of the 100 items)")
    # a judged item that was not offered: the judged items are not the drawn ones
    judged = next(iter(sorted(offered)))
    record_draw(study, offered - {judged}, 0.6)
    entry = build_report(fetch_report_input(study))["ppi"]["gemba"]["win_rate"]["m1 vs m2"]
    assert entry["reason"].startswith("1 judged item(s) were not offered to humans")
    # every item judged by humans: no unlabeled item
    record_draw(study, set(range(N_ITEMS)), None)
    from annotate.models import Judgment
    labeled_ids = set(Judgment.objects.filter(study=study).values_list("item__item_id", flat=True))
    Item.objects.filter(study=study).exclude(item_id__in=labeled_ids).delete()
    # ... in a study that never drew its human items the report has no `ppi` key at all (an
    # ordinary study: nothing to fold in) ...
    assert "ppi" not in build_report(fetch_report_input(study))
    # ... and in one that did, the entry says why there is no PPI figure
    Item.objects.filter(study=study).update(offer_probability=1.0)
    entry = build_report(fetch_report_input(study))["ppi"]["gemba"]["win_rate"]["m1 vs m2"]
    assert entry["reason"] == "no unlabeled item: every item has human judgments, PPI adds nothing"
    assert entry["n_unlabeled"] == 0 and entry["classical"]["ci95"] is not None


def test_too_few_labeled_items():
    study, offered = pairwise_study("ppi-few", seed=2)
    few = set(sorted(offered)[:30])
    from annotate.models import Judgment
    Judgment.objects.filter(study=study).exclude(item__item_id__in=[f"item-{i:03d}" for i in few]).delete()
    record_draw(study, few, 0.3)
    entry = build_report(fetch_report_input(study))["ppi"]["gemba"]["win_rate"]["m1 vs m2"]
    assert entry["reason"] == "fewer than 50 labeled items (30)" and entry["n_labeled"] == 30
    assert entry["ppi"]["mean"] is None and entry["classical"]["ci95"] is not None


def test_unequal_probabilities_use_the_weighted_estimator():
    """Half the items drawn with 0.9, half with 0.3 (judge_uncertain): the active-inference
    estimate, computed here from its formula (inverse-probability weights, tuned lambda)."""
    rng = np.random.default_rng(5)
    pi = {i: 0.9 if i % 2 else 0.3 for i in range(N_ITEMS)}
    drawn = {i for i in range(N_ITEMS) if rng.uniform() < pi[i]}
    study, _ = pairwise_study("ppi-active", seed=3)
    from annotate.models import Judgment
    Judgment.objects.filter(study=study).delete()
    from tests.factories import add_judgments
    add_judgments(study, [(f"item-{i:03d}", who, "choice", "m1" if rng.uniform() < 0.6 else "m2", "m1|m2", 4.0)
                          for i in sorted(drawn) for who in ("ann1", "ann2")])
    record_draw(study, drawn, pi)
    entry = build_report(fetch_report_input(study))["ppi"]["gemba"]["win_rate"]["m1 vs m2"]
    human, _, gemba = units(study)
    ids = [f"item-{i:03d}" for i in range(N_ITEMS)]
    p = np.array([pi[i] for i in range(N_ITEMS)])
    xi = np.array([k in human for k in ids], dtype=float)
    y = np.array([human.get(k, 0.0) for k in ids])
    f = np.array([gemba[k] for k in ids])
    a, b = xi * y / p, f * (xi / p - 1)
    lam = min(1.0, max(0.0, np.mean((a - a.mean()) * (b - b.mean())) / np.var(b)))
    z = a - lam * b
    se = z.std() / math.sqrt(N_ITEMS)
    assert entry["estimator"].startswith("active inference")
    assert entry["lambda"] == pytest.approx(lam, abs=1e-9)
    assert entry["ppi"]["mean"] == pytest.approx(z.mean(), abs=1e-9)
    assert entry["ppi"]["ci95"] == pytest.approx([z.mean() - Z * se, z.mean() + Z * se], abs=1e-9)
    assert entry["n_labeled"] == len(drawn) and entry["n_unlabeled"] == N_ITEMS - len(drawn)
    assert entry["classical"]["note"].startswith("unweighted mean")


def test_scalar_mean_per_system():
    """scalar_rating: each system's mean human score (100 items each, 60 drawn), a judge's
    predicted score standing in as is."""
    rng = np.random.default_rng(7)
    items, judgments, predictions = [], [], []
    drawn = set(rng.permutation(range(0, 200, 2))[:60].tolist()) | set(rng.permutation(range(1, 200, 2))[:60].tolist())
    for i in range(200):
        system = "plot-a" if i % 2 == 0 else "plot-b"
        item_id = f"item-{i:03d}"
        quality = rng.uniform(2, 9)
        items.append((item_id, {"item_id": item_id, "input": f"premise {i}",
                                "candidate": {"id": system, "text": f"plot {i}"}}, None))
        predictions.append((item_id, "judge", "", "score", str(round(quality + rng.normal(0, 1), 2))))
        if i in drawn:
            for who in ("ann1", "ann2")[: 1 + (i % 3 == 0)]:
                judgments.append((item_id, who, "score", str(int(np.clip(round(quality + rng.normal(0, 1.5)), 1, 10))),
                                  "", 3.0))
    study = make_judged_study("ppi-scalar", SCALAR_RATING, items, judgments, predictions)
    record_draw(study, drawn, 0.6)
    report, _ = study_report(study)
    score = {}
    for item_id, _, _, value, _, _ in judgments:
        score.setdefault(int(item_id.split("-")[1]), []).append(float(value))
    judge = {int(p[0].split("-")[1]): float(p[4]) for p in predictions}
    for system, parity in (("plot-a", 0), ("plot-b", 1)):
        mine = [i for i in range(200) if i % 2 == parity]
        labeled = [i for i in mine if i in drawn]
        unlabeled = [i for i in mine if i not in drawn]
        y = [float(np.mean(score[i])) for i in labeled]
        entry = report["ppi"]["judge"]["mean_score"][system]
        point, ci = reference(y, [judge[i] for i in labeled], [judge[i] for i in unlabeled])
        assert (entry["n_labeled"], entry["n_unlabeled"]) == (60, 40)
        assert entry["ppi"]["mean"] == pytest.approx(point, abs=1e-6)
        assert entry["ppi"]["ci95"] == pytest.approx(ci, abs=1e-6)
        assert entry["classical"]["ci95"] == pytest.approx(t_ci(y), abs=1e-9)
        assert entry["classical"]["ci95"] == mean_ci(y)["ci95"]  # the report's interval of a mean over items
        assert entry["unit"] == "item (judgments averaged per item)" and entry["ess_ratio"] > 1
