"""Simulated scalar-rating studies (PerSE's rating of one output; target scalar_difference).

The design's `items` are inputs; each input has one study item per system (its output for
that input), as a PerSE import lists them, so a study holds items x systems items, each rated
by `annotations_per_item` annotators through the engine's rules (replay.ReplayEngine with
the kind's own shown_order). Data-generating model, annotator a rating system s's output for
input i:
  score = clip(round(mu_s + z_i + u_a + e), scale), z_i ~ N(0, item_sd) (inputs differ for
  every system alike), u_a ~ N(0, annotator_sd) (lenient and strict raters), e ~ N(0, noise_sd),
with mu_s the system's mean on the study's scale.

The test (scalar_difference {a, b}): the difference of the two systems' mean scores over
their (item, annotator) scores, the report's mean (`mean_part`: clustered means), with the
report's bootstrap interval resampling inputs, the top-level cluster (both systems' items of
an input drawn together: evaluation.bootstrap.ratio_samples + bootstrap_interval, the
functions clustered_mean uses); rejected when the interval excludes 0. Width: the interval's,
in scale points.
"""
import random
from dataclasses import dataclass

import numpy as np

from evaluation.bootstrap import RESAMPLES, bootstrap_interval, ratio_samples

from .design_spec import Design
from .replay import ReplayEngine


@dataclass
class ScalarStudy:
    """One simulated study's ratings in the order they were given."""

    systems: list[str]
    input: np.ndarray  # the input of each rating's item
    system: np.ndarray  # the system (index into systems) of each rating's item
    annotator: np.ndarray
    score: np.ndarray

    @property
    def n(self) -> int:
        return len(self.score)

    def prefix(self, k: int) -> "ScalarStudy":
        return ScalarStudy(self.systems, self.input[:k], self.system[:k], self.annotator[:k], self.score[:k])


def simulate_scalar(design: Design, seed: int) -> ScalarStudy:
    systems = list(design.systems)
    mu = np.array([design.systems[s] for s in systems], dtype=float)
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, design.item_sd, design.items) if design.item_sd else np.zeros(design.items)
    u = rng.normal(0.0, design.annotator_sd, design.annotators) if design.annotator_sd else np.zeros(design.annotators)
    n_systems = len(systems)
    items = [{"candidate": {"id": s, "text": ""}} for _ in range(design.items) for s in systems]
    engine = ReplayEngine(design.kind, items, design.annotations_per_item, {}, True,
                          lambda item, annotator: random.Random(f"design:{seed}:{item}:{annotator}"))
    active = list(range(design.annotators))
    rows = []
    while active:
        pick = int(rng.integers(len(active)))
        got = engine.next(active[pick])
        if got is None:
            active.pop(pick)
            continue
        rows.append((got[0], active[pick]))
    table = np.array(rows, dtype=np.int64).reshape(-1, 2)
    item, annotator = table[:, 0], table[:, 1]
    inp, system = item // n_systems, item % n_systems
    raw = mu[system] + z[inp] + u[annotator] + rng.normal(0.0, design.noise_sd, len(item))
    score = np.clip(np.round(raw), design.scale[0], design.scale[1])
    return ScalarStudy(systems, inp, system, annotator, score)


def difference(study: ScalarStudy, a: str, b: str) -> tuple[float | None, list[float] | None]:
    """(mean score of a - mean score of b, its 95% interval resampling inputs, or None)."""
    ia, ib = study.systems.index(a), study.systems.index(b)
    keep = (study.system == ia) | (study.system == ib)
    if not (study.system == ia).any() or not (study.system == ib).any():
        return None, None
    _, cluster = np.unique(study.input[keep], return_inverse=True)
    cluster = cluster.ravel()
    size = int(cluster.max()) + 1
    is_a = study.system[keep] == ia
    score = study.score[keep]
    sums = np.stack([np.bincount(cluster[is_a], weights=score[is_a], minlength=size),
                     np.bincount(cluster[~is_a], weights=score[~is_a], minlength=size)])
    counts = np.stack([np.bincount(cluster[is_a], minlength=size),
                       np.bincount(cluster[~is_a], minlength=size)]).astype(float)
    estimate = float(sums[0].sum() / counts[0].sum() - sums[1].sum() / counts[1].sum())
    samples = ratio_samples(sums, counts, RESAMPLES)
    found = bootstrap_interval(samples[:, 0] - samples[:, 1], estimate, size)
    return estimate, found.ci95


def evaluate_difference(target: dict, study: ScalarStudy) -> tuple[bool, float | None]:
    """(interval excludes 0, its width) of one scalar_difference target."""
    _, ci = difference(study, target["a"], target["b"])
    if ci is None:
        return False, None
    return bool(ci[0] > 0 or ci[1] < 0), ci[1] - ci[0]
