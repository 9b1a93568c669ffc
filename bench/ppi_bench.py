"""Coverage and width of prediction-powered estimates (evaluation/prediction_powered/ppi.py,
evaluation/prediction_powered/active_inference.py), seeded simulations against a known true mean:

1. A judge with a known bias scores every item, humans a `human_share` subset drawn by
   `human_subset`: how often the PPI++ interval, the classical (human-only) interval and the
   judge-only interval (mean of the predictions -+ 1.96 sd / sqrt(N)) cover the true mean,
   their widths, and ess_ratio, for a good and a poor judge of a scalar score and for a
   biased judge of a win (0/1, the judge gives a probability).
2. Active vs uniform sampling at the same budget (expected labeled items): probabilities
   from the judge's uncertainty sqrt(p (1 - p)) with a floor (`sampling_probabilities`), on
   wins whose p ~ Beta(0.2, 0.2) (most items clear-cut) and a judge calibrated up to noise,
   against uniform probabilities budget / N, both estimated by `active_mean`, and PPI++ on a
   uniform subset of exactly `budget` items.

Each study draws fresh items from the population, so coverage is of the population mean.

    .venv/bin/python bench/ppi_bench.py [--studies 2000] [--items 1000] [--share 0.1] [--seed 0]
"""
import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import stdtrit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.bootstrap import Z975  # noqa: E402
from evaluation.prediction_powered.active_inference import active_mean, bernoulli_uncertainty, sampling_probabilities  # noqa: E402
from evaluation.prediction_powered.human_subset import active_draw, human_subset  # noqa: E402
from evaluation.prediction_powered.ppi import ppi_arrays, ppi_mean  # noqa: E402

SCORE_MEAN = 3.0  # population mean of the scalar score (quality ~ N(3, 0.8), human noise sd 0.5)
WIN_MEAN = 0.5  # population win rate: p ~ Beta(0.5, 0.5), a win ~ Bernoulli(p)
FLOOR = 0.02


def score_study(rng, n, judge):
    """(human score, judge score) per item: humans see quality plus noise; the good judge
    quality + 0.3 + N(0, 0.3), the poor one 0.3 quality + 2.4 + N(0, 1) (both biased)."""
    quality = rng.normal(SCORE_MEAN, 0.8, n)
    y = quality + rng.normal(0, 0.5, n)
    f = quality + 0.3 + rng.normal(0, 0.3, n) if judge == "good" else 0.3 * quality + 2.4 + rng.normal(0, 1.0, n)
    return y, f


def win_study(rng, n):
    """(win, judge's probability) per item: the judge says p + 0.1 + N(0, 0.05), clipped."""
    p = rng.beta(0.5, 0.5, n)
    y = (rng.random(n) < p).astype(float)
    return y, np.clip(p + 0.1 + rng.normal(0, 0.05, n), 0.001, 0.999)


def confident_study(rng, n):
    """(win, judge's probability) per item for active sampling: p ~ Beta(0.2, 0.2) (most
    items clear-cut), the judge calibrated up to noise on the logit scale, sd 0.3."""
    p = np.clip(rng.beta(0.2, 0.2, n), 1e-6, 1 - 1e-6)
    y = (rng.random(n) < p).astype(float)
    return y, 1 / (1 + np.exp(-(np.log(p / (1 - p)) + rng.normal(0, 0.3, n))))


def covers(ci, truth):
    return ci is not None and ci[0] <= truth <= ci[1]


def coverage_row(name, truth, studies, items, share, seed, draw):
    hits = {"ppi": 0, "classical": 0, "judge": 0}
    widths = {"ppi": [], "classical": [], "judge": []}
    ess, nulls = [], 0
    ids = list(range(items))
    for s in range(studies):
        y, f = draw(np.random.default_rng(seed + s), items)
        labeled = human_subset(ids, share, seed=seed + s)
        r = ppi_mean(labeled, y[labeled].tolist(), ids, f.tolist())
        if r.ci95 is None:
            nulls += 1
            continue
        judge_se = float(np.std(f, ddof=1)) / math.sqrt(items)
        judge_ci = [float(f.mean()) - Z975 * judge_se, float(f.mean()) + Z975 * judge_se]
        for key, ci in (("ppi", r.ci95), ("classical", r.classical_ci95), ("judge", judge_ci)):
            hits[key] += covers(ci, truth)
            widths[key].append(ci[1] - ci[0])
        ess.append(r.ess_ratio)
    done = studies - nulls
    return {"name": name, "n": done, "nulls": nulls, **{f"cov_{k}": hits[k] / done for k in hits},
            **{f"w_{k}": float(np.mean(widths[k])) for k in widths}, "ess": float(np.mean(ess)),
            "lam": None}


