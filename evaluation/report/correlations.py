"""Metric-vs-human correlations of a report (statistics.md, "Correlations"), per kind:

- pairwise kinds, item level (`correlations`): score(first candidate) - score(second)
  against the share of the item's non-gold choices that picked the first candidate (a
  `tie` counts 0.5), over items with >= 2 choices and both scores;
- pairwise kinds, system level (`correlations_system`, >= 3 candidate ids): each system's
  mean score against its human win rate (items whose majority it is / items with a
  candidate majority where it is a candidate);
- similarity surveys: a metric scored per pair (prediction rows whose question is a pair
  id) against the pair's mean rating, over (item, pair) units with a rating;
- explanation studies: the pairwise item level (ExPerT included as metric `expert`), and
  the ExPerT score of the chosen candidate against the same annotator's usefulness rating
  (`expert_chosen_vs_usefulness`, one unit per judgment).

Each entry is `evaluation.correlation.correlations` plus `unit`, `x` and `y` in words.
Units nested in items ((item, pair), judgments) are resampled by item (statistics.md,
"Clustered data"): `clusters` is each unit's item.
"""
import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from evaluation.correlation import correlations, system_correlations

from .common import TIE, clean, clean_list, missing_codes
from .inputs import Judgments, ReportInput, codes_of, objects, to_float

SYSTEMS_MIN = 3
EXPERT_USEFULNESS = "expert_chosen_vs_usefulness"


def entry(x: np.ndarray, y: np.ndarray, unit: str, x_label: str, y_label: str,
          clusters: np.ndarray | None = None) -> dict[str, Any]:
    """A report entry: the three coefficients of (x, y) and what was correlated. The pairs
    are sorted first, so the same data read in another row order gives the same digits.
    `clusters`: each unit's item when units nest in items (None: units are items)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if clusters is None:
        order = np.lexsort((y, x))
        result = correlations(x[order], y[order], unit="items")
    else:
        clusters = np.asarray(clusters)
        order = np.lexsort((y, x, clusters))
        result = correlations(x[order], y[order], clusters=clusters[order], unit=unit, cluster="items")
    return entry_from(result, unit, x_label, y_label)


def entry_from(result: dict[str, Any], unit: str, x_label: str, y_label: str) -> dict[str, Any]:
    """`correlations` output made JSON-safe, with the unit and the two sides in words."""
    out: dict[str, Any] = {"n": int(result["n"]), "n_clusters": int(result["n_clusters"]), "unit": unit,
                           "x": x_label, "y": y_label}
    for method in ("pearson", "spearman", "kendall"):
        out[method] = {key: clean_list(v) if key == "ci95" else clean(v) for key, v in result[method].items()}
    return out


def first_choice_share(inp: ReportInput, rows: Judgments) -> tuple[np.ndarray, np.ndarray]:
    """(share of each item's choices that picked its first candidate, ties 0.5; number of
    choices) over the given choice rows (missing values are not choices)."""
    keep = ~missing_codes(inp.value_names)[rows.vcode] if len(rows) else np.zeros(0, bool)
    item, value = rows.item[keep], rows.value[keep]
    credit = np.where(value == inp.candidates[item, 0], 1.0, np.where(value == TIE, 0.5, 0.0))
    n = np.bincount(item, minlength=inp.n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.bincount(item, weights=credit, minlength=inp.n_items) / n
    return share, n


def entries(jobs: dict[str, tuple[Any, ...]]) -> dict[str, Any]:
    """{name: entry(*job)}, the metrics computed side by side on threads: each one's
    bootstrap is independent (own seed-0 stream) and NumPy releases the GIL in its loops,
    so a report with several metrics uses the machine's cores."""
    if len(jobs) < 2:
        return {name: entry(*job) for name, job in jobs.items()}
    with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
        results = {name: pool.submit(entry, *job) for name, job in jobs.items()}
        return {name: future.result() for name, future in results.items()}


