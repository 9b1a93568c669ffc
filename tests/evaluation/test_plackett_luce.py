"""Listwise ranking (statistics.md, "Best-worst and listwise ranking"; issue 33):
Plackett-Luce strengths against choix.opt_rankings (no ties; ties expanded into their
orders), a tie of two against Bradley-Terry's half comparisons, the item bootstrap re-done
with choix, and Kendall's W against its formula and scipy's Friedman statistic."""
import math
from itertools import permutations

import choix
import numpy as np
import pytest
from scipy import stats

from evaluation.bootstrap import bootstrap_interval
from evaluation.bradley_terry import Comparisons, bradley_terry, win_matrix
from evaluation.rank_bootstrap import draw_counts
from evaluation.screens.plackett_luce import (
    Rankings,
    choice_template,
    implied_comparisons,
    kendall_w,
    kendall_w_of_item,
    plackett_luce,
    strengths,
)


def centred(x):
    return np.asarray(x) - np.mean(x)


def random_orders(n, systems, rng, sizes=(4,), true=None):
    true = np.zeros(systems) if true is None else true
    out = []
    for _ in range(n):
        k = int(rng.choice(sizes))
        sub = rng.choice(systems, k, replace=False)
        out.append(sub[np.argsort(-(true[sub] + rng.gumbel(size=k)))].tolist())
    return out


def test_strengths_equal_choix_full_and_partial_rankings():
    rng = np.random.default_rng(1)
    orders = random_orders(300, 5, rng, sizes=(2, 3, 4, 5), true=np.array([0.5, 0.0, -0.3, 0.2, 1.0]))
    r = Rankings([f"s{k}" for k in range(5)], rng.integers(0, 60, 300), [[[c] for c in o] for o in orders])
    expected = centred(choix.opt_rankings(5, [tuple(o) for o in orders], alpha=0, tol=1e-12))
    got = strengths(r)
    assert np.abs(got - expected).max() < 1e-6 and abs(got.sum()) < 1e-12


def expanded(order):
    """Every order of every tied group (a tie of g counts g!/g! = 1 in all: each order 1/g!)."""
    result = [[]]
    for group in order:
        result = [done + list(p) for done in result for p in permutations(group)]
    return result


