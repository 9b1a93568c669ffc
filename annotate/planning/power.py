"""Power of a planned study by simulation (statistics.md, "Planning a study").

Each simulated study is one run of the engine's rules (replay.ReplayEngine) over `items`
items that hold every system as a candidate, `annotators` annotators asking for work in a
seeded random order until nothing is left for anyone; each shown pair is answered by the
data-generating model below; then the report's own functions decide: the Bradley-Terry
strengths with their item-bootstrap intervals (evaluation.bradley_terry.bt_ranking) and Krippendorff's
alpha with its interval (evaluation.alpha_ci). Nothing about the statistics is re-derived.

Data-generating model, for annotator a judging system f (shown first) against s on item i:
  log-odds(f chosen) = (theta_f + z_if + u_af) - (theta_s + z_is + u_as) + position_bias,
with z_ik ~ N(0, item_sd) (items favour systems differently: judgments of one item are
correlated, the design effect) and u_ak ~ N(0, annotator_sd) (annotators' own tastes). The
logistic link is the annotator's noise; no ties.

Targets (power = share of simulated studies meeting it, se = its Monte-Carlo standard error
sqrt(p (1 - p) / n)):
- win_rate {system, against}: on the judgments comparing the two, the report's strengths of
  those two systems has an interval for `system`'s strength that excludes 0 (win rate 0.5);
  width in win-rate units, sigmoid(2 hi) - sigmoid(2 lo) (two strengths of mean 0).
- rank_separation {a, b}: the strengths' rank intervals of a and b do not overlap; width =
  mean width of their strength intervals (log-strength units).
- alpha_width {width}: alpha's 95% interval of the choice over (item, shown pair) units is
  at most `width` wide; width in alpha units.
- scalar_difference {a, b} (scalar kinds): planning.scalar, its model and test.

A simulated study keeps its judgments in the order the engine handed them out, so a prefix
is the study stopped early (planning.stopping).
"""
import math
import multiprocessing
import os
import random
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from evaluation.alpha_ci import krippendorff_alpha_ci95
from evaluation.bradley_terry import Comparisons, bt_ranking
from evaluation.vocabulary import RANKED

from .design_spec import Design
from .replay import ReplayEngine
from .scalar import ScalarStudy, evaluate_difference, simulate_scalar

CANDIDATES_KEY = "candidates"
SOLVE_LIMITS = {"items": (2, 5000), "annotations_per_item": (1, None)}


def _items(systems):
    return [{"input": "", "reference": "", "candidates": [{"id": s, "text": ""} for s in systems]}]


def simulate_study(design: Design, seed: int) -> tuple[Comparisons, np.ndarray]:
    """One simulated study: (the comparisons, the item-and-pair unit of each)."""
    systems = list(design.systems)
    theta = np.array([design.systems[s] for s in systems], dtype=float)
    index = {s: k for k, s in enumerate(systems)}
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, design.item_sd, (design.items, len(systems))) if design.item_sd else None
    u = rng.normal(0.0, design.annotator_sd, (design.annotators, len(systems))) if design.annotator_sd else None
    item_data = _items(systems) * design.items
    engine = ReplayEngine(design.kind, item_data, design.annotations_per_item, {}, True,
                          lambda item, annotator: random.Random(f"design:{seed}:{item}:{annotator}"))
    active = list(range(design.annotators))
    rows = []
    while active:
        pick = int(rng.integers(len(active)))
        got = engine.next(active[pick])
        if got is None:
            active.pop(pick)
            continue
        item, shown = got
        shown_first, shown_second = (index[c] for c in shown[CANDIDATES_KEY])
        rows.append((item, active[pick], shown_first, shown_second))
    table = np.array(rows, dtype=np.int64).reshape(-1, 4)
    item, annotator, first, second = (table[:, k] for k in range(4))
    logit = theta[first] - theta[second] + design.position_bias
    if z is not None:
        logit += z[item, first] - z[item, second]
    if u is not None:
        logit += u[annotator, first] - u[annotator, second]
    first_wins = rng.random(len(rows)) < 1.0 / (1.0 + np.exp(-logit))
    comparisons = Comparisons(systems, item, first, second, first_wins.astype(float))
    low, high = np.minimum(first, second), np.maximum(first, second)
    units = item * len(systems) ** 2 + low * len(systems) + high
    return comparisons, np.stack([units, annotator, np.where(first_wins, first, second)])


