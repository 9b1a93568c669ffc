"""The `ppi` key of the report kinds built from in-memory inputs (report/ppi/part.py,
ppi/quantities.py): a pairwise study of three systems (each judgment one shown pair), the
aspect study's per-aspect preference and the similarity survey's mean per pair id, each
equal to ppi_py 0.2.3 (lam tuned) on per-item units computed here; every item judged or no
draw recorded gives its reason; the CSV has the rows and the HTML the interval plot."""
import csv
import io
import sys
from pathlib import Path

import numpy as np
import pytest

from evaluation.report import build_report, render
from evaluation.report.inputs import ReportInput
from evaluation.report.kinds import ASPECT_PAIRWISE, PAIRWISE_ALIGNMENT, SIMILARITY_SURVEY

REFERENCE = Path(__file__).resolve().parents[2] / ".venv" / "reference"
assert (REFERENCE / "ppi_py").is_dir(), f"{REFERENCE} lacks ppi_py: run scripts/setup.sh"
sys.path.insert(0, str(REFERENCE))
import ppi_py  # noqa: E402

N = 120


def reference(y, f, g):
    y, f, g = (np.asarray(v, dtype=float) for v in (y, f, g))
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f, g))[0])
    lo, hi = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(y, f, g, alpha=0.05))
    return point, [lo, hi]


def drawn_items(seed, k=70):
    return set(np.random.default_rng(seed).permutation(N)[:k].tolist())


def three_systems(seed=0, probability=0.6):
    """Items showing systems a, b, c; on a drawn item three annotators each judged one pair;
    rougeL scores every candidate."""
    rng = np.random.default_rng(seed)
    drawn = drawn_items(seed)
    strength = {"a": 0.4, "b": 0.0, "c": -0.3}
    j_item, j_ann, j_val, j_shown = [], [], [], []
    s_item, s_cand, s_val = [], [], []
    for i in range(N):
        noise = {s: rng.normal(0, 0.5) for s in "abc"}
        for s in "abc":
            s_item.append(i)
            s_cand.append(s)
            s_val.append(strength[s] + noise[s] + rng.normal(0, 0.5))
        if i in drawn:
            for who, (x, y) in zip(("u1", "u2", "u3"), (("a", "b"), ("a", "c"), ("b", "c"))):
                p = 1 / (1 + np.exp(-(strength[x] + noise[x] - strength[y] - noise[y])))
                j_item.append(i)
                j_ann.append(who)
                j_val.append(x if rng.uniform() < p else y)
                j_shown.append(f"{y}|{x}" if i % 2 else f"{x}|{y}")
    inp = ReportInput(slug="three", kind=PAIRWISE_ALIGNMENT, config={}, item_ids=[f"i{k:03d}" for k in range(N)],
                      is_gold=np.zeros(N, bool), gold=None, candidates=[["a", "b", "c"]] * N,
                      j_item=j_item, j_annotator=j_ann, j_question=["choice"] * len(j_item), j_value=j_val,
                      j_shown=j_shown, s_item=s_item, s_metric=["rougeL"] * len(s_item), s_candidate=s_cand,
                      s_value=s_val, item_offered=[i in drawn for i in range(N)],
                      item_offer_probability=None if probability is None else [probability] * N)
    return inp, drawn, (j_item, j_val, j_shown), (s_item, s_cand, s_val)


def test_three_systems_every_pair_equals_ppi_py():
    inp, drawn, (j_item, j_val, j_shown), (s_item, s_cand, s_val) = three_systems()
    report = build_report(inp)
    score = {(i, c): v for i, c, v in zip(s_item, s_cand, s_val)}
    for x, y in (("a", "b"), ("a", "c"), ("b", "c")):
        credit = {}
        for i, value, shown in zip(j_item, j_val, j_shown):
            if set(shown.split("|")) == {x, y}:
                credit.setdefault(i, []).append(1.0 if value == x else 0.0)
        labeled, unlabeled = sorted(credit), [i for i in range(N) if i not in credit]
        pick = {i: float(score[(i, x)] > score[(i, y)]) for i in range(N)}
        entry = report["ppi"]["rougeL"]["win_rate"][f"{x} vs {y}"]
        point, ci = reference([np.mean(credit[i]) for i in labeled], [pick[i] for i in labeled],
                              [pick[i] for i in unlabeled])
        assert (entry["n_labeled"], entry["n_unlabeled"]) == (70, 50)
        assert entry["ppi"]["mean"] == pytest.approx(point, abs=1e-6)
        assert entry["ppi"]["ci95"] == pytest.approx(ci, abs=1e-6)
        assert entry["unit"] == "item"  # one judgment of each pair per item
    # the CSV: one row per (evaluator, quantity, target) with the n's
    rows = ppi_rows(render(report, inp, "csv"))
    assert [(r["evaluator"], r["target"]) for r in rows] == [("rougeL", "a vs b"), ("rougeL", "a vs c"),
                                                             ("rougeL", "b vs c")]
    assert rows[0]["n_labeled"] == "70" and rows[0]["n_unlabeled"] == "50"
    assert float(rows[0]["ppi_mean"]) == pytest.approx(report["ppi"]["rougeL"]["win_rate"]["a vs b"]["ppi"]["mean"])
    # the HTML: the interval plot, human only beside human + judge
    html = render(report, inp, "html")
    assert 'id="ppi"' in html and "human only" in html and "human + rougeL" in html and "<svg" in html


