"""Adaptive allocation (statistics.md, "Adaptive allocation"; issue 34 item 2): the Fisher
information and the expected variance reduction against hand-worked fractions and a
brute-force pseudo-inverse, the cold start, the probability floor, and the inverse-
probability-weighted win rates against an independent formula, a naive item bootstrap and
a seeded simulation with known truth."""
import math

import numpy as np
import pytest
from scipy.special import expit

from evaluation.allocation.adaptive import (
    constrained_covariance,
    expected_reductions,
    information_matrix,
    ipw_win_rates,
    next_pair_probabilities,
    pair_probabilities,
)
from evaluation.allocation.adaptive_simulation import simulate, true_win_rates
from evaluation.bootstrap import bootstrap_interval, resample_blocks
from evaluation.bradley_terry import Comparisons, human_rows, win_matrix

# 3 systems, strengths (log 2, 0, 0): p_01 = p_02 = 2/3 (p(1-p) = 2/9), p_12 = 1/2 (1/4);
# 9, 9 and 4 comparisons give pair weights 2, 2, 1:
# L = [[4, -2, -2], [-2, 3, -1], [-2, -1, 3]], eigenvalues 0, 4 (on (0, 1, -1)) and 6 (on
# (2, -1, -1)), so L^+ = (0,1,-1)(0,1,-1)^T / 8 + (2,-1,-1)(2,-1,-1)^T / 36, trace 5/12.
# Pair (1, 2): d = (0, 1, -1), L^+ d = d / 4, |L^+ d|^2 = 1/8, d^T L^+ d = 1/2:
#   reduction = (1/4)(1/8) / (1 + (1/4)(1/2)) = 1/36.
# Pair (0, 1): d = -(0,1,-1)/2 + (2,-1,-1)/2, L^+ d = (1/6, -5/24, 1/24), |.|^2 = 7/96,
#   d^T L^+ d = 3/8: reduction = (2/9)(7/96) / (1 + (2/9)(3/8)) = 7/468; (0, 2) the same.
HAND_THETA = np.array([math.log(2), 0.0, 0.0])
HAND_N = np.array([[0.0, 9, 9], [9, 0, 4], [9, 4, 0]])


def comparisons(rows, systems=("x", "y", "z"), items=None):
    """rows: (first, second, credit of first)."""
    first, second, credit = (np.array(col) for col in zip(*rows)) if rows else ([], [], [])
    item = np.arange(len(rows)) if items is None else np.asarray(items)
    return Comparisons(list(systems), item, np.asarray(first, np.int64), np.asarray(second, np.int64),
                       np.asarray(credit, float))


def brute_reductions(n, theta):
    """trace(pinv(L)) - trace(pinv(L + w d d^T)) per pair, by numpy's pseudo-inverse."""
    s = len(theta)
    lap = np.zeros((s, s))
    for a in range(s):
        for b in range(s):
            if a != b:
                p = expit(theta[a] - theta[b])
                lap[a, b] = -n[a, b] * p * (1 - p)
    lap[np.diag_indices(s)] = -lap.sum(axis=1)
    out = []
    for a in range(s):
        for b in range(a + 1, s):
            d = np.zeros(s)
            d[a], d[b] = 1, -1
            p = expit(theta[a] - theta[b])
            out.append(np.trace(np.linalg.pinv(lap)) - np.trace(np.linalg.pinv(lap + p * (1 - p) * np.outer(d, d))))
    return np.array(out), lap


def test_information_matrix_hand_worked():
    lap = information_matrix(HAND_N, HAND_THETA)
    np.testing.assert_allclose(lap, [[4, -2, -2], [-2, 3, -1], [-2, -1, 3]], atol=1e-12)
    cov = constrained_covariance(lap)
    v, u = np.array([0, 1, -1.0]), np.array([2, -1, -1.0])
    np.testing.assert_allclose(cov, np.outer(v, v) / 8 + np.outer(u, u) / 36, atol=1e-12)
    assert np.trace(cov) == pytest.approx(5 / 12, abs=1e-12)


def test_expected_reduction_hand_worked_and_brute_force():
    got = expected_reductions(HAND_N, HAND_THETA)
    np.testing.assert_allclose(got, [7 / 468, 7 / 468, 1 / 36], atol=1e-12)
    brute, _ = brute_reductions(HAND_N, HAND_THETA)
    np.testing.assert_allclose(got, brute, atol=1e-12)
    # 5 systems, uneven counts: the Sherman-Morrison form equals the brute force too
    rng = np.random.default_rng(3)
    n = np.triu(rng.integers(1, 30, (5, 5)), 1).astype(float)
    n += n.T
    theta = rng.normal(0, 1, 5)
    np.testing.assert_allclose(expected_reductions(n, theta), brute_reductions(n, theta)[0], atol=1e-12)


