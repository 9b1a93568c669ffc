"""The bootstraps over items of a similarity survey (statistics.md, "Clustered data"): the
survey's alpha interval (1,000 resamples) and the three correlations of a per-pair metric
with the pair's mean rating (2,000 resamples, intervals and p-values), each next to the
reference measured in the same run: the plain way, each resample's drawn items expanded
back into rows and handed to the `krippendorff` package / scipy (timed on the first
`--reference` resamples and scaled to the full count).

Data: items x 4 pairs x 3 annotators rating 1-6 with an item effect, at the sizes of a
survey with 10k and 100k judgments; the metric shares the item effect.

    .venv/bin/python bench/clustered_bench.py [--items 833,8333] [--reference 10]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.alpha_ci import RESAMPLES as ALPHA_RESAMPLES  # noqa: E402
from evaluation.alpha_ci import krippendorff_alpha_ci95  # noqa: E402
from evaluation.correlation import RESAMPLES, correlations  # noqa: E402
from evaluation.rank_bootstrap import warm_up  # noqa: E402

PAIRS, RATERS = 4, 3


def survey(n_items, seed=0):
    rng = np.random.default_rng(seed)
    item_effect = rng.normal(0, 0.9, n_items)
    ratings = np.clip(np.rint(3.5 + item_effect[:, None, None] + rng.normal(0, 0.5, (n_items, PAIRS, 1))
                              + rng.normal(0, 0.8, (n_items, PAIRS, RATERS))), 1, 6)
    metric = np.round(0.6 * item_effect[:, None] + rng.normal(0, 0.6, (n_items, PAIRS)), 3)
    return ratings, metric


def reference_seconds(ratings, metric, resamples):
    """Seconds per resample of the plain way (alpha by the package; the three scipy coefficients)."""
    import krippendorff

    n_items = len(ratings)
    draws = np.random.default_rng(0).integers(0, n_items, (resamples, n_items))
    start = time.perf_counter()
    for row in draws:
        krippendorff.alpha(ratings[row].reshape(-1, RATERS).T, level_of_measurement="interval")
    alpha = (time.perf_counter() - start) / resamples
    start = time.perf_counter()
    for row in draws:
        x, y = metric[row].ravel(), ratings[row].mean(axis=2).ravel()
        stats.pearsonr(x, y), stats.spearmanr(x, y), stats.kendalltau(x, y)
    return alpha, (time.perf_counter() - start) / resamples


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", default="833,8333")
    parser.add_argument("--reference", type=int, default=10)
    args = parser.parse_args()
    print(f"numba kernels compiled or loaded in {warm_up():.2f} s")
    for n_items in (int(s) for s in args.items.split(",")):
        ratings, metric = survey(n_items)
        units = np.repeat(np.arange(n_items * PAIRS), RATERS)
        coders = np.tile(np.arange(RATERS), n_items * PAIRS)
        items = np.repeat(np.arange(n_items), PAIRS * RATERS)
        start = time.perf_counter()
        ci = krippendorff_alpha_ci95(units, coders, ratings.ravel(), "interval", clusters=items)
        alpha_s = time.perf_counter() - start
        start = time.perf_counter()
        pair_items = np.repeat(np.arange(n_items), PAIRS)
        result = correlations(metric.ravel(), ratings.mean(axis=2).ravel(), clusters=pair_items)
        corr_s = time.perf_counter() - start
        ref_alpha, ref_corr = reference_seconds(ratings, metric, args.reference)
        judgments = n_items * PAIRS * RATERS
        print(f"{judgments:>8} judgments ({n_items} items): alpha over items {alpha_s:.3f} s "
              f"(plain loop {ref_alpha * ALPHA_RESAMPLES:.1f} s, {ref_alpha * ALPHA_RESAMPLES / alpha_s:.0f}x) "
              f"ci {[round(v, 4) for v in ci.ci95]}; three correlations over items {corr_s:.3f} s "
              f"(scipy loop {ref_corr * RESAMPLES:.1f} s, {ref_corr * RESAMPLES / corr_s:.0f}x) "
              f"pearson ci {[round(v, 4) for v in result['pearson']['ci95']]}")


if __name__ == "__main__":
    main()