def item_correlations(inp: ReportInput, rows: Judgments,
                      scores: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """{metric: entry} at item level (pairwise kinds)."""
    share, n = first_choice_share(inp, rows)
    unit_item = getattr(inp, "unit_item", None)  # (item, shown pair) units: resampled by item
    jobs: dict[str, tuple[Any, ...]] = {}
    for metric, (first, second) in scores.items():
        keep = (n >= 2) & ~np.isnan(first) & ~np.isnan(second)
        jobs[metric] = ((first - second)[keep], share[keep], "item" if unit_item is None else "(item, shown pair)",
                        f"{metric}(first candidate) - {metric}(second candidate)",
                        "share of choices for the first candidate (tie = 0.5)")
        if unit_item is not None:
            jobs[metric] += (unit_item[keep],)
    return entries(jobs)


def system_correlations_part(inp: ReportInput, systems: list[str],
                             wins_decided: tuple[dict[str, int], dict[str, int]],
                             scores: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, Any] | None:
    """{metric: entry + "systems"} at system level, or None with fewer than 3 systems
    (`systems`: the sorted candidate ids, systems_table's keys; `wins_decided`:
    systems.system_wins)."""
    counted = ~inp.is_gold
    if len(systems) < SYSTEMS_MIN:
        return None
    wins, decided = wins_decided
    rate = {s: wins.get(s, 0) / decided[s] for s in systems if decided.get(s)}
    out = {}
    for metric, (first, second) in scores.items():
        names, values = [], []
        for k, column in ((0, first), (1, second)):
            has = counted & ~np.isnan(column)
            names += [str(c) for c in inp.candidates[has, k].tolist()]
            values += column[has].tolist()
        human = [rate.get(s, np.nan) for s in names]
        result = system_correlations(names, values, human)
        out[metric] = {**entry_from(result, "system", f"mean {metric} score of the system",
                                    "human win rate (share of its items with a candidate majority that it won)"),
                       "systems": [str(s) for s in result["systems"]]}
    return out


def system_correlations_of_slots(inp: ReportInput, systems: list[str],
                                 wins_decided: tuple[dict[str, int], dict[str, int]],
                                 slots: dict[str, np.ndarray]) -> dict[str, Any] | None:
    """`system_correlations_part` for items of more than two candidates: each system's mean
    score over the non-gold items that hold it (every candidate slot; `slots`: {metric:
    (n_items, width) oriented scores}), vectorized, against its win rate (`wins_decided`:
    over the (item, shown pair) units). None with fewer than 3 systems."""
    if len(systems) < SYSTEMS_MIN:
        return None
    wins, decided = wins_decided
    code_of = {s: k for k, s in enumerate(systems)}
    labels, code = codes_of(objects([str(c) for c in inp.c_id.tolist()]))
    system = np.array([code_of.get(str(x), -1) for x in labels.tolist()], dtype=np.int64)[code]
    rate = np.array([wins.get(s, 0) / decided[s] if decided.get(s) else np.nan for s in systems])
    out = {}
    for metric, matrix in slots.items():
        value = matrix[inp.c_item, inp.c_slot]
        keep = (system >= 0) & ~np.isnan(value) & ~inp.is_gold[inp.c_item]
        n = np.bincount(system[keep], minlength=len(systems))
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.bincount(system[keep], weights=value[keep], minlength=len(systems)) / n
        has = (n > 0) & ~np.isnan(rate)
        names = [s for s, h in zip(systems, has.tolist()) if h]
        result = correlations(mean[has], rate[has], unit="systems")
        out[metric] = {**entry_from(result, "system", f"mean {metric} score of the system",
                                    "human win rate (share of its (item, shown pair) units with a candidate "
                                    "majority that it won)"), "systems": names}
    return out


def similarity_correlations(inp: ReportInput, js: Judgments, pair_ids: list[str]) -> dict[str, Any]:
    """{metric: entry} over (item, pair) units: the metric's per-pair prediction against
    the pair's mean non-gold rating."""
    ratings = to_float(inp.value_names)[js.vcode] if len(js) else np.zeros(0)
    keep = ~np.isnan(ratings)
    unit_of: dict[tuple[int, str], int] = {}
    units = np.array([unit_of.setdefault((i, str(q)), len(unit_of))
                      for i, q in zip(js.item[keep].tolist(), js.question[keep].tolist())], dtype=np.int64)
    mean = (np.bincount(units, weights=ratings[keep], minlength=len(unit_of))
            / np.maximum(np.bincount(units, minlength=len(unit_of)), 1))
    pairs = set(pair_ids)
    rows = (inp.p_annotator == "") & np.isin(inp.p_question, list(pairs)) & ~inp.is_gold[inp.p_item] \
        if len(inp.p_item) else np.zeros(0, bool)
    item_of_unit = np.array([item for item, _ in unit_of], dtype=np.int64)
    by_metric: dict[str, dict[int, float]] = {}
    for item, metric, question, value in zip(inp.p_item[rows].tolist(), inp.p_evaluator[rows].tolist(),
                                             inp.p_question[rows].tolist(), to_float(inp.p_value[rows]).tolist()):
        unit = unit_of.get((item, str(question)))
        if unit is not None and math.isfinite(value):
            by_metric.setdefault(str(metric), {})[unit] = value
    jobs = {}
    for metric in sorted(by_metric):
        units_scored = np.array(list(by_metric[metric]), dtype=np.int64)
        x = np.array(list(by_metric[metric].values()), dtype=float)
        jobs[metric] = (x, mean[units_scored], "(item, pair)", f"{metric} of the pair's two texts",
                        "mean similarity rating of the pair", item_of_unit[units_scored])
    return entries(jobs)


def expert_usefulness(inp: ReportInput, js: Judgments, choice: str, usefulness: str) -> dict[str, Any]:
    """The ExPerT score of the candidate each annotator chose against their usefulness
    rating of the same item (choices of `tie` or without a score left out)."""
    score = {(int(i), str(c)): float(v) for i, c, v in zip(inp.e_item.tolist(), inp.e_candidate.tolist(),
                                                             inp.e_value.tolist()) if math.isfinite(v)}
    chosen = {(int(i), int(a)): str(v) for i, a, v, q in zip(js.item.tolist(), js.coder.tolist(),
                                                              js.value.tolist(), js.question.tolist()) if q == choice}
    x, y, items = [], [], []
    for i, a, v, q in zip(js.item.tolist(), js.coder.tolist(), js.value.tolist(), js.question.tolist()):
        if q != usefulness:
            continue
        pick = chosen.get((i, a))
        rating = to_float([v])[0]
        if pick is None or (i, pick) not in score or rating != rating:
            continue
        x.append(score[(i, pick)])
        y.append(rating)
        items.append(i)
    return entry(np.array(x), np.array(y), "judgment", "ExPerT score of the chosen candidate",
                 "the same annotator's usefulness rating", np.array(items, dtype=np.int64))