def _restrict(c: Comparisons, a: str, b: str) -> Comparisons:
    ia, ib = c.systems.index(a), c.systems.index(b)
    keep = ((c.first == ia) & (c.second == ib)) | ((c.first == ib) & (c.second == ia))
    recode = np.where(c.first[keep] == ia, 0, 1), np.where(c.second[keep] == ia, 0, 1)
    return Comparisons([a, b], c.item[keep], recode[0], recode[1], c.credit[keep])


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def evaluate(target: dict, c: Comparisons, votes: np.ndarray) -> tuple[bool, float | None]:
    """(met, interval width or None) of one target on one simulated study."""
    test = target["test"]
    if test == "win_rate":
        against = target.get("against") or next(s for s in c.systems if s != target["system"])
        result = bt_ranking(_restrict(c, target["system"], against))[RANKED]
        ci = result and result[target["system"]]["ci95"]
        if not ci:
            return False, None
        return bool(ci[0] > 0 or ci[1] < 0), _sigmoid(2 * ci[1]) - _sigmoid(2 * ci[0])
    if test == "rank_separation":
        result = bt_ranking(c)[RANKED]
        if not result or not result[target["a"]]["rank_ci95"]:
            return False, None
        ra, rb = result[target["a"]]["rank_ci95"], result[target["b"]]["rank_ci95"]
        widths = [result[s]["ci95"][1] - result[s]["ci95"][0] for s in (target["a"], target["b"])
                  if result[s]["ci95"]]
        return bool(ra[1] < rb[0] or rb[1] < ra[0]), (sum(widths) / len(widths) if widths else None)
    units, coders, values = votes
    ci = krippendorff_alpha_ci95(units, coders, values, "nominal", clusters=units // len(c.systems) ** 2).ci95
    if ci is None:
        return False, None
    width = ci[1] - ci[0]
    return bool(width <= target["width"]), width


@dataclass
class PairStudy:
    """One simulated study of a pairwise kind, its judgments in the order given."""

    comparisons: Comparisons
    votes: np.ndarray

    @property
    def n(self) -> int:
        return len(self.comparisons.item)

    def prefix(self, k: int) -> "PairStudy":
        c = self.comparisons
        return PairStudy(Comparisons(c.systems, c.item[:k], c.first[:k], c.second[:k], c.credit[:k]),
                         self.votes[:, :k])


Study = PairStudy | ScalarStudy


def simulate(design: Design, seed: int) -> Study:
    """One simulated study of the design's kind."""
    if design.scalar:
        return simulate_scalar(design, seed)
    return PairStudy(*simulate_study(design, seed))


def judge(target: dict, study: Study) -> tuple[bool, float | None]:
    """(met, interval width or None) of one target on one simulated study of any kind."""
    if isinstance(study, ScalarStudy):
        return evaluate_difference(target, study)
    return evaluate(target, study.comparisons, study.votes)


def seed_of(design: Design, sim: int) -> int:
    return design.seed * 1_000_003 + sim


def _run(design: Design, sims: range, progress: Callable[[int], None] | None = None
         ) -> tuple[np.ndarray, list[list[float]]]:
    met = np.zeros((len(design.targets), len(sims)), dtype=bool)
    widths: list[list[float]] = [[] for _ in design.targets]
    for column, sim in enumerate(sims):
        study = simulate(design, seed_of(design, sim))
        for t, target in enumerate(design.targets):
            ok, width = judge(target, study)
            met[t, column] = ok
            if width is not None:
                widths[t].append(width)
        if progress is not None:
            progress(1)
    return met, widths


def spread(fn, design: Design, workers: int | None, progress: Callable[[int], None] | None = None) -> list:
    """fn(design, sims[, progress]) over the design's simulations, split over `workers`
    processes (default: the machine's cores); in one process `progress(done)` is called
    after each simulated study. Each study's seed is its index: the split changes nothing."""
    workers = max(1, min(workers or os.cpu_count() or 1, design.simulations))
    chunks = [range(k, design.simulations, workers) for k in range(workers)]
    if workers == 1:
        return [fn(design, chunks[0], progress)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        parts = list(pool.map(fn, [design] * workers, chunks))
    if progress is not None:
        progress(design.simulations)
    return parts


def power(design: Design, workers: int | None = None, progress: Callable[[int], None] | None = None) -> list[dict]:
    """{test, power, se, median_width, n_simulations, ...target} per target."""
    parts = spread(_run, design, workers, progress)
    out = []
    for t, target in enumerate(design.targets):
        met = np.concatenate([part[0][t] for part in parts])
        widths = [w for part in parts for w in part[1][t]]
        p = float(met.mean())
        out.append({**target, "power": p, "se": math.sqrt(p * (1 - p) / design.simulations),
                    "median_width": float(np.median(widths)) if widths else None,
                    "n_simulations": design.simulations})
    return out


def solve_design(design: Design, what: str, workers: int | None = None) -> dict:
    """The smallest `items` (bisection) or `annotations_per_item` (upwards) at which every
    target reaches design.power; {"solved": what, "value": n or None, "targets": [...]}. The
    same seeds at every n (common random numbers) keep the search's steps comparable."""
    key = "annotations_per_item" if what == "overlap" else "items"
    low, high = SOLVE_LIMITS[key]
    high = high or design.annotators

    def reaches(n):
        results = power(replace(design, **{key: n}), workers)
        return all(r["power"] >= design.power for r in results), results

    ok, results = reaches(high)
    if not ok:
        return {"solved": key, "value": None, "reason": f"power {design.power} not reached at {key} = {high}",
                "targets": results}
    best = (high, results)
    while low < high:
        middle = (low + high) // 2
        ok, results = reaches(middle)
        if ok:
            high, best = middle, (middle, results)
        else:
            low = middle + 1
    return {"solved": key, "value": best[0], "targets": best[1]}
