"""Coverage of the implicit-personalization Delta interval (evaluation/personalization/ip_effect.py):
the report's rule (bias-corrected, expanded percentile; what `cue_effect` gives) against
the plain percentile interval it replaced (issue 31 item 12), on simulated probes with a
known Delta.

A simulated probe: Q questions, each with its own true shift mu_q ~ Normal(Delta, 0.5) and
`--samples` label-rule answers under each cue (an answer is b1's with probability
0.5 + mu_q / 4 under b1 and 0.5 - mu_q / 4 under b0, clipped to [0.02, 0.98]), so d_q is a
difference of two sample shares (r = +1 / -1). Delta = 0.4: the true mean of d_q is
computed from the clipped probabilities by a 200,000-question draw (seed 1). Each probe
set is drawn from default_rng(seed); the intervals use their own fixed seed 0 as the
report does.

    .venv/bin/python bench/ip_ci_coverage.py [--reps 2000] [--questions 5 8] [--samples 10]
        [--normal]

--normal draws d_q ~ Normal(0.4, 0.5) directly instead (the textbook case).
Prints, per Q, the share of probes whose interval holds the true Delta, for both rules.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation.bootstrap import percentile_ci, resample_blocks  # noqa: E402
from evaluation.personalization.ip_effect import delta_interval  # noqa: E402

DELTA, SPREAD = 0.4, 0.5


def shares(mu):
    """(P(b1's answer | b1), P(b1's answer | b0)) of questions with true shifts `mu`."""
    return np.clip(0.5 + mu / 4, 0.02, 0.98), np.clip(0.5 - mu / 4, 0.02, 0.98)


def true_delta(normal: bool) -> float:
    if normal:
        return DELTA
    p1, p0 = shares(np.random.default_rng(1).normal(DELTA, SPREAD, 200_000))
    return float(np.mean(2 * (p1 - p0)))  # E d_q: r = +1/-1, so a share difference counts twice


def draw_d(rng, questions: int, samples: int, normal: bool) -> np.ndarray:
    mu = rng.normal(DELTA, SPREAD, questions)
    if normal:
        return mu
    p1, p0 = shares(mu)
    return 2 * (rng.binomial(samples, p1) - rng.binomial(samples, p0)) / samples


def percentile_interval(d: np.ndarray) -> list[float] | None:
    """The replaced rule: percentiles 2.5 and 97.5 of 2,000 resample means (seed 0)."""
    return percentile_ci(np.concatenate([d[idx].mean(axis=1) for idx in resample_blocks(len(d), 2000, 0)]))


def coverage(questions: int, reps: int, samples: int = 10, normal: bool = False, seed: int = 0) -> dict:
    """{"report_rule", "percentile"}: the share of `reps` simulated probes whose interval
    holds the true Delta."""
    rng = np.random.default_rng(seed)
    truth = true_delta(normal)
    hits = {"report_rule": 0, "percentile": 0}
    for _ in range(reps):
        d = draw_d(rng, questions, samples, normal)
        for name, ci in (("report_rule", delta_interval(d).ci95), ("percentile", percentile_interval(d))):
            hits[name] += ci is not None and ci[0] <= truth <= ci[1]
    return {name: count / reps for name, count in hits.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--questions", type=int, nargs="+", default=[5, 8])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--normal", action="store_true")
    args = parser.parse_args()
    out = {q: coverage(q, args.reps, args.samples, args.normal) for q in args.questions}
    print(json.dumps({"reps": args.reps, "normal": args.normal, "coverage": out}, indent=1))


if __name__ == "__main__":
    main()
