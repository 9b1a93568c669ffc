"""The error rate of optional stopping (the design's `stopping` block).

A researcher who looks at the report every `every` judgments and stops as soon as a target
is met (an interval excluding the null, two systems' ranks separated) rejects more often
than the fixed-n test's nominal 5%: each look is another chance for noise to cross. This
simulates it. Every simulated study (the same seeds as `power`) is run to its full size and
its judgments, in the order the engine handed them out, are looked at after every `every`
judgments and at the end; the study stops at the first look where the target is met.

Under the null (the target's two systems given equal strength: both set to their mean, the
others unchanged) the share of studies that stop with the target met is the rule's type-I
error, the share whose full study meets it is the fixed-n test's; under the design the same
two shares are the powers. Judgments used: the look a study stopped at, or the full study.
With one look (every >= the study's judgments) both rules are the same test.
"""
import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from .design_spec import Design
from .power import judge, seed_of, simulate, spread


def null_design(design: Design, target: dict) -> Design:
    """The design with the target's two systems equally strong (their mean)."""
    pair = (target["system"], target.get("against") or next(s for s in design.systems if s != target["system"])) \
        if target["test"] == "win_rate" else (target["a"], target["b"])
    middle = sum(design.systems[s] for s in pair) / 2
    return replace(design, systems={s: (middle if s in pair else v) for s, v in design.systems.items()})


def looks(n: int, every: int) -> list[int]:
    """The judgments after which the report is looked at: every `every`, and the last."""
    return [k for k in range(every, n, every)] + [n]


def _run(design: Design, sims: range, progress: Callable[[int], None] | None = None) -> np.ndarray:
    """Per simulated study: (fixed met, stopping met, judgments used, judgments in full)."""
    assert design.stopping is not None
    target = design.targets[design.stopping["target"]]
    out = np.zeros((len(sims), 4))
    for row, sim in enumerate(sims):
        study = simulate(design, seed_of(design, sim))
        used, stopped = study.n, False
        for k in looks(study.n, design.stopping["every"]):
            if judge(target, study.prefix(k) if k < study.n else study)[0]:
                used, stopped = k, True
                break
        fixed = judge(target, study)[0] if used < study.n else stopped  # the last look is the full study
        out[row] = (fixed, stopped, used, study.n)
        if progress is not None:
            progress(1)
    return out


def _share(values: np.ndarray) -> tuple[float, float]:
    p = float(values.mean())
    return p, math.sqrt(p * (1 - p) / len(values))


def stopping_error(design: Design, workers: int | None = None,
                   progress: Callable[[int], None] | None = None) -> dict:
    """The `stopping` entry of the result (docs/statistics.md, "Optional stopping")."""
    assert design.stopping is not None
    target = design.targets[design.stopping["target"]]
    out: dict = {"target": design.stopping["target"], "test": target["test"], "every": design.stopping["every"],
                 "n_simulations": design.simulations}
    for label, d in (("null", null_design(design, target)), ("design", design)):
        rows = np.concatenate(spread(_run, d, workers, progress))
        fixed, fixed_se = _share(rows[:, 0])
        stop, stop_se = _share(rows[:, 1])
        name = "type1_error" if label == "null" else "power"
        out.update({f"{name}_fixed": fixed, f"{name}_fixed_se": fixed_se, f"{name}_stopping": stop,
                    f"{name}_stopping_se": stop_se, f"mean_judgments_{label}": float(rows[:, 2].mean())})
        out["judgments_fixed"] = float(rows[:, 3].mean())
        out["looks"] = len(looks(int(rows[:, 3].max()), design.stopping["every"]))
    out["null_systems"] = null_design(design, target).systems
    out["type1_error_inflation"] = out["type1_error_stopping"] - out["type1_error_fixed"]
    return out
