"""The `ranking` kind's report (statistics.md, "Best-worst and listwise ranking"; issue 33):
Plackett-Luce strengths against choix.opt_rankings through the whole report, Kendall's W
against hand-worked values (with and without ties), the vectorized paths against the
module's plain ones, the report's keys in JSON, CSV and HTML, and stored values that do
not rank every output once left out and counted."""
import json
from fractions import Fraction

import choix
import numpy as np

from evaluation.report import build_report, render
from evaluation.report.inputs import ReportInput
from evaluation.report.kinds import RANKING
from evaluation.report.kinds.ranking import join_order, mean_w, pair_comparisons, rankings_of, split_order
from evaluation.screens.plackett_luce import Rankings, implied_comparisons, kendall_w, plackett_luce


def ranking_input(items, judgments, scores=()):
    """items: [(item id, [candidate ids])]; judgments: [(item id, annotator, stored order)];
    scores: [(item id, metric, candidate, value)]."""
    ids = [i for i, _ in items]
    at = {i: k for k, i in enumerate(ids)}
    return ReportInput(
        slug="rank-test", kind=RANKING, config={}, item_ids=ids, is_gold=[False] * len(ids), gold=None,
        c_item=[k for k, (_, c) in enumerate(items) for _ in c], c_id=[x for _, c in items for x in c],
        j_item=[at[i] for i, _, _ in judgments], j_annotator=[a for _, a, _ in judgments],
        j_question=["rank"] * len(judgments), j_value=[v for *_, v in judgments],
        j_shown=["|".join(dict(items)[i]) for i, _, _ in judgments],
        s_item=[at[i] for i, *_ in scores], s_metric=[m for _, m, _, _ in scores],
        s_candidate=[c for _, _, c, _ in scores], s_value=[v for *_, v in scores])


def simulated(n_items=40, per_item=3, systems=("s0", "s1", "s2", "s3", "s4"), seed=1):
    rng = np.random.default_rng(seed)
    strength = np.linspace(1.0, -0.8, len(systems))
    judgments, orders = [], []
    for i in range(n_items):
        for a in range(per_item):
            order = np.argsort(-(strength + rng.gumbel(size=len(systems)))).tolist()
            orders.append(order)
            judgments.append((f"i{i}", f"u{a}", ">".join(systems[c] for c in order)))
    return [(f"i{i}", list(systems)) for i in range(n_items)], judgments, orders


def test_split_and_join_are_inverse():
    assert split_order("a>b=c>d") == [["a"], ["b", "c"], ["d"]]
    assert join_order([["a"], ["b", "c"], ["d"]]) == "a>b=c>d"
    assert join_order(split_order("x=y=z")) == "x=y=z"


def test_strengths_equal_choix_opt_rankings():
    items, judgments, orders = simulated()
    report = build_report(ranking_input(items, judgments))
    expected = choix.opt_rankings(5, [tuple(o) for o in orders], alpha=0, tol=1e-12)
    expected = expected - expected.mean()
    got = np.array([report["ranking"][f"s{k}"]["strength"] for k in range(5)])
    assert np.abs(got - expected).max() < 1e-6
    assert abs(got.sum()) < 1e-12
    assert [report["ranking"][f"s{k}"]["rank"] for k in range(5)] == list(np.argsort(np.argsort(-expected)) + 1)
    for entry in report["ranking"].values():
        low, high = entry["ci95"]
        assert low < entry["strength"] < high
        assert 1 <= entry["rank_ci95"][0] <= entry["rank"] <= entry["rank_ci95"][1] <= 5
        assert entry["n_clusters"] == 40
    assert report["ranking_detail"]["n_rankings"] == 120 and report["ranking_detail"]["resamples"] == 2000
    assert report["ranking_detail"]["seed"] == 0 and report["ranking_detail"]["n_unparsed"] == 0


