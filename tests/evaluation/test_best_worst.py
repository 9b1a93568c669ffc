"""Best-worst scaling (statistics.md, "Best-worst and listwise ranking"; issue 33): counting
scores worked on paper, the item bootstrap re-done naively, the implied-pair Bradley-Terry
ranking against choix, and split-half reliability re-done with scipy."""
import choix
import numpy as np
from scipy import stats

from evaluation.bootstrap import bootstrap_interval, resample_blocks
from evaluation.screens.best_worst import BestWorst, bws_ranking, bws_scores, implied_comparisons, split_half

A, B, C, D = range(4)
# 6 items, one judgment each: (shown, best, worst)
HAND = [((A, B, C), A, C), ((A, B, D), B, D), ((A, C, D), A, D), ((B, C, D), C, D),
        ((A, B, C, D), A, B), ((A, B, C, D), B, D)]


def hand_data(annotators=None):
    who = np.asarray(annotators if annotators is not None else np.zeros(6, int))
    return BestWorst(list("abcd"), np.arange(6), who, [list(s) for s, _, _ in HAND],
                     np.array([b for _, b, _ in HAND]), np.array([w for _, _, w in HAND]))


def test_counting_scores_hand_worked():
    """By hand, per system (shown / best / worst over the 6 items):
    a: shown in items 0,1,2,4,5 = 5; best in 0,2,4 = 3; worst never   -> (3 - 0)/5 =  0.6
    b: shown in items 0,1,3,4,5 = 5; best in 1,5 = 2;   worst in 4 = 1 -> (2 - 1)/5 =  0.2
    c: shown in items 0,2,3,4,5 = 5; best in 3 = 1;     worst in 0 = 1 -> (1 - 1)/5 =  0.0
    d: shown in items 1,2,3,4,5 = 5; best never;        worst in 1,2,3,5 = 4 -> -4/5 = -0.8
    (6 bests and 6 worsts: the scores' shown-weighted sum is 0)."""
    out = bws_scores(hand_data())
    got = {s: (r["n_shown"], r["n_best"], r["n_worst"], r["bws_score"]) for s, r in out.items()}
    assert got == {"a": (5, 3, 0, 0.6), "b": (5, 2, 1, 0.2), "c": (5, 1, 1, 0.0), "d": (5, 0, 4, -0.8)}
    assert all(r["n_clusters"] == 5 for r in out.values())


def test_score_interval_is_the_item_bootstrap_done_naively():
    """Resample r draws the 6 items (resample_blocks(6, 2000, 0), the report's cluster draw);
    its score is the drawn items' (best - worst) total over their shown total."""
    out = bws_scores(hand_data())
    shown = np.zeros((6, 4))
    net = np.zeros((6, 4))
    for i, (s, b, w) in enumerate(HAND):
        shown[i, list(s)] = 1
        net[i, b] += 1
        net[i, w] -= 1
    rows = np.vstack(list(resample_blocks(6, 2000, 0)))
    for k, name in enumerate("abcd"):
        samples = []
        for idx in rows:
            n = shown[idx, k].sum()
            samples.append(net[idx, k].sum() / n if n else np.nan)
        expected = bootstrap_interval(samples, out[name]["bws_score"], 5)
        assert np.allclose(out[name]["ci95"], expected.ci95, atol=1e-12)


def test_implied_pairs_and_ranking_equal_choix():
    """Item 4 (a b c d shown, best a, worst b) implies a>b, a>c, a>d, c>b, d>b: 2k - 3 = 5;
    the 3-tuples imply 3 each; 4 * 3 + 2 * 5 = 22 in all."""
    bw = hand_data()
    c = implied_comparisons(bw)
    assert len(c) == 22
    item4 = sorted(zip(c.first[c.item == 4].tolist(), c.second[c.item == 4].tolist()))
    assert item4 == sorted([(A, B), (A, C), (A, D), (C, B), (D, B)])
    out = bws_ranking(bw)
    pairs = list(zip(c.first.tolist(), c.second.tolist()))
    expected = choix.opt_pairwise(4, pairs, alpha=0, tol=1e-12)
    expected -= expected.mean()
    got = np.array([out["ranking"][s]["strength"] for s in "abcd"])
    assert np.abs(got - expected).max() < 1e-6
    assert [out["ranking"][s]["rank"] for s in "abcd"] == [1, 2, 3, 4]
    assert out["detail"]["n_clusters"] == 6


def naive_split_half(judgments, systems, splits=100, seed=0):
    """The documented procedure with plain loops and scipy's Pearson r."""
    annotators = sorted({a for a, *_ in judgments})
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(splits):
        first = {annotators[i] for i in rng.permutation(len(annotators))[: len(annotators) // 2]}
        halves = []
        for part in (True, False):
            score = []
            for s in systems:
                rows = [(b, w) for a, shown, b, w in judgments if (a in first) == part and s in shown]
                if not rows:
                    break
                score.append((sum(b == s for b, _ in rows) - sum(w == s for _, w in rows)) / len(rows))
            halves.append(score)
        if any(len(h) < len(systems) for h in halves) or np.std(halves[0]) == 0 or np.std(halves[1]) == 0:
            continue
        r = stats.pearsonr(halves[0], halves[1])[0]
        values.append(2 * r / (1 + r))
    return float(np.mean(values)), len(values)


def test_split_half_equals_naive_scipy():
    rng = np.random.default_rng(3)
    strength = np.array([1.0, 0.4, 0.0, -0.5, -1.0])
    judgments = []
    for _ in range(240):
        shown = rng.choice(5, 4, replace=False)
        noise = strength[shown] + rng.gumbel(size=4)
        judgments.append((int(rng.integers(9)), shown.tolist(), int(shown[np.argmax(noise)]),
                          int(shown[np.argmin(noise)])))
    bw = BestWorst(list("vwxyz"), np.arange(240), np.array([a for a, *_ in judgments]),
                   [s for _, s, _, _ in judgments], np.array([b for *_, b, _ in judgments]),
                   np.array([w for *_, w in judgments]))
    out = split_half(bw)
    value, n = naive_split_half(judgments, range(5))
    assert out["n_splits"] == n == 100 and out["n_annotators"] == 9
    assert abs(out["value"] - value) < 1e-12
    assert 0.5 < out["value"] <= 1


def test_split_half_refusals():
    assert split_half(hand_data())["reason"] == "fewer than 2 annotators"
    two = BestWorst(list("ab"), np.arange(2), np.arange(2), [[0, 1], [0, 1]], np.array([0, 1]), np.array([1, 0]))
    assert split_half(two)["reason"] == "fewer than 3 systems"


def test_few_items_no_interval_and_never_shown():
    bw = BestWorst(list("abcd"), np.arange(3), np.zeros(3, int), [[0, 1, 2]] * 3, np.zeros(3, int), np.ones(3, int))
    out = bws_scores(bw)
    assert out["a"]["ci95"] is None and out["a"]["ci_reason"] == "fewer than 5 clusters (3)"
    assert out["d"]["bws_score"] is None and out["d"]["ci_reason"] == "never shown"
