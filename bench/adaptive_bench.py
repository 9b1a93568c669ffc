"""Adaptive vs balanced allocation at the same budget (statistics.md, "Adaptive allocation";
issue 34 item 2): seeded simulated studies of 5 systems with known Bradley-Terry strengths.

Each study: `--budget` judgments, each its own item (one pair per item, one annotator: the
item bootstrap then resamples judgments); no ties. Designs, each over the same `--studies`
seeds:
- balanced: a uniform choice among the least-judged pairs at every judgment;
- adaptive: evaluation.allocation.adaptive's rule (cold start to 10 per pair, then the pair with the
  largest expected reduction of the summed strength variance with probability
  1 - share + share / K, every other pair share / K).
Per design: the report's ranking (evaluation.bradley_terry.bt_ranking: BT MLE, item bootstrap,
`--resamples`, default the report's 2,000) -> mean width of the strength intervals and
their coverage of the true (centred) strengths; the Fisher-information sd at the true
strengths and the realised counts (what the rule optimises); for the adaptive design the
bias of the inverse-probability-weighted win rates (evaluation.allocation.adaptive.ipw_win_rates)
against the true uniform-pair win rates, the plain win rate's bias beside it, and the IPW
intervals' coverage.

    .venv/bin/python bench/adaptive_bench.py [--studies 200] [--budget 600]
        [--strengths=-2,-1,0,1,2] [--resamples 2000] [--uniform-share 0.2]

It first prints what the rule could give at best: the Fisher sd with expected counts at the
true strengths, relative to balanced, for pi proportional to the reduction, this rule, and
about the A-optimal design (no cold start, no floor).
"""
import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.allocation.adaptive import (  # noqa: E402
    constrained_covariance,
    expected_reductions,
    information_matrix,
    ipw_win_rates,
    pair_codes,
)
from evaluation.allocation.adaptive_simulation import simulate, true_win_rates  # noqa: E402
from evaluation.bradley_terry import bt_ranking, win_matrix  # noqa: E402


def fluid_sd(theta, budget, rule, share=0.2, min_per_pair=10):
    """Mean Fisher sd of the strengths when expected counts (not draws) follow a rule at the
    TRUE strengths: "balanced", "proportional" (pi ~ reduction) or "greedy" (this rule),
    after a cold start of min_per_pair per pair; "optimal" = greedy with share 0 over
    20x the budget from 1 per pair, rescaled to the budget (about the A-optimal design)."""
    s = len(theta)
    a, b = pair_codes(s)
    k = len(a)
    if rule == "optimal":
        return fluid_sd(theta, 20 * budget, "greedy", 0.0, 1) * math.sqrt(20)
    n = np.zeros((s, s))
    n[a, b] = n[b, a] = min_per_pair
    for _ in range(budget - min_per_pair * k):
        r = expected_reductions(n, theta)
        if rule == "balanced":
            q = np.full(k, 1 / k)
        elif rule == "proportional":
            q = (1 - share) * r / r.sum() + share / k
        else:
            top = r >= r.max() * (1 - 1e-12)
            q = (1 - share) * top / top.sum() + share / k
        n[a, b] += q
        n[b, a] += q
    return np.sqrt(np.diag(constrained_covariance(information_matrix(n, theta)))).mean()


def design_figures(sim, theta, resamples):
    """Per study: mean interval width, hits of the true strengths, model sd, undefined."""
    truth = theta - theta.mean()
    widths, hits, sds, refused = [], [], [], 0
    for k in range(sim.first.shape[1]):
        c = sim.study(k)
        out = bt_ranking(c, resamples=resamples)
        w = win_matrix(c)
        sds.append(np.sqrt(np.diag(constrained_covariance(information_matrix(w + w.T, theta)))).mean())
        if out["ranking"] is None or any(r["ci95"] is None for r in out["ranking"].values()):
            refused += 1
            continue
        ci = np.array([out["ranking"][s]["ci95"] for s in c.systems])
        widths.append((ci[:, 1] - ci[:, 0]).mean())
        hits.extend(((ci[:, 0] <= truth) & (truth <= ci[:, 1])).tolist())
    return np.array(widths), np.array(hits), np.array(sds), refused


