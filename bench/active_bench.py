"""What `allocation: "judge_uncertain"` saves against a uniform `human_share` at the same
human budget (issue 35): seeded simulations of pairwise studies through the product's own
rule and estimators.

Each study has N items; item i has a true probability q_i = sigmoid(z_i) that humans prefer
candidate A (z_i ~ N(0, sd_z): most items clear-cut when sd_z is large) and one human answer
y_i ~ Bernoulli(q_i). The judge scores both candidates on a GEMBA-like 0-100 scale: score A =
50 + 10 (z_i + e_i) + bias, score B = 50, rounded to whole points (e_i ~ N(0, judge noise));
its prediction of the human answer is f_i = 1 / (1 + 3^(-(A - B) / s)), the rule's implied
probability (s = the median positive margin of the study). In the last setting the judge
gives a probability sigmoid(z_i + e_i) instead (the rule's one-value branch). Both designs
use the same predictions and the same budget (budget x N expected human items):

- uniform: `human_subset(items, budget, seed)` (exactly ceil(budget N) items), PPI++
  (`ppi.ppi_mean`);
- judge_uncertain: pi_i = `judge_uncertainty.offer_probabilities` of the judge's two scores
  (what annotate/studies/human_draw.py stores), one Bernoulli(pi_i) each
  (`human_subset.active_draw`), the IPW PPI++ estimate (`active_inference.active_mean`).

The truth is the population mean of q (0.5 + a small shift from the bias-free z; computed
by Monte Carlo once per setting with 2,000,000 draws). Printed per setting: coverage of the
95% intervals, mean widths, the width ratio uniform / judge_uncertain, and the human items
uniform sampling would need for judge_uncertain's width (ratio squared x budget x N).

    .venv/bin/python bench/active_bench.py [--studies 1000] [--items 1000] [--seed 0]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.prediction_powered.active_inference import active_mean  # noqa: E402
from evaluation.prediction_powered.human_subset import active_draw, human_subset  # noqa: E402
from evaluation.prediction_powered.judge_uncertainty import implied_probabilities, offer_probabilities  # noqa: E402
from evaluation.prediction_powered.ppi import ppi_mean  # noqa: E402

# (label, sd of z, judge noise sd, judge bias in points; None: the judge gives a probability)
SETTINGS = [
    ("clear-cut items (sd_z 3), good judge (noise 0.5, bias +5)", 3.0, 0.5, 5.0),
    ("mixed items (sd_z 1.5), good judge (noise 0.5, bias +5)", 1.5, 0.5, 5.0),
    ("clear-cut items (sd_z 3), poor judge (noise 3, bias +5)", 3.0, 3.0, 5.0),
    ("clear-cut items (sd_z 3), judge gives sigmoid(z + N(0, 0.3))", 3.0, 0.3, None),
]


def study(rng, n, sd_z, noise, bias):
    """(human answers y, judge values per item, judge predictions f)."""
    z = rng.normal(0, sd_z, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(float)
    if bias is None:  # one value in [0, 1] per item: the rule reads it as the judge's probability
        p = 1 / (1 + np.exp(-(z + rng.normal(0, noise, n))))
        return y, [[float(x)] for x in p], p
    a = np.round(50 + 10 * (z + rng.normal(0, noise, n)) + bias)
    scores = [[float(x), 50.0] for x in a]
    f = implied_probabilities(scores)
    f = np.where(a >= 50, f, 1 - f)  # the judge's probability that A is preferred
    return y, scores, f


def truth(sd_z, seed):
    z = np.random.default_rng(seed).normal(0, sd_z, 2_000_000)
    return float(np.mean(1 / (1 + np.exp(-z))))


def run(setting, studies, n, budget, seed):
    _label, sd_z, noise, bias = setting
    target = truth(sd_z, seed + 99)
    out = {key: {"hits": 0, "widths": [], "nulls": 0} for key in ("uniform", "active")}
    ids = list(range(n))
    for s in range(studies):
        y, scores, f = study(np.random.default_rng(seed + s), n, sd_z, noise, bias)
        labeled = human_subset(ids, budget, seed=seed + s)
        uniform = ppi_mean(labeled, y[labeled].tolist(), ids, f.tolist())
        pi = offer_probabilities(scores, budget)
        took = np.flatnonzero(active_draw(pi, seed + s))
        active = active_mean(ids, pi, ids, f, took.tolist(), y[took].tolist())
        for key, ci in (("uniform", uniform.ci95), ("active", active.ci95)):
            if ci is None:
                out[key]["nulls"] += 1
                continue
            out[key]["hits"] += ci[0] <= target <= ci[1]
            out[key]["widths"].append(ci[1] - ci[0])
    return {key: (v["hits"] / max(1, studies - v["nulls"]), float(np.mean(v["widths"])), v["nulls"])
            for key, v in out.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--studies", type=int, default=1000)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    began = time.perf_counter()
    print(f"{args.studies} studies of {args.items} items per row, seed {args.seed}; 95% intervals\n")
    print("| items, judge | budget | coverage uniform / judge_uncertain | mean width uniform / judge_uncertain "
          "| uniform / judge_uncertain width | uniform human items for the same width |")
    print("| --- | --- | --- | --- | --- | --- |")
    for setting in SETTINGS:
        for budget in (0.1, 0.3):
            r = run(setting, args.studies, args.items, budget, args.seed)
            (cu, wu, nu), (ca, wa, na) = r["uniform"], r["active"]
            ratio = wu / wa
            nulls = f" ({nu} / {na} null)" if nu or na else ""
            print(f"| {setting[0]} | {budget:g} | {cu:.1%} / {ca:.1%} | {wu:.4f} / {wa:.4f} | {ratio:.2f}x "
                  f"| {ratio ** 2 * budget * args.items:.0f} (vs {budget * args.items:.0f}){nulls} |", flush=True)
    print(f"\n{time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    main()