def small_n_row(truth, studies, n_labeled, seed, draw):
    """(PPI++ coverage, classical coverage) with n_labeled labeled items of 10 n_labeled,
    through ppi_arrays (ppi_mean refuses below MIN_LABELED: this measures why); the classical
    interval is intervals.t_interval's, its t quantile computed once."""
    hits = [0, 0]
    t975 = float(stdtrit(n_labeled - 1, 0.975))
    for s in range(studies):
        y, f = draw(np.random.default_rng(seed + s), 10 * n_labeled)
        r = ppi_arrays(y[:n_labeled], f[:n_labeled], f[n_labeled:])  # items are exchangeable
        hits[0] += r is not None and covers(r.ci95, truth)
        half = t975 * float(np.std(y[:n_labeled], ddof=1)) / math.sqrt(n_labeled)
        hits[1] += abs(float(y[:n_labeled].mean()) - truth) <= half
    return hits[0] / studies, hits[1] / studies


def active_row(studies, items, budget, seed):
    out = {k: {"hits": 0, "widths": []} for k in ("active", "uniform", "ppi")}
    ids = list(range(items))
    for s in range(studies):
        rng = np.random.default_rng(seed + s)
        y, f = confident_study(rng, items)
        for key, pi in (("active", sampling_probabilities(bernoulli_uncertainty(f), budget, FLOOR)),
                        ("uniform", np.full(items, budget / items))):
            took = np.flatnonzero(active_draw(pi, seed=seed + s))
            r = active_mean(ids, pi, ids, f, took.tolist(), y[took].tolist())
            out[key]["hits"] += covers(r.ci95, WIN_MEAN)
            out[key]["widths"].append(r.ci95[1] - r.ci95[0] if r.ci95 else np.nan)
        labeled = human_subset(ids, budget / items, seed=seed + s)
        r = ppi_mean(labeled, y[labeled].tolist(), ids, f.tolist())
        out["ppi"]["hits"] += covers(r.ci95, WIN_MEAN)
        out["ppi"]["widths"].append(r.ci95[1] - r.ci95[0] if r.ci95 else np.nan)
    return {k: (v["hits"] / studies, float(np.nanmean(v["widths"]))) for k, v in out.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--share", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    began = time.perf_counter()
    n_labeled = round(args.items * args.share)
    print(f"{args.studies} studies of {args.items} items, {n_labeled} labeled by humans (human_share "
          f"{args.share}), seed {args.seed}; 95% intervals\n")
    rows = [coverage_row("score, good judge (bias +0.3)", SCORE_MEAN, args.studies, args.items, args.share,
                         args.seed, lambda rng, n: score_study(rng, n, "good")),
            coverage_row("score, poor judge (bias +0.3)", SCORE_MEAN, args.studies, args.items, args.share,
                         args.seed, lambda rng, n: score_study(rng, n, "poor")),
            coverage_row("win, judge p + 0.1", WIN_MEAN, args.studies, args.items, args.share, args.seed,
                         win_study)]
    print("| study | coverage PPI++ / classical / judge only | mean width PPI++ / classical / judge only "
          "| classical / PPI width | ess_ratio (mean) |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['name']} | {r['cov_ppi']:.1%} / {r['cov_classical']:.1%} / {r['cov_judge']:.1%} "
              f"| {r['w_ppi']:.4f} / {r['w_classical']:.4f} / {r['w_judge']:.4f} "
              f"| {r['w_classical'] / r['w_ppi']:.2f}x | {r['ess']:.2f} |"
              + (f" ({r['nulls']} null)" if r["nulls"] else ""))
    print(f"\nActive vs uniform sampling, wins with p ~ Beta(0.2, 0.2), calibrated judge, budget {n_labeled} "
          f"expected labels, floor {FLOOR}:\n")
    act = active_row(args.studies, args.items, n_labeled, args.seed)
    print("| design | coverage | mean width | width / active width |")
    print("| --- | --- | --- | --- |")
    for key, label in (("active", "active: pi from sqrt(p (1 - p)), IPW PPI++"),
                       ("uniform", "uniform pi = budget / N, same estimator"),
                       ("ppi", f"PPI++ on a uniform subset of exactly {n_labeled}")):
        cov, width = act[key]
        print(f"| {label} | {cov:.1%} | {width:.4f} | {width / act['active'][1]:.2f}x |")
    small = 2 * args.studies
    print(f"\nCoverage by labeled items (items = 10 x labeled; {small} studies each), PPI++ / classical:\n")
    print("| labeled items | score, good judge | win, judge p + 0.1 |")
    print("| --- | --- | --- |")
    for n in (20, 30, 50):
        good = small_n_row(SCORE_MEAN, small, n, args.seed, lambda rng, k: score_study(rng, k, "good"))
        win = small_n_row(WIN_MEAN, small, n, args.seed, win_study)
        print(f"| {n} | {good[0]:.1%} / {good[1]:.1%} | {win[0]:.1%} / {win[1]:.1%} |")
    print(f"\n{time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    main()