def test_report_keys_and_pairwise_table():
    items, judgments, orders = simulated()
    scores = [(i, "rougeL", c, 0.1 * int(c[1]) + 0.01 * k) for k, (i, cs) in enumerate(items) for c in cs]
    inp = ranking_input(items, judgments, scores)
    report = json.loads(render(build_report(inp), inp, "json"))
    assert set(report) == {
        "study", "kind", "n_items", "n_gold_items", "n_judgments", "n_annotators", "complete_items", "min_votes",
        "skipped", "excluded_annotators", "agreement", "pairwise_kappa", "position_bias", "annotators",
        "value_counts", "systems", "pairwise_wins", "pairwise_n", "ranking", "ranking_detail", "intransitivity",
        "correlations_ranking", "kendall_w", "correlations"}
    assert set(report["ranking"]["s0"]) >= {"strength", "ci95", "rank", "rank_ci95", "ci_method", "n_clusters"}
    # Every ranking of 5 outputs holds every pair once: 120 comparisons per pair.
    assert all(report["pairwise_n"][a][b] == 120 for a in report["pairwise_n"] for b in report["pairwise_n"][a]
               if a != b)
    above = sum(o.index(0) < o.index(1) for o in orders)
    assert report["pairwise_wins"]["s0"]["s1"] == above and report["pairwise_wins"]["s1"]["s0"] == 120 - above
    human = report["systems"]["s0"]["human"]
    assert human["n"] == 4 * 120 and human["ties"] == 0
    assert human["wins"] == sum(4 - o.index(0) for o in orders)
    best = [o[0] for o in orders]
    assert report["value_counts"]["rank"] == {f"s{k}": best.count(k) for k in range(5) if best.count(k)}
    # rougeL's system means rise with the system's number; the strengths fall with it: tau-b = -1.
    tau = report["correlations_ranking"]["rougeL"]
    assert tau["n"] == 5 and abs(tau["kendall"]["r"] + 1) < 1e-12 and tau["y"] == "Plackett-Luce strength of the system"
    assert report["agreement"] == {}
    # Item level: per item, the coefficients between the 5 outputs' scores and minus their mean
    # rank over the item's 3 rankings, averaged over the 40 items; re-done with scipy per item.
    from scipy import stats

    taus, rhos, rs = [], [], []
    for i in range(40):
        x = [0.1 * c + 0.01 * i for c in range(5)]
        y = [-np.mean([o.index(c) + 1 for o in orders[3 * i:3 * i + 3]]) for c in range(5)]
        taus.append(stats.kendalltau(x, y).statistic)
        rhos.append(stats.spearmanr(x, y).statistic)
        rs.append(stats.pearsonr(x, y).statistic)
    item_level = report["correlations"]["rougeL"]
    assert (item_level["n"], item_level["unit"]) == (40, "item")
    for name, expected in (("kendall", taus), ("spearman", rhos), ("pearson", rs)):
        assert abs(item_level[name]["r"] - np.mean(expected)) < 1e-12, name
        t = stats.ttest_1samp(expected, 0.0)
        assert abs(item_level[name]["p_value"] - t.pvalue) < 1e-9, name
        low, high = stats.t.interval(0.95, 39, loc=np.mean(expected), scale=stats.sem(expected))
        assert np.allclose(item_level[name]["ci95"], [low, high], atol=1e-12), name


def test_kendall_w_hand_worked():
    """Item a: ranks a1 b2 c3 d4 / a1 c2 b3 d4 / b1 a2 c3 d4: rank sums 4, 6, 8, 12 about
    m (n + 1) / 2 = 7.5, S = 35, W = 12 * 35 / (9 * 60) = 7/9. Item b: two equal orders,
    W = 1; item c: reversed, W = 0; item d has one ranking (not counted). Mean 16/27."""
    abcd = ["a", "b", "c", "d"]
    items = [("A", abcd), ("B", abcd), ("C", abcd), ("D", abcd)]
    judgments = [("A", "u1", "a>b>c>d"), ("A", "u2", "a>c>b>d"), ("A", "u3", "b>a>c>d"),
                 ("B", "u1", "d>c>b>a"), ("B", "u2", "d>c>b>a"),
                 ("C", "u1", "a>b>c>d"), ("C", "u2", "d>c>b>a"), ("D", "u1", "c>a>b>d")]
    w = build_report(ranking_input(items, judgments))["kendall_w"]
    assert abs(w["value"] - float(Fraction(16, 27))) < 1e-12
    assert w["n"] == 3 and w["n_rankings"] == 7 and w["tie_corrected"] is False
    assert w["ci95"] is None and "fewer than 5" in w["ci_reason"]


