"""System strengths from pairwise judgments (statistics.md, "System strengths"; issue 22):
exact values against choix, hand-worked tournaments, statsmodels' Wilson interval, scipy's
exact Kendall p, and the item bootstrap re-done naively from its documented procedure."""
from collections import Counter

import choix
import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evaluation.bootstrap import bootstrap_interval
from evaluation.bradley_terry import (
    Comparisons,
    bradley_terry,
    bt_ranking,
    circular_triads,
    human_rows,
    intransitivity,
    win_matrix,
)
from evaluation.rank_bootstrap import draw_counts
from evaluation.report.strengths import correlations_ranking

# 3 systems, 10 comparisons (winner, loser): a beats b 3-1, b beats c 2-1, a and c 1-1... not symmetric.
HAND = [(0, 1), (0, 1), (0, 1), (1, 0), (1, 2), (1, 2), (2, 1), (0, 2), (2, 0), (2, 0)]


def comparisons(pairs, credits=None, items=None, systems=None):
    first = np.array([p[0] for p in pairs], dtype=np.int64)
    second = np.array([p[1] for p in pairs], dtype=np.int64)
    credit = np.ones(len(pairs)) if credits is None else np.asarray(credits, dtype=float)
    item = np.arange(len(pairs)) if items is None else np.asarray(items, dtype=np.int64)
    n = max(max(p) for p in pairs) + 1
    return Comparisons(systems or [f"s{k}" for k in range(n)], item, first, second, credit)


def choix_data(c):
    """Every comparison as choix (winner, loser) rows, doubled so that a tie is one row each way."""
    rows = []
    for a, b, x in zip(c.first.tolist(), c.second.tolist(), c.credit.tolist()):
        rows += [(a, b)] * int(round(2 * x)) + [(b, a)] * int(round(2 * (1 - x)))
    return rows


def centred(x):
    return np.asarray(x) - np.mean(x)


def test_bradley_terry_hand_case_equals_choix():
    c = comparisons(HAND)
    theta = bradley_terry(win_matrix(c))
    opt = centred(choix.opt_pairwise(3, HAND, alpha=0, tol=1e-12))
    ilsr = centred(choix.ilsr_pairwise(3, HAND, alpha=0, tol=1e-12))
    assert np.abs(theta - opt).max() < 1e-6 and np.abs(theta - ilsr).max() < 1e-6
    assert abs(theta.sum()) < 1e-12
    # The likelihood's stationarity, by hand: each system's wins = sum_j n_ij p_ij.
    p = 1 / (1 + np.exp(-(theta[:, None] - theta[None, :])))
    w = win_matrix(c)
    assert np.allclose(w.sum(axis=1), ((w + w.T) * p).sum(axis=1), atol=1e-10)
    assert w.tolist() == [[0, 3, 1], [1, 0, 2], [2, 1, 0]]


def test_ties_count_as_two_half_comparisons():
    pairs = [(0, 1), (1, 0), (0, 2), (2, 1), (1, 2), (0, 2), (0, 1)]
    credits = [0.5, 1, 1, 0.5, 0, 1, 0]  # the first shown system's credit
    c = comparisons(pairs, credits)
    w = win_matrix(c)
    assert w.tolist() == [[0, 0.5, 2], [2.5, 0, 0.5], [0, 1.5, 0]]
    theta = bradley_terry(w)
    opt = centred(choix.opt_pairwise(3, choix_data(c), alpha=0, tol=1e-12))
    assert np.abs(theta - opt).max() < 1e-6
    rows = human_rows(c)
    # s0: 5 comparisons, wins 2 (both against s2), 1 tie; s1 wins #2 and #7 (shown second), ties #1, #4.
    assert [(r["n"], r["wins"], r["ties"]) for r in rows] == [(5, 2, 1), (5, 2, 2), (4, 1, 1)]
    assert [r["win_rate"] for r in rows] == pytest.approx([2.5 / 5, 3 / 5, 1.5 / 4])