def test_active_probabilities_hand_worked_from_comparisons():
    # (x, y): x wins 5, y 2, one tie -> W 5.5 / 2.5; (x, z) the same; (y, z): 1 - 1 and a tie.
    # With one pseudo tie per pair, W + 0.5 = 6/3, 6/3, 2/2: the allocation strengths are
    # exactly (log 2, 0, 0) centred; counts n = 8, 8, 3.
    rows = ([(0, 1, 1.0)] * 5 + [(0, 1, 0.0)] * 2 + [(0, 1, 0.5)]
            + [(0, 2, 1.0)] * 5 + [(0, 2, 0.0)] * 2 + [(0, 2, 0.5)]
            + [(1, 2, 1.0), (1, 2, 0.0), (1, 2, 0.5)])
    c = comparisons(rows)
    pi, theta = pair_probabilities(win_matrix(c)[None], min_per_pair=3, uniform_share=0.2)
    np.testing.assert_allclose(theta[0], HAND_THETA - HAND_THETA.mean(), atol=1e-10)
    n = np.array([[0.0, 8, 8], [8, 0, 3], [8, 3, 0]])
    brute, _ = brute_reductions(n, HAND_THETA)
    best = int(np.argmax(brute))
    assert brute[best] > max(np.delete(brute, best)) + 1e-6  # one clear maximum: (y, z)
    assert best == 2
    expected = {("x", "y"): 0.2 / 3, ("x", "z"): 0.2 / 3, ("y", "z"): 0.8 + 0.2 / 3}
    got = next_pair_probabilities(c, min_per_pair=3, uniform_share=0.2)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-12)
    np.testing.assert_allclose(pi[0], list(expected.values()), atol=1e-12)


def test_cold_start_least_judged_pairs_uniformly_whatever_the_outcomes():
    empty = next_pair_probabilities(comparisons([]))
    assert all(v == pytest.approx(1 / 3, abs=1e-15) for v in empty.values())
    # (x, y) judged twice, (x, z) once, (y, z) once: the two least-judged share 0.8
    for credit in (1.0, 0.0, 0.5):
        got = next_pair_probabilities(comparisons([(0, 1, credit), (1, 0, credit), (0, 2, credit), (2, 1, credit)]))
        assert got == pytest.approx({("x", "y"): 0.2 / 3, ("x", "z"): 0.4 + 0.2 / 3, ("y", "z"): 0.4 + 0.2 / 3})
    # 4 systems, one pair left below min_per_pair = 2: it alone gets 1 - share + share / K
    rows = [(a, b, 1.0) for a in range(4) for b in range(a + 1, 4)] * 2
    rows = [r for r in rows if (r[0], r[1]) != (2, 3)] + [(3, 2, 1.0)]
    got = next_pair_probabilities(comparisons(rows, systems=("a", "b", "c", "d")), min_per_pair=2,
                                  uniform_share=0.3)
    assert got[("c", "d")] == pytest.approx(0.7 + 0.3 / 6)
    assert all(v == pytest.approx(0.05) for k, v in got.items() if k != ("c", "d"))


def test_probabilities_sum_to_one_and_respect_the_floor():
    theta = np.array([-1.5, -0.5, 0.0, 0.7, 1.5])
    sim = simulate(theta, budget=250, studies=20, seed=5, uniform_share=0.1)
    floor = 0.1 / 10
    assert sim.probability.min() >= floor - 1e-15
    assert sim.probability.max() <= 1 - 0.1 + floor + 1e-12
    # the rule's rows sum to 1 at every state the simulation went through (re-derived)
    for t in (0, 99, 100, 180, 249):
        w = np.zeros((20, 5, 5))
        for u in range(t):
            np.add.at(w, (np.arange(20), sim.first[u], sim.second[u]), sim.credit[u])
            np.add.at(w, (np.arange(20), sim.second[u], sim.first[u]), 1 - sim.credit[u])
        pi, _ = pair_probabilities(w, uniform_share=0.1)
        np.testing.assert_allclose(pi.sum(axis=1), 1.0, atol=1e-12)
        assert pi.min() >= floor - 1e-15
    # after the cold start (10 x 10 judgments at least) the allocation is no longer balanced
    pairs = sim.first * 5 + sim.second
    counts = np.array([np.bincount(pairs[:, k], minlength=25) for k in range(20)])
    assert (counts[:, [1, 2, 3, 4, 7, 8, 9, 13, 14, 19]].min(axis=1) >= 10).all()
    assert counts[:, 4].mean() < counts[:, 1].mean()  # the far pair (s0, s4) is asked less


