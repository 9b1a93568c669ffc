"""Spearman/Kendall bootstrap intervals (statistics.md, "Correlations": 2,000 resamples,
seed 0) of the compiled kernel (evaluation/rank_bootstrap.py), next to the reference measured
in the same run: scipy's spearmanr + kendalltau on each resample, expanded back into units
(the plain way; timed on the first `--reference` resamples and scaled to 2,000, and checked
to give the same coefficients on them).

Data as a pairwise report sees it: x = the difference of two 3-decimal metric scores,
y = the share of 3 annotators choosing the first candidate (4 levels), at the item counts of
a study with 100k and 1M judgments; and x continuous (float scores: every unit its own
profile).

    .venv/bin/python bench/rank_bootstrap_bench.py [--sizes 32700,327000] [--reference 20]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.rank_bootstrap import draw_counts, rank_bootstrap, warm_up  # noqa: E402

RESAMPLES = 2000


def data(n, continuous, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.random(n), rng.random(n)
    x = a - b if continuous else np.round(a, 3) - np.round(b, 3)
    return x, rng.integers(0, 4, n) / 3


def reference(x, y, resamples):
    """Seconds per resample of scipy on the kernel's own resamples, and the largest
    difference from the kernel's coefficients on them."""
    a, b = (y, x) if len(np.unique(x)) < len(np.unique(y)) else (x, y)
    keys, mult = np.unique(np.c_[a, b], axis=0, return_counts=True)
    rows = draw_counts(mult, resamples)
    start = time.perf_counter()
    rho, tau = [], []
    for row in rows:
        xa, ya = np.repeat(keys[:, 0], row), np.repeat(keys[:, 1], row)
        rho.append(stats.spearmanr(xa, ya).statistic)
        tau.append(stats.kendalltau(xa, ya).statistic)
    per = (time.perf_counter() - start) / resamples
    ours_rho, ours_tau = rank_bootstrap(x, y, resamples)
    return per, max(np.max(np.abs(ours_rho - rho)), np.max(np.abs(ours_tau - tau)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="32700,327000")
    parser.add_argument("--reference", type=int, default=20, help="resamples the scipy loop is timed on")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"kernels compiled or loaded in {warm_up():.2f} s", flush=True)
    for n in [int(s) for s in args.sizes.split(",")]:
        for continuous in (False, True):
            x, y = data(n, continuous)
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                rank_bootstrap(x, y, RESAMPLES)
                times.append(time.perf_counter() - start)
            per, diff = reference(x, y, args.reference)
            ours, ref = min(times), per * RESAMPLES
            label = "continuous x" if continuous else "3-decimal scores"
            print(f"n = {n:>7} ({label:16}): kernel {ours:7.3f} s for {RESAMPLES} resamples (best of {args.repeat}); "
                  f"scipy loop {ref:8.1f} s (from {args.reference} resamples); {ref / ours:6.0f}x faster; "
                  f"largest coefficient difference {diff:.1e}", flush=True)


if __name__ == "__main__":
    main()