def test_wilson_interval_of_the_human_row_matches_statsmodels():
    # 10 items, 2 systems: s0 wins 6, 2 ties, loses 2 -> x = 7 of 10.
    pairs = [(0, 1)] * 10
    credits = [1] * 6 + [0.5] * 2 + [0] * 2
    rows = human_rows(comparisons(pairs, credits))
    expected = proportion_confint(7, 10, alpha=0.05, method="wilson")
    assert rows[0]["ci95"] == pytest.approx(list(expected), abs=1e-4)  # statsmodels uses z = 1.95996...
    assert rows[0]["ci95"] == pytest.approx([0.3968, 0.8922], abs=1e-4)  # by hand (z = 1.96)
    assert rows[1]["ci95"] == pytest.approx([1 - 0.8922, 1 - 0.3968], abs=1e-4)
    assert rows[0]["n_clusters"] == 10
    few = human_rows(comparisons([(0, 1)] * 4))
    assert few[0]["ci95"] is None and few[0]["ci_reason"] == "fewer than 5 clusters (4)"


def test_circular_triads_in_a_four_system_tournament():
    # a -> b -> c -> a, and everyone beats d: one cyclic triad; zeta = 1 - 24/(64 - 16) = 0.5.
    w = np.zeros((4, 4))
    for winner, loser in ((0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3)):
        w[winner, loser] = 3
        w[loser, winner] = 1
    result = intransitivity(w, ["a", "b", "c", "d"])
    assert result["circular_triads"] == 1 and result["zeta"] == 0.5 and result["n_systems"] == 4
    assert result["cycles"] == [["a", "b", "c"]]
    # Transitive 5-system tournament: d = 0, zeta = 1; one reversed edge c -> a makes 1 triad:
    # zeta = 1 - 24/(125 - 5) = 0.8.
    w5 = np.triu(np.full((5, 5), 2.0), 1) + np.tril(np.ones((5, 5)), -1)
    assert intransitivity(w5, list("abcde"))["zeta"] == 1.0
    w5[2, 0], w5[0, 2] = 2.0, 1.0
    assert intransitivity(w5, list("abcde"))["circular_triads"] == 1
    assert intransitivity(w5, list("abcde"))["zeta"] == pytest.approx(0.8)


def test_equal_wins_are_no_edge_and_small_n_is_null():
    w = np.array([[0, 2, 1], [1, 0, 2], [1, 2, 0]], dtype=float)  # c vs a tied on wins... a->b, b->c, a->c? no
    # a beats b (2-1), b vs c equal (2-2), c vs a equal (1-1): no cycle, two undecided pairs.
    assert circular_triads(w) == (0, [])
    assert intransitivity(w, ["a", "b", "c"])["undecided_pairs"] == 2
    two = intransitivity(np.array([[0, 1.0], [2, 0]]), ["a", "b"])
    assert two["circular_triads"] is None and two["zeta"] is None and two["n_systems"] == 2


def test_disconnected_design_gives_null_with_reason():
    c = comparisons([(0, 1), (1, 0), (2, 3), (3, 2)] * 5, systems=["a", "b", "c", "d"])
    result = bt_ranking(c)
    assert result["ranking"] is None
    assert result["reason"] == ("the comparison graph is not connected: no judgment links these groups of systems: "
                                "{a, b}; {c, d}")
    never_lost = comparisons([(0, 1), (1, 2), (2, 1), (0, 2)] * 3, systems=["a", "b", "c"])
    result = bt_ranking(never_lost)
    assert result["ranking"] is None and result["reason"].startswith("no finite maximum-likelihood strengths: a ")


def test_resamples_without_finite_strengths_are_dropped_and_counted():
    # s2 takes part in 2 of 40 items only: about 13% of the resamples miss it -> no interval.
    rng = np.random.default_rng(1)
    pairs = [(0, 1) if rng.random() < 0.6 else (1, 0) for _ in range(38)] + [(2, 0), (1, 2)]
    result = bt_ranking(comparisons(pairs))
    entry = result["ranking"]["s2"]
    assert entry["ci95"] is None and entry["rank_ci95"] is None
    assert result["detail"]["dropped_resamples"] > 200
    assert entry["ci_reason"].startswith("over 10% of the resamples dropped")


