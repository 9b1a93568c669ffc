"""Prediction-powered estimates (evaluation/prediction_powered/ppi.py, active_inference.py, human_subset.py)
against ppi_py 0.2.3 (PPI++, `lam=None`), scipy's t interval and hand-worked examples."""
import json
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from evaluation.prediction_powered.active_inference import active_mean, bernoulli_uncertainty, sampling_probabilities
from evaluation.prediction_powered.human_subset import active_draw, human_subset, subset_size
from evaluation.prediction_powered.ppi import CONSTANT, MIN_LABELED, NOT_RANDOM, ppi_mean

# ppi_py lives apart from site-packages (requirements-reference.txt says why; scripts/setup.sh
# installs it): a missing folder fails here, loudly, rather than skipping.
REFERENCE = Path(__file__).resolve().parents[2] / ".venv" / "reference"
assert (REFERENCE / "ppi_py").is_dir(), f"{REFERENCE} lacks ppi_py: run scripts/setup.sh"
sys.path.insert(0, str(REFERENCE))
import ppi_py  # noqa: E402
from ppi_py.ppi import _calc_lam_glm  # noqa: E402

Z = stats.norm.ppf(0.975)


def study(seed, n_items=300, n_labeled=60, binary=False, bias=0.1):
    """Items 0..n-1, a human value each, a biased noisy prediction each; the first
    n_labeled items (after a seeded shuffle) are labeled."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0, 1, n_items)
    y = (rng.uniform(0, 1, n_items) < truth).astype(float) if binary else truth + rng.normal(0, 0.2, n_items)
    f = np.clip(truth + bias + rng.normal(0, 0.15, n_items), 0, 1.2)
    order = rng.permutation(n_items)
    return y, f, order[:n_labeled], order[n_labeled:]


def reference(y, f, labeled, unlabeled):
    Y, Yhat, Yhat_u = y[labeled], f[labeled], f[unlabeled]
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(Y, Yhat, Yhat_u))[0])
    lo, hi = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(Y, Yhat, Yhat_u, alpha=0.05))
    return point, [lo, hi]


@pytest.mark.parametrize("seed,binary,n_labeled", [(0, False, 60), (1, True, 60), (2, True, 50), (3, False, 150)])
def test_ppi_equals_ppi_py_on_independent_units(seed, binary, n_labeled):
    y, f, labeled, unlabeled = study(seed, n_labeled=n_labeled, binary=binary)
    r = ppi_mean(labeled.tolist(), y[labeled].tolist(), list(range(len(f))), f.tolist())
    point, ci = reference(y, f, labeled, unlabeled)
    assert r.reason is None and (r.n_labeled, r.n_unlabeled) == (n_labeled, len(f) - n_labeled)
    assert r.estimate == pytest.approx(point, abs=1e-6)
    assert r.ci95 == pytest.approx(ci, abs=1e-6)
    # lambda: ppi_py's own tuning (its private _calc_lam_glm, fed as ppi_mean_ci feeds it)
    Y, Yhat, Yhat_u = y[labeled][:, None], f[labeled][:, None], f[unlabeled][:, None]
    theta1 = Yhat_u.mean() + (Y - Yhat).mean()
    lam = _calc_lam_glm(Y - theta1, Yhat - theta1, Yhat_u - theta1, np.eye(1), clip=True)
    assert 0 < r.lam < 1 and r.lam == pytest.approx(float(lam), abs=1e-9)
    # ess_ratio: squared ratio of ppi_py's classical CLT width to its PPI width
    lo, hi = (float(np.ravel(v)[0]) for v in ppi_py.classical_mean_ci(y[labeled], alpha=0.05))
    assert r.ess_ratio == pytest.approx(((hi - lo) / (ci[1] - ci[0])) ** 2, rel=1e-9)
    assert r.ess_ratio > 1


def test_classical_interval_is_the_reports_t_interval_over_items():
    y, f, labeled, _ = study(4)
    r = ppi_mean(labeled.tolist(), y[labeled].tolist(), list(range(len(f))), f.tolist())
    values = y[labeled]
    lo, hi = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
    assert r.classical == pytest.approx(values.mean(), abs=1e-12)
    assert r.classical_ci95 == pytest.approx([lo, hi], abs=1e-12)
    keys = r.report_entry()
    assert keys["classical"]["ci_method"] == "t interval over the human-labeled items"
    assert keys["classical"]["n_clusters"] == 60 and keys["ppi"]["n_clusters"] == 300
    assert set(keys) == {"unit", "n_labeled", "n_unlabeled", "classical", "ppi", "lambda", "ess_ratio"}
    json.dumps(keys)  # plain numbers only


def test_several_judgments_per_item_are_averaged_first():
    """Three human judgments and two predictions per item: the same as ppi_py on the item
    means (computed here with a plain dict), whatever order the rows come in."""
    rng = np.random.default_rng(5)
    n_items, labeled = 150, 50
    truth = rng.uniform(0, 1, n_items)
    h_items = np.repeat(np.arange(labeled), 3)
    h_values = truth[h_items] + rng.normal(0, 0.3, len(h_items))
    p_items = np.repeat(np.arange(n_items), 2)
    p_values = truth[p_items] + 0.05 + rng.normal(0, 0.1, len(p_items))
    sums: dict[int, list[float]] = {}
    for i, v in zip(h_items.tolist(), h_values.tolist()):
        sums.setdefault(i, []).append(v)
    y = np.array([sum(sums[i]) / len(sums[i]) for i in range(labeled)])
    f = np.array([(p_values[2 * i] + p_values[2 * i + 1]) / 2 for i in range(n_items)])
    point, ci = reference(np.concatenate([y, np.zeros(n_items - labeled)]), f, np.arange(labeled),
                          np.arange(labeled, n_items))
    shuffle_h, shuffle_p = rng.permutation(len(h_items)), rng.permutation(len(p_items))
    r = ppi_mean([f"i{i:03d}" for i in h_items[shuffle_h]], h_values[shuffle_h].tolist(),
                 [f"i{i:03d}" for i in p_items[shuffle_p]], p_values[shuffle_p].tolist())
    assert (r.n_labeled, r.n_unlabeled) == (labeled, n_items - labeled)
    assert r.estimate == pytest.approx(point, abs=1e-6) and r.ci95 == pytest.approx(ci, abs=1e-6)
    assert r.classical == pytest.approx(y.mean(), abs=1e-12)


def test_missing_predictions_give_no_ppi_and_keep_the_classical_estimate():
    y, f, labeled, unlabeled = study(6)
    items = list(range(len(f)))
    f_rows = f.tolist()
    f_rows[int(labeled[0])] = None  # a labeled item's prediction failed to parse
    r = ppi_mean(labeled.tolist(), y[labeled].tolist(), items, f_rows)
    assert r.estimate is None and r.ci95 is None and r.lam is None and r.ess_ratio is None
    assert r.reason == f"1 item(s) have no prediction ({int(labeled[0])})"
    assert r.classical == pytest.approx(y[labeled].mean()) and r.classical_ci95 is not None
    # an unlabeled item the evaluator never scored: seen through `items`
    keep = [i for i in items if i != int(unlabeled[0])]
    r = ppi_mean(labeled.tolist(), y[labeled].tolist(), keep, f[keep].tolist(), items=items)
    assert r.reason == f"1 item(s) have no prediction ({int(unlabeled[0])})" and r.estimate is None


def test_constant_predictions_leave_lambda_undefined():
    """ppi_py's lambda is then a ratio of rounding errors (its variance of 300 copies of 0.7
    is about 1e-32, not 0): whatever it prints means nothing, so ours says why it is null."""
    y, f, labeled, unlabeled = study(7)
    const = np.full(len(f), 0.7)
    r = ppi_mean(labeled.tolist(), y[labeled].tolist(), list(range(len(f))), const.tolist())
    assert (r.estimate, r.lam, r.reason) == (None, None, CONSTANT)
    assert r.classical_ci95 is not None


def test_too_few_labeled_items_no_unlabeled_item_and_a_chosen_subset():
    y, f, labeled, _ = study(8, n_labeled=MIN_LABELED)
    items = list(range(len(f)))
    assert ppi_mean(labeled.tolist(), y[labeled].tolist(), items, f.tolist()).reason is None
    few = labeled[:MIN_LABELED - 1]
    r = ppi_mean(few.tolist(), y[few].tolist(), items, f.tolist())
    assert r.reason == f"fewer than {MIN_LABELED} labeled items ({MIN_LABELED - 1})" and r.estimate is None
    r = ppi_mean(items, y.tolist(), items, f.tolist())
    assert r.reason == "no unlabeled item: every item has human judgments, PPI adds nothing"
    r = ppi_mean(labeled.tolist(), y[labeled].tolist(), items, f.tolist(), random_subset=False)
    assert (r.reason, r.estimate, r.ci95) == (NOT_RANDOM, None, None)
    r = ppi_mean([], [], items, f.tolist())
    assert r.classical is None and r.classical_reason == "no values" and r.estimate is None


def test_subset_size_and_seeded_subset():
    assert [subset_size(10, s) for s in (0.1, 0.3, 0.25, 1.0)] == [1, 3, 3, 10]
    for bad in (0, -0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="human_share must be in"):
            subset_size(10, bad)
    items = [f"item-{k}" for k in range(50)]
    chosen = human_subset(items[::-1], 0.2, seed=42)
    expected = sorted(items)  # an independent replay of the documented draw
    picks = sorted(np.random.default_rng(42).permutation(50)[:10].tolist())
    assert chosen == [expected[i] for i in picks] and len(chosen) == 10
    assert human_subset(items, 0.2, seed=42) == chosen
    assert human_subset(items, 0.2, seed=43) != chosen
    assert human_subset(items, 1.0, seed=0) == sorted(items)
    assert human_subset([], 0.5, seed=0) == []


def test_active_draw_is_seeded_bernoulli():
    pi = [0.1, 0.9, 0.5, 0.5, 1.0]
    u = np.random.default_rng(3).random(5)
    assert active_draw(pi, seed=3).tolist() == (u < np.array(pi)).tolist()
    with pytest.raises(ValueError):
        active_draw([0.5, 1.2], seed=0)


def test_sampling_probabilities_hand_worked():
    # u = [0, 1, 2, 10], budget 2, floor 0.1: item 0 sits at the floor, item 3 at 1, and
    # 0.1 + c + 2c + 1 = 2 gives c = 0.3 (c * 1 = 0.3 >= 0.1, c * 10 = 3 >= 1: consistent)
    assert sampling_probabilities([0, 1, 2, 10], budget=2, floor=0.1) == pytest.approx([0.1, 0.3, 0.6, 1.0], abs=1e-12)
    # no floor or cap binding: pi proportional to u
    assert sampling_probabilities([1, 2, 3, 4], budget=1.0, floor=0.05) == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert sampling_probabilities([0, 0, 0, 0], budget=1.0, floor=0.1).tolist() == [0.25] * 4
    rng = np.random.default_rng(0)
    u = bernoulli_uncertainty(rng.uniform(0, 1, 1000))
    pi = sampling_probabilities(u, budget=150, floor=0.05)
    assert pi.sum() == pytest.approx(150, abs=1e-9) and pi.min() >= 0.05 and pi.max() <= 1
    assert np.all(np.diff(pi[np.argsort(u)]) >= -1e-15)  # rises with the uncertainty
    for kwargs in ({"budget": 5, "floor": 0.1}, {"budget": 0.1, "floor": 0.1}, {"budget": 1, "floor": 0}):
        with pytest.raises(ValueError):
            sampling_probabilities([1, 2, 3, 4], **kwargs)


ACTIVE = {"items": ["a", "b", "c", "d", "e"], "pi": [0.5, 0.5, 1.0, 0.25, 0.5],
          "f": [0.9, 0.1, 0.6, 0.4, 0.5], "labeled": {"a": [1.0], "c": [1.0, 1.0], "d": [0.0]}}


def active_rows():
    h_items = [i for i, v in ACTIVE["labeled"].items() for _ in v]
    h_values = [x for v in ACTIVE["labeled"].values() for x in v]
    return ACTIVE["items"], ACTIVE["pi"], ACTIVE["items"], ACTIVE["f"], h_items, h_values


def test_active_estimate_hand_worked():
    """A_i = xi y / pi = [2, 0, 1, 0, 0]; B_i = f (xi / pi - 1) = [0.9, -0.1, 0, 1.2, -0.5];
    means 0.6 and 0.3; cov(A, B) = 9/50, var(B) = 103/250 (divisor 5): lambda = 45/103;
    estimate = 0.6 - lambda 0.3 = 48.3/103; var(z) = var(A) - cov^2 / var(B) = 0.64 - 0.0324 / 0.412."""
    lam = Fraction(45, 103)
    estimate = Fraction(6, 10) - lam * Fraction(3, 10)
    var_z = Fraction(64, 100) - Fraction(9, 50) ** 2 / Fraction(103, 250)
    se = math.sqrt(var_z / 5)
    r = active_mean(*active_rows(), min_labeled=1)
    assert (r.n_labeled, r.n_items, r.expected_labels) == (3, 5, 2.75)
    assert r.lam == pytest.approx(float(lam), abs=1e-12) and r.estimate == pytest.approx(float(estimate), abs=1e-12)
    assert r.se == pytest.approx(se, abs=1e-12)
    assert r.ci95 == pytest.approx([float(estimate) - Z * se, float(estimate) + Z * se], abs=1e-12)
    # lambda = 1 (the plain active estimator): z = A - B = [1.1, 0.1, 1, -1.2, 0.5], mean 0.3
    r = active_mean(*active_rows(), lam=1.0, min_labeled=1)
    z = np.array([1.1, 0.1, 1.0, -1.2, 0.5])
    assert r.estimate == pytest.approx(0.3, abs=1e-12) and r.se == pytest.approx(z.std() / math.sqrt(5), abs=1e-12)


def test_active_refusals():
    items, pi, p_items, f, h_items, h_values = active_rows()
    assert active_mean(items, pi, p_items, f, h_items, h_values).reason == f"fewer than {MIN_LABELED} labeled items (3)"
    r = active_mean(items, [0.5, 0.5, 1.0, 0.25, 0.0], p_items, f, h_items, h_values, min_labeled=1)
    assert r.estimate is None and r.reason.startswith("every sampling probability must be in (0, 1]")
    r = active_mean(items, pi, p_items[:4], f[:4], h_items, h_values, min_labeled=1)
    assert r.reason == "1 item(s) have no prediction"
    r = active_mean(items, pi, p_items, f, h_items + ["z"], h_values + [1.0], min_labeled=1)
    assert r.reason == "1 judged item(s) are not among the sampled items (z, ...)"
    r = active_mean(items + ["a"], pi + [0.5], p_items, f, h_items, h_values, min_labeled=1)
    assert r.reason == "items must be listed once each, with one probability each"


def load_ppi_bench():
    """bench/ppi_bench.py as a module (bench/ holds scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("humeval_ppi_bench", REFERENCE.parents[1] / "bench" / "ppi_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ppi_covers_where_a_biased_judge_alone_does_not():
    """The bench's win study, smaller (seeded): PPI++ keeps 95% coverage, the judge's own mean
    (bias +0.1) never covers, and the judge narrows the interval."""
    bench = load_ppi_bench()
    row = bench.coverage_row("win", bench.WIN_MEAN, 400, 500, 0.2, 7, bench.win_study)
    assert row["n"] == 400 and row["nulls"] == 0
    assert 0.92 <= row["cov_ppi"] <= 0.98 and 0.92 <= row["cov_classical"] <= 0.98
    assert row["cov_judge"] == 0.0
    assert row["ess"] > 1.3 and row["w_ppi"] < row["w_classical"]


def test_active_sampling_narrows_the_interval_at_the_same_budget():
    bench = load_ppi_bench()
    rows = bench.active_row(300, 1000, 100, seed=11)
    (cov_active, w_active), (cov_uniform, w_uniform) = rows["active"], rows["uniform"]
    assert 0.92 <= cov_active <= 0.98 and 0.92 <= cov_uniform <= 0.98
    assert w_uniform / w_active > 1.15
