"""The `ranking` kind's report cost next to the pairwise kinds' (issue 33: the ranking report
within 1.5x of the pairwise report): Plackett-Luce strengths + their item bootstrap
(evaluation.screens.plackett_luce.plackett_luce: 2,000 resamples, seed 0) on N listwise judgments
(full rankings of 4 systems, 5 annotators per item), against the pairwise Bradley-Terry
ranking (evaluation.bradley_terry.bt_ranking, same bootstrap) of the same number N of pair judgments
(the same items, each judgment the implied comparison of one random pair of its ranking),
and of all 6 N implied pairs, measured in the same run.

    .venv/bin/python bench/listwise_bench.py [--judgments 100000] [--repeats 1]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.bradley_terry import Comparisons, bt_ranking  # noqa: E402
from evaluation.rank_bootstrap import warm_up  # noqa: E402
from evaluation.screens.plackett_luce import Rankings, implied_comparisons, plackett_luce  # noqa: E402

SYSTEMS = 4
PER_ITEM = 5


def rankings(n, seed=0):
    rng = np.random.default_rng(seed)
    strength = np.array([0.3, 0.1, 0.0, -0.2])
    orders = np.argsort(-(strength + rng.gumbel(size=(n, SYSTEMS))), axis=1)
    items = np.arange(n) // PER_ITEM
    return Rankings([f"s{k}" for k in range(SYSTEMS)], items, orders)  # no ties: an int array


def one_pair_each(r, seed=1):
    """One implied comparison per ranking: a random pair of its positions, the higher first."""
    rng = np.random.default_rng(seed)
    order = r.orders
    lo = rng.integers(0, SYSTEMS - 1, len(order))
    hi = lo + 1 + (rng.random(len(order)) * (SYSTEMS - 1 - lo)).astype(int)
    rows = np.arange(len(order))
    return Comparisons(r.systems, np.asarray(r.item), order[rows, lo], order[rows, hi], np.ones(len(order)))


def timed(label, fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    print(f"{label:<52} {best:8.2f} s")
    return best, out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--judgments", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"numba warm-up {warm_up():.2f} s (not counted)")
    r = rankings(args.judgments)
    pairs1 = one_pair_each(r)
    pairs6 = implied_comparisons(r)
    print(f"{args.judgments} rankings of {SYSTEMS} systems, {len(np.unique(r.item))} items; "
          f"{len(pairs1)} pair judgments; {len(pairs6)} implied pairs")
    t_pl, out = timed("Plackett-Luce strengths + item bootstrap", lambda: plackett_luce(r), args.repeats)
    t_bt, _ = timed(f"Bradley-Terry, {len(pairs1)} pair judgments", lambda: bt_ranking(pairs1), args.repeats)
    t_bt6, _ = timed(f"Bradley-Terry, {len(pairs6)} implied pairs", lambda: bt_ranking(pairs6), args.repeats)
    print(f"ratio PL / BT (same number of judgments): {t_pl / t_bt:.2f}  (target <= 1.5)")
    print(f"ratio PL / BT (all implied pairs):        {t_pl / t_bt6:.2f}")
    print("strengths:", {s: round(e["strength"], 4) for s, e in out["ranking"].items()},
          "dropped", out["detail"]["dropped_resamples"])


if __name__ == "__main__":
    main()