def test_kendall_w_with_a_tie_hand_worked():
    """a>b=c>d (midranks 1, 2.5, 2.5, 4; T = 2^3 - 2 = 6) and a>b>c>d: rank sums 2, 4.5,
    5.5, 8 about 5, S = 18.5, W = 12 * 18.5 / (4 * 60 - 2 * 6) = 222/228 = 37/38."""
    abcd = ["a", "b", "c", "d"]
    report = build_report(ranking_input([("A", abcd)], [("A", "u1", "a>b=c>d"), ("A", "u2", "a>b>c>d")]))
    w = report["kendall_w"]
    assert abs(w["value"] - 37 / 38) < 1e-12 and w["tie_corrected"] is True and w["n"] == 1
    # the tie is half a win each in the pairwise table
    assert report["pairwise_wins"]["b"]["c"] == 1.5 and report["pairwise_wins"]["c"]["b"] == 0.5
    assert report["systems"]["b"]["human"]["ties"] == 1


def test_vectorized_paths_equal_the_plain_ones():
    items, judgments, _ = simulated(n_items=30, per_item=4, seed=3)
    inp = ranking_input(items, judgments)
    from evaluation.report.inputs import Judgments
    rows = Judgments.of(inp, inp.counted()).of_question("rank")
    r, _, _ = rankings_of(inp, rows, [f"s{k}" for k in range(5)])
    assert isinstance(r.orders, np.ndarray)
    plain = Rankings(r.systems, r.item, r.groups())
    fast, slow = mean_w(r), kendall_w(plain)
    assert mean_w(plain)["value"] == slow["value"]  # the tie-aware path (lists) gives the same W
    for key in ("n", "n_rankings", "n_items_undefined", "tie_corrected", "ci_method"):
        assert fast[key] == slow[key] == mean_w(plain)[key], key
    assert abs(fast["value"] - slow["value"]) < 1e-12
    # the same item bootstrap drawn two ways (compiled profile draw vs clustered_mean): close, not equal
    assert all(abs(a - b) < 0.02 for a, b in zip(fast["ci95"], slow["ci95"]))
    assert fast["ci95"][0] < fast["value"] < fast["ci95"][1]
    assert mean_w(r)["ci95"] == fast["ci95"]  # seeded
    fast, slow = pair_comparisons(r), implied_comparisons(plain)
    key = np.lexsort((fast.second, fast.first, fast.item))
    key2 = np.lexsort((slow.second, slow.first, slow.item))
    for field in ("item", "first", "second", "credit"):
        assert np.array_equal(getattr(fast, field)[key], getattr(slow, field)[key2])
    assert plackett_luce(r)["ranking"] == plackett_luce(plain)["ranking"]


def test_orders_that_do_not_rank_every_output_once_are_left_out():
    items, judgments, orders = simulated(n_items=10)
    bad = [("i0", "x1", "s0>s1>s2>s3"), ("i0", "x2", "s0>s0>s1>s2>s3"), ("i1", "x1", "s0>s1>s2>s3>zz"),
           ("i1", "x2", ""), ("i2", "x3", "s0>s1=s2>s3>s4")]  # partial, repeated, foreign, empty; a tie is kept
    report = build_report(ranking_input(items, judgments + bad))
    assert report["ranking_detail"]["n_unparsed"] == 4
    assert report["ranking_detail"]["n_rankings"] == 31
    assert report["kendall_w"]["tie_corrected"] is True


def test_no_rankings_no_strengths():
    report = build_report(ranking_input([("i0", ["a", "b", "c"])], []))
    assert report["ranking"] is None and report["reason"]
    assert report["kendall_w"]["value"] is None and report["kendall_w"]["n"] == 0


def test_csv_and_html():
    items, judgments, _ = simulated(n_items=12)
    inp = ranking_input(items, judgments)
    report = build_report(inp)
    csv = render(report, inp, "csv")
    lines = csv.splitlines()
    assert lines[0] == "item_id,question,is_gold,n_judgments,majority,kendall_w"
    assert lines[1].startswith("i0,rank,0,3,")
    assert ",plackett_luce_strength," in csv and "bradley_terry" not in csv
    html = render(report, inp, "html")
    assert 'id="fig-systems-ranking"' in html and "Plackett-Luce log strength (mean 0)" in html
    assert "Bradley-Terry" not in html
    assert f"n = {report['kendall_w']['n']} items with 2 or more rankings" in html
    assert "n = 36 rankings on 12 items" in html