def test_ties_equal_choix_on_every_order_of_the_tied_groups():
    """Luce's rule for tied ranks as documented: a tied group counts as all its orders, each
    1/g!. Multiplying every weight by the lcm of the rankings' order counts makes every
    weight whole, so choix on the replicated orders must give the same strengths."""
    rng = np.random.default_rng(2)
    orders = []
    for o in random_orders(60, 5, rng, sizes=(3, 4)):
        cut = sorted(rng.choice(range(1, len(o)), rng.integers(1, len(o)), replace=False).tolist())
        orders.append([o[a:b] for a, b in zip([0] + cut, cut + [len(o)])])  # groups of 1 to 3
    assert any(len(g) == 3 for o in orders for g in o) and any(len(g) == 2 for o in orders for g in o)
    expansions = [expanded(o) for o in orders]
    whole = math.lcm(*[len(p) for p in expansions])  # every weight 1/g! * whole is a whole number
    replicated = [tuple(p) for perms in expansions for p in perms * (whole // len(perms))]
    expected = centred(choix.opt_rankings(5, replicated, alpha=0, tol=1e-12))
    got = strengths(Rankings([f"s{k}" for k in range(5)], np.arange(len(orders)), orders))
    assert np.abs(got - expected).max() < 1e-6


def test_tie_of_two_is_bradley_terrys_half_comparisons():
    orders = [[[0], [1]], [[0, 1]], [[1], [2]], [[2], [0]], [[1, 2]], [[0], [2]]]
    first = np.array([o[0][0] for o in orders])
    second = np.array([o[-1][-1] for o in orders])
    credit = np.array([0.5 if len(o) == 1 else 1.0 for o in orders])
    bt = bradley_terry(win_matrix(Comparisons(list("abc"), np.arange(6), first, second, credit)))
    pl = strengths(Rankings(list("abc"), np.arange(6), orders))
    assert np.abs(bt - pl).max() < 1e-9


def test_template_weights_sum_to_one_choice_per_position():
    """A group of g among the rest: for each part size t, the weights sum to 1 (one choice)."""
    template = choice_template((1, 3, 1))
    by_size = {}
    for positions, _, num, den in template:
        by_size.setdefault(len(positions), 0.0)
        by_size[len(positions)] += num / den
    assert by_size == pytest.approx({5: 1.0, 4: 1.0, 3: 1.0, 2: 1.0})


def test_bootstrap_interval_re_done_with_choix():
    """Steps 1-5 of evaluation.bradley_terry's docstring by hand: items (sorted codes) with equal
    rankings are one profile, numbered in order of their first item; resample r refits
    choix on every ranking of the drawn profiles, counts[r, p] times."""
    rng = np.random.default_rng(5)
    orders = random_orders(40, 3, rng, sizes=(3,), true=np.array([0.8, 0.0, -0.8]))
    r = Rankings(list("xyz"), np.arange(40), [[[c] for c in o] for o in orders])
    out = plackett_luce(r, resamples=60)
    keys, mult, profile_of = [], [], {}
    for o in orders:
        if tuple(o) not in profile_of:
            profile_of[tuple(o)] = len(keys)
            keys.append(tuple(o))
            mult.append(0)
        mult[profile_of[tuple(o)]] += 1
    counts = draw_counts(np.array(mult), 60, 0)
    samples = []
    for row in counts:
        data = [k for k, n in zip(keys, row.tolist()) for _ in range(n)]
        samples.append(centred(choix.opt_rankings(3, data, alpha=0, tol=1e-12)))
    samples = np.array(samples)
    for k, name in enumerate("xyz"):
        expected = bootstrap_interval(samples[:, k], out["ranking"][name]["strength"], 40)
        assert np.allclose(out["ranking"][name]["ci95"], expected.ci95, atol=1e-6)
    assert out["detail"]["dropped_resamples"] == 0 and out["detail"]["n_clusters"] == 40


def test_no_finite_strengths_is_null_with_reason():
    r = Rankings(list("abc"), np.arange(3), [[[0], [1], [2]]] * 3)
    out = plackett_luce(r)
    assert out["ranking"] is None and "never lost" in out["reason"]


def test_implied_comparisons_of_a_ranking_with_a_tie():
    c = implied_comparisons(Rankings(list("abcd"), np.array([3]), [[[1], [0, 3], [2]]]))
    assert list(zip(c.first.tolist(), c.second.tolist(), c.credit.tolist())) == [
        (1, 0, 1.0), (1, 3, 1.0), (1, 2, 1.0), (0, 3, 0.5), (0, 2, 1.0), (3, 2, 1.0)]


def test_kendall_w_formula_and_friedman():
    """W = 12 S / (m^2 (n^3 - n) - m sum T); without ties by hand; with ties equal to
    scipy's tie-corrected Friedman chi^2 / (m (n - 1))."""
    # 3 rankings of 4 outputs, no ties: rank sums a=1+2+1=4, b=2+1+3=6, c=3+3+2=8, d=4+4+4=12
    # mean 7.5: S = 12.25 + 2.25 + 0.25 + 20.25 = 35; W = 12*35 / (9 * 60) = 0.777...
    plain = [[[0], [1], [2], [3]], [[1], [0], [2], [3]], [[0], [2], [1], [3]]]
    assert kendall_w_of_item(plain) == pytest.approx(420 / 540, abs=1e-15)
    tied = [[[0, 1], [2], [3]], [[1], [0], [2, 3]], [[0], [2, 1], [3]], [[3], [0], [1], [2]]]
    ranks = []
    for order in tied:
        row, start = {}, 1
        for g in order:
            for c in g:
                row[c] = start + (len(g) - 1) / 2
            start += len(g)
        ranks.append([row[c] for c in range(4)])
    ranks = np.array(ranks)
    chi2 = stats.friedmanchisquare(*ranks.T).statistic
    assert kendall_w_of_item(tied) == pytest.approx(chi2 / (4 * 3), abs=1e-12)


def test_kendall_w_mean_over_items_with_two_or_more_rankings():
    rng = np.random.default_rng(7)
    items, orders = [], []
    for it in range(12):
        for _ in range(int(rng.integers(1, 5))):
            items.append(it)
            orders.append([[c] for c in rng.permutation(4).tolist()])
    out = kendall_w(Rankings(list("abcd"), np.array(items), orders))
    per_item = []
    for it in range(12):
        mine = [o for i, o in zip(items, orders) if i == it]
        if len(mine) >= 2:
            ranks = np.array([[next(p for p, g in enumerate(o) if c in g) + 1 for c in range(4)] for o in mine])
            m = len(mine)
            s = ((ranks.sum(axis=0) - m * 2.5) ** 2).sum()
            per_item.append(12 * s / (m * m * 60))
    assert out["n"] == len(per_item) and out["value"] == pytest.approx(np.mean(per_item), abs=1e-12)
    assert out["tie_corrected"] is False and out["ci95"] is not None
