"""Benchmark: Krippendorff's alpha with its 95% bootstrap interval (1,000 unit resamples,
seed 0), vectorized (evaluation.alpha_ci) vs a plain loop that recomputes
evaluation.agreement.krippendorff_alpha on every resample, on the same resamples, for
5 coders x 20,000 units. Prints both times, the ratio, and whether the intervals agree.

    .venv/bin/python bench/alpha_ci_bench.py [--units 20000] [--coders 5] [--resamples 1000]
        [--loop-resamples 1000]

With --loop-resamples below --resamples the loop runs that many resamples and its time is
scaled up to --resamples (the intervals are then not compared). Target (issue 13): the
vectorized interval in under 1 s.
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.agreement import krippendorff_alpha  # noqa: E402
from evaluation.alpha_ci import _profiles, krippendorff_alpha_ci95  # noqa: E402
from evaluation.bootstrap import bootstrap_weights, percentile_ci  # noqa: E402
from evaluation.tabulate import tabulate  # noqa: E402


def data(kind, units, coders, seed=0):
    """(units, coders, values, level): 10% of judgments missing."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 5, units)
    if kind == "nominal, 5 labels":
        values = np.where(rng.random((coders, units)) < 0.7, truth, rng.integers(0, 5, (coders, units))).astype(float)
        level = "nominal"
    elif kind == "interval, ratings 1-6":
        values = np.clip(truth + 1 + rng.integers(-1, 2, (coders, units)), 1, 6).astype(float)
        level = "interval"
    else:
        values = truth + rng.normal(0, 0.5, (coders, units))
        level = "interval"
    values[rng.random((coders, units)) < 0.1] = np.nan
    return np.tile(np.arange(units), coders), np.repeat(np.arange(coders), units), values.ravel(), level


def plain_loop(units, coders, values, level, resamples, seed=0):
    """krippendorff_alpha on each resample, expanded into long format (unit copies get new
    ids), drawing the same resamples as the vectorized code."""
    c = tabulate(units, coders, values, numeric=level != "nominal")
    keep = c.m >= 2
    x = c.value_labels.astype(float) if level != "nominal" else np.arange(len(c.value_labels), dtype=float)
    prof = _profiles(c, keep, x, level)
    new = np.cumsum(keep) - 1
    rows = keep[c.unit]
    unit, value, count = new[c.unit[rows]], c.value[rows], c.count[rows].astype(np.int64)
    starts = np.searchsorted(unit, np.arange(keep.sum() + 1))
    labels = c.value_labels
    samples, undefined, done = [], 0, 0
    for w in bootstrap_weights(prof.mult, resamples, seed):
        for row in w.astype(np.int64):
            if done == resamples:
                break
            drawn = np.repeat(prof.unit, row)
            sizes = np.diff(starts)[drawn]
            triple = np.repeat(starts[drawn], sizes) + (np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes,
                                                                                          sizes))
            copy_id = np.repeat(np.arange(len(drawn)), sizes)
            reps = count[triple]
            result = krippendorff_alpha(np.repeat(copy_id, reps), np.arange(reps.sum()),
                                        np.repeat(labels[value[triple]], reps), level)
            if result.value is None:
                undefined += 1
            else:
                samples.append(result.value)
            done += 1
    return percentile_ci(samples), undefined, done


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--units", type=int, default=20_000)
    parser.add_argument("--coders", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--loop-resamples", type=int, default=1000)
    args = parser.parse_args()
    out = []
    for kind in ("nominal, 5 labels", "interval, ratings 1-6", "interval, continuous values"):
        u, c, v, level = data(kind, args.units, args.coders)
        krippendorff_alpha_ci95(u, c, v, level, resamples=10)  # warm-up (imports, caches)
        start = time.perf_counter()
        ours = krippendorff_alpha_ci95(u, c, v, level, resamples=args.resamples)
        fast = time.perf_counter() - start
        start = time.perf_counter()
        ci, undefined, done = plain_loop(u, c, v, level, min(args.loop_resamples, args.resamples))
        loop = (time.perf_counter() - start) * args.resamples / done
        same = (ci is not None and ours.ci95 is not None and np.allclose(ci, ours.ci95, atol=1e-12)
                if done == args.resamples else None)
        out.append({"data": kind, "coders": args.coders, "units": args.units, "resamples": args.resamples,
                    "ci95": ours.ci95, "vectorized_s": round(fast, 3),
                    "plain_loop_s": round(loop, 2), "loop_resamples_run": done,
                    "ratio_loop_over_vectorized": round(loop / fast, 1), "same_interval": same,
                    "under_1_s": fast < 1.0})
        print(json.dumps(out[-1]), flush=True)


if __name__ == "__main__":
    main()