def hajek(sim, k):
    """Independent form: sum over judgments showing k of credit_k / pi over sum of 1 / pi."""
    show_first, show_second = sim.first == k, sim.second == k
    weight = 1 / sim.probability
    num = (weight * (show_first * sim.credit + show_second * (1 - sim.credit))).sum(axis=0)
    return num / (weight * (show_first | show_second)).sum(axis=0)


def test_ipw_win_rates_unbiased_on_a_seeded_simulation():
    theta = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    studies = 400
    sim = simulate(theta, budget=300, studies=studies, seed=11)
    truth = true_win_rates(theta)
    est = np.array([hajek(sim, k) for k in range(5)])  # (S, studies)
    for j in range(3):  # the module gives the independent form's values
        rows = ipw_win_rates(sim.study(j), sim.probability[:, j], resamples=200)
        np.testing.assert_allclose([r["win_rate"] for r in rows], est[:, j], atol=1e-12)
    se = est.std(axis=1, ddof=1) / math.sqrt(studies)
    # unbiased within 4 Monte-Carlo standard errors (Hajek's O(1/n) bias is far below them)
    assert (np.abs(est.mean(axis=1) - truth) < 4 * se).all(), (est.mean(axis=1), truth, se)
    # the plain win rate is biased under this design, so the check has power
    plain = np.array([hajek(type(sim)(sim.systems, sim.first, sim.second, sim.credit,
                                      np.ones_like(sim.probability)), k) for k in range(5)])
    assert np.abs(plain.mean(axis=1) - truth).max() > 10 * se.max()


def test_ipw_equals_the_plain_win_rate_when_probabilities_are_equal():
    rng = np.random.default_rng(2)
    rows = [(int(a), int(b), float(rng.choice([0.0, 0.5, 1.0])))
            for a, b in rng.integers(0, 4, (60, 2)) if a != b]
    c = comparisons(rows, systems=("a", "b", "c", "d"))
    got = ipw_win_rates(c, np.full(len(c), 1 / 6))
    plain = human_rows(c)
    for g, p in zip(got, plain):
        assert g["win_rate"] == pytest.approx(p["win_rate"], abs=1e-12)
        assert g["n"] == p["n"] and g["n_clusters"] == p["n_clusters"]
        assert "inverse-probability weighted" in g["note"]


def test_ipw_interval_is_the_reports_item_bootstrap_done_naively():
    rng = np.random.default_rng(4)
    n_items = 30
    rows, items, probs = [], [], []
    for item in range(n_items):  # two judgments per item: the item is the cluster
        for _ in range(2):
            a, b = rng.choice(3, 2, replace=False)
            rows.append((int(a), int(b), float(rng.random() < 0.6)))
            items.append(item * 7 + 3)  # any item codes, sorted order = first-seen here
            probs.append(float(rng.choice([0.1, 0.3, 0.6])))
    c = comparisons(rows, items=items)
    p = np.array(probs)
    got = ipw_win_rates(c, p, resamples=2000, seed=0)
    judgment_item = np.repeat(np.arange(n_items), 2)
    for k in range(3):
        credit_k = np.where(c.first == k, c.credit, np.where(c.second == k, 1 - c.credit, 0.0))
        shown = (c.first == k) | (c.second == k)
        est = (credit_k / p)[shown].sum() / (1 / p)[shown].sum()
        samples = []
        for block in resample_blocks(n_items, 2000, 0):
            for drawn in block:
                mult = np.bincount(drawn, minlength=n_items)[judgment_item]
                den = (mult * shown / p).sum()
                samples.append((mult * credit_k / p).sum() / den if den > 0 else None)
        n_clusters = len(np.unique(judgment_item[shown]))
        interval = bootstrap_interval(samples, est, n_clusters)
        assert got[k]["win_rate"] == pytest.approx(est, abs=1e-12)
        assert got[k]["n_clusters"] == n_clusters
        np.testing.assert_allclose(got[k]["ci95"], interval.ci95, atol=1e-12)
        assert got[k]["ci_method"] == ("bootstrap over items (2000 resamples, seed 0; bias-corrected, "
                                       "expanded percentile)")


def test_bad_input_is_refused_with_a_clear_error():
    c = comparisons([(0, 1, 1.0), (1, 2, 0.0), (0, 2, 1.0)])
    with pytest.raises(ValueError, match=r"comparison 2: probability 0.0 is not in \(0, 1\]"):
        ipw_win_rates(c, np.array([0.5, 0.0, 0.5]))
    with pytest.raises(ValueError, match="one probability per comparison"):
        ipw_win_rates(c, np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="3 or more systems"):
        next_pair_probabilities(comparisons([(0, 1, 1.0)], systems=("x", "y")))
    few = ipw_win_rates(c, np.full(3, 1 / 3))
    assert few[0]["ci95"] is None and few[0]["ci_reason"] == "fewer than 5 clusters (2)"