def ipw_figures(sim, theta, resamples):
    """(IPW estimates (B, S), plain win rates (B, S), IPW interval hits)."""
    truth = true_win_rates(theta)
    est, plain, hits = [], [], []
    for k in range(sim.first.shape[1]):
        c = sim.study(k)
        rows = ipw_win_rates(c, sim.probability[:, k], resamples=resamples)
        est.append([r["win_rate"] for r in rows])
        plain.append([r["win_rate"] for r in ipw_win_rates(c, np.ones(len(c)), resamples=resamples)])
        hits.extend(r["ci95"] is not None and r["ci95"][0] <= t <= r["ci95"][1] for r, t in zip(rows, truth))
    return np.array(est), np.array(plain), np.array(hits)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--budget", type=int, default=600)
    parser.add_argument("--strengths", default="-2,-1,0,1,2")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--uniform-share", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    theta = np.array([float(v) for v in args.strengths.split(",")])
    start = time.perf_counter()
    base = fluid_sd(theta, args.budget, "balanced")
    ratios = {rule: fluid_sd(theta, args.budget, rule, args.uniform_share) / base
              for rule in ("proportional", "greedy", "optimal")}
    print("expected counts at the true strengths, Fisher sd / balanced's: "
          + ", ".join(f"{rule} {ratio:.3f}" for rule, ratio in ratios.items()))
    print(f"{len(theta)} systems, strengths {theta.tolist()}, {args.budget} judgments per study (one item each), "
          f"{args.studies} studies per design, {args.resamples} bootstrap resamples, "
          f"uniform share {args.uniform_share}")
    sims = {"balanced": simulate(theta, args.budget, args.studies, args.seed, adaptive=False),
            "adaptive": simulate(theta, args.budget, args.studies, args.seed, uniform_share=args.uniform_share)}
    print(f"simulated in {time.perf_counter() - start:.1f} s", flush=True)
    figures = {name: design_figures(sim, theta, args.resamples) for name, sim in sims.items()}
    print("\n| design | mean CI width (log strength) | coverage of true strengths | Fisher sd (mean) "
          "| studies without intervals |")
    print("| --- | --- | --- | --- | --- |")
    for name, (widths, hits, sds, refused) in figures.items():
        se = hits.std() / math.sqrt(len(hits)) if len(hits) else float("nan")
        print(f"| {name} | {widths.mean():.4f} (sd {widths.std(ddof=1):.4f}, n = {len(widths)}) "
              f"| {hits.mean():.3f} +- {se:.3f} (n = {len(hits)}) | {sds.mean():.4f} | {refused} |")
    bw, aw = figures["balanced"][0].mean(), figures["adaptive"][0].mean()
    print(f"\nadaptive / balanced: width {aw / bw:.3f} ({1 - aw / bw:+.1%} narrower; target >= 20%), "
          f"Fisher sd {figures['adaptive'][2].mean() / figures['balanced'][2].mean():.3f}")
    est, plain, hits = ipw_figures(sims["adaptive"], theta, args.resamples)
    truth = true_win_rates(theta)
    se = est.std(axis=0, ddof=1) / math.sqrt(len(est))
    covered = hits.reshape(len(est), len(theta)).mean(axis=0)
    print("\n| system | true win rate | IPW mean - truth (MC se) | plain mean - truth | IPW interval coverage |")
    print("| --- | --- | --- | --- | --- |")
    for k in range(len(theta)):
        print(f"| s{k} | {truth[k]:.4f} | {est[:, k].mean() - truth[k]:+.4f} ({se[k]:.4f}) "
              f"| {plain[:, k].mean() - truth[k]:+.4f} | {covered[k]:.3f} |")
    print(f"\nIPW interval coverage {hits.mean():.3f} (n = {len(hits)}); "
          f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