def naive_bootstrap(c, resamples=2000, seed=0):
    """The module docstring's procedure, step by step with Python loops and choix."""
    s = len(c.systems)
    by_item = {}
    for item, a, b, x in zip(c.item.tolist(), c.first.tolist(), c.second.tolist(), c.credit.tolist()):
        lo, hi = min(a, b), max(a, b)
        lo_credit = x if a == lo else 1 - x
        by_item.setdefault(item, Counter())[(lo, hi, lo_credit)] += 1
    profiles, mult = [], []
    for item in sorted(by_item, key=lambda i: list(c.item).index(i)):  # items in input order
        key = frozenset(by_item[item].items())
        if key in profiles:
            mult[profiles.index(key)] += 1
        else:
            profiles.append(key)
            mult.append(1)
    counts = draw_counts(np.array(mult), resamples, seed)
    out = []
    for row in counts:
        w = np.zeros((s, s))
        for count, profile in zip(row.tolist(), profiles):
            for (lo, hi, lo_credit), k in profile:
                w[lo, hi] += count * k * lo_credit
                w[hi, lo] += count * k * (1 - lo_credit)
        reach = (w > 0) | np.eye(s, dtype=bool)
        for _ in range(s):
            reach = reach | ((reach.astype(int) @ reach.astype(int)) > 0)
        if not reach.all():
            out.append(None)
            continue
        data = []
        for i in range(s):
            for j in range(s):
                data += [(i, j)] * int(round(2 * w[i, j]))
        out.append(centred(choix.ilsr_pairwise(s, data, alpha=0, tol=1e-13)))
    return out


def test_bootstrap_interval_reproduced_from_the_documented_procedure():
    rng = np.random.default_rng(7)
    strength = np.array([0.8, 0.3, 0.0, -0.6])
    pairs, credits, items = [], [], []
    for item in range(24):
        for _ in range(3):
            a, b = rng.choice(4, 2, replace=False)
            p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
            u = rng.random()
            pairs.append((int(a), int(b)))
            credits.append(1.0 if u < 0.85 * p else 0.5 if u < 0.85 * p + 0.15 else 0.0)
            items.append(item)
    c = comparisons(pairs, credits, items)
    result = bt_ranking(c, resamples=300)
    theta = np.array([result["ranking"][s]["strength"] for s in c.systems])
    assert np.abs(theta - centred(choix.opt_pairwise(4, choix_data(c), alpha=0, tol=1e-12))).max() < 1e-6
    naive = naive_bootstrap(c, resamples=300)
    kept = np.array([t for t in naive if t is not None])
    assert result["detail"]["dropped_resamples"] == 300 - len(kept)
    ranks = 1 + (kept[:, None, :] > kept[:, :, None] + 1e-9).sum(axis=2)
    for k, system in enumerate(c.systems):
        samples = [np.nan if t is None else t[k] for t in naive]
        interval = bootstrap_interval(samples, theta[k], n_clusters=24)
        assert result["ranking"][system]["ci95"] == pytest.approx(interval.ci95, abs=1e-6)
        assert result["ranking"][system]["rank_ci95"] == [int(np.percentile(ranks[:, k], 2.5, method="lower")),
                                                          int(np.percentile(ranks[:, k], 97.5, method="higher"))]
    expected = stats.rankdata(-theta, method="min").astype(int).tolist()
    assert [result["ranking"][s]["rank"] for s in c.systems] == expected == [1, 3, 2, 4]  # this sample's order


def test_kendall_tau_of_metric_means_against_strengths_has_scipys_exact_p():
    strengths = {s: {"strength": v} for s, v in zip("abcde", [0.9, 0.4, 0.1, -0.5, -0.9])}
    means = {"m": dict(zip("abcde", [0.7, 0.5, 0.6, 0.2, 0.1])), "lamp_mae": dict(zip("abcde", [1, 2, 3, 5, 4]))}
    result = correlations_ranking(strengths, means)
    tau = stats.kendalltau([0.7, 0.5, 0.6, 0.2, 0.1], [0.9, 0.4, 0.1, -0.5, -0.9], method="exact")
    assert result["m"]["kendall"]["r"] == pytest.approx(tau.statistic)
    assert result["m"]["kendall"]["p_value"] == pytest.approx(tau.pvalue)
    assert result["m"]["kendall"]["p_method"] == "exact permutation (all n! orderings)"
    lower = stats.kendalltau([-1, -2, -3, -5, -4], [0.9, 0.4, 0.1, -0.5, -0.9], method="exact")
    assert result["lamp_mae"]["kendall"]["r"] == pytest.approx(lower.statistic)  # lower is better: negated
    assert result["lamp_mae"]["kendall"]["p_value"] == pytest.approx(lower.pvalue)
    assert correlations_ranking(None, means) == {}