def ppi_rows(text):
    """The CSV's prediction-powered table (from its `ppi_table` header row to the end)."""
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("ppi_table,"))
    return list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))


def test_without_a_draw_and_with_every_item_judged():
    inp, *_ = three_systems(seed=1, probability=None)
    entry = build_report(inp)["ppi"]["rougeL"]["win_rate"]["a vs b"]
    assert entry["reason"].startswith("the human items were not drawn at random (no offer_probability recorded "
                                      "for 120 of the 120 items)")
    assert entry["ppi"]["mean"] is None and entry["classical"]["ci95"] is not None


def test_aspect_preference_and_similarity_mean():
    rng = np.random.default_rng(3)
    drawn = drawn_items(3, 80)
    quality = rng.normal(0, 1, N)
    j_item, j_ann, j_val = [], [], []
    for i in sorted(drawn):
        for who in ("u1", "u2"):
            j_item.append(i)
            j_ann.append(who)
            j_val.append("x" if rng.uniform() < 1 / (1 + np.exp(-quality[i])) else "y")
    judge = ["x" if q + rng.normal(0, 0.7) > 0 else "y" for q in quality]
    inp = ReportInput(slug="aspects", kind=ASPECT_PAIRWISE, config={"aspects": [{"key": "plot"}]},
                      item_ids=[f"i{k:03d}" for k in range(N)], is_gold=np.zeros(N, bool), gold=None,
                      candidates=[["x", "y"]] * N, j_item=j_item, j_annotator=j_ann,
                      j_question=["plot"] * len(j_item), j_value=j_val, j_shown=["x|y"] * len(j_item),
                      p_item=list(range(N)), p_evaluator=["perse"] * N, p_annotator=[""] * N,
                      p_question=["plot"] * N, p_value=judge, item_offered=[i in drawn for i in range(N)],
                      item_offer_probability=[80 / N] * N)
    entry = build_report(inp)["ppi"]["perse"]["preference:plot"]["x vs y"]
    credit = {}
    for i, v in zip(j_item, j_val):
        credit.setdefault(i, []).append(float(v == "x"))
    labeled, unlabeled = sorted(credit), [i for i in range(N) if i not in credit]
    f = [float(v == "x") for v in judge]
    point, ci = reference([np.mean(credit[i]) for i in labeled], [f[i] for i in labeled], [f[i] for i in unlabeled])
    assert entry["ppi"]["mean"] == pytest.approx(point, abs=1e-6)
    assert entry["ppi"]["ci95"] == pytest.approx(ci, abs=1e-6)
    assert entry["unit"] == "item (judgments averaged per item)"

    pairs = [{"id": "ref", "source": "reference", "texts": ["t1", "t2"]}]
    ratings = {i: [int(np.clip(round(3 + quality[i] + rng.normal(0, 1)), 1, 5)) for _ in range(2)] for i in drawn}
    rows = [(i, who, str(r)) for i in sorted(drawn) for who, r in zip(("u1", "u2"), ratings[i])]
    metric = [float(q + rng.normal(0, 0.5)) for q in quality]
    inp = ReportInput(slug="sim", kind=SIMILARITY_SURVEY, config={}, item_ids=[f"i{k:03d}" for k in range(N)],
                      is_gold=np.zeros(N, bool), gold=None,
                      item_data=[{"document": {"id": f"d{i}"}, "users": ["a", "b"], "pairs": pairs} for i in range(N)],
                      j_item=[r[0] for r in rows], j_annotator=[r[1] for r in rows], j_question=["ref"] * len(rows),
                      j_value=[r[2] for r in rows], p_item=list(range(N)), p_evaluator=["jsd"] * N,
                      p_annotator=[""] * N, p_question=["ref"] * N, p_value=[str(m) for m in metric],
                      item_offered=[i in drawn for i in range(N)], item_offer_probability=[80 / N] * N)
    entry = build_report(inp)["ppi"]["jsd"]["mean_similarity"]["ref"]
    labeled, unlabeled = sorted(drawn), [i for i in range(N) if i not in drawn]
    point, ci = reference([np.mean(ratings[i]) for i in labeled], [metric[i] for i in labeled],
                          [metric[i] for i in unlabeled])
    assert entry["ppi"]["mean"] == pytest.approx(point, abs=1e-6)
    assert entry["ppi"]["ci95"] == pytest.approx(ci, abs=1e-6)
    assert (entry["n_labeled"], entry["n_unlabeled"]) == (80, 40) and entry["ess_ratio"] > 1
