"""Per-DOC aspect accuracy of evaluators (PerSE Table 4) and the reviewer_prior baseline.

An accuracy is a share of judgments (item, annotator), which cluster in items: its
interval, and that of the average over aspects, resample items (`accuracy_intervals`).
"""
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from evaluation.bootstrap import RESAMPLES, Interval, bootstrap_interval, interval_refusal, ratio_samples

NOT_AVAILABLE = "N/A"
UNPARSED = ""


def _norm(v: Any) -> str:
    return "" if v is None else str(v).strip()


def aspect_accuracy(judgments: Iterable[tuple[Any, Any, Any]], predictions: Mapping[tuple[Any, Any], Any],
                    per_item: bool = False) -> dict[str, Any]:
    """Accuracy of an evaluator on one aspect.

    judgments: [(item, annotator, choice)]. predictions: {(item, annotator): value} for a
    personalized evaluator and/or {(item, ""): value} for one prediction for everyone; the
    annotator's own key wins. A value of "" (or None, or no prediction at all) could not
    be parsed: left out of `accuracy`, wrong in `accuracy_strict`. "N/A" is wrong in both.
    Returns {"accuracy", "accuracy_strict", "n", "n_unparsed"}; n counts all judgments;
    with `per_item` also "per_item": {item: [right, parsed, judgments]}.

    Right, N/A (wrong), unparsed (left out of accuracy, wrong in accuracy_strict):

    >>> judged = [("i1", "ann1", "a"), ("i2", "ann1", "b"), ("i3", "ann1", "a")]
    >>> aspect_accuracy(judged, {("i1", ""): "a", ("i2", "ann1"): "N/A", ("i3", ""): ""})
    {'accuracy': 0.5, 'accuracy_strict': 0.3333333333333333, 'n': 3, 'n_unparsed': 1}
    """
    right = parsed = 0
    judgments = list(judgments)
    by_item: dict[Any, list[int]] = {}
    for item, annotator, choice in judgments:
        counts = by_item.setdefault(item, [0, 0, 0])
        counts[2] += 1
        pred = predictions.get((item, annotator))
        if pred is None:
            pred = predictions.get((item, ""))
        pred = _norm(pred)
        if pred == UNPARSED:
            continue
        parsed += 1
        hit = pred != NOT_AVAILABLE and pred == _norm(choice)
        right += hit
        counts[0] += hit
        counts[1] += 1
    n = len(judgments)
    out: dict[str, Any] = {"accuracy": right / parsed if parsed else None,
                           "accuracy_strict": right / n if n else None,
                           "n": n, "n_unparsed": n - parsed}
    if per_item:
        out["per_item"] = by_item
    return out


def accuracy_intervals(per_item: Mapping[str, Mapping[Any, list[int]]], aspects: list[str],
                       resamples: int = RESAMPLES, seed: int = 0) -> tuple[dict[str, Interval], Interval]:
    """({aspect: interval of the lenient accuracy}, interval of their mean over `aspects`)
    from `aspect_accuracy(..., per_item=True)["per_item"]` of each aspect: one bootstrap
    over the items (sorted ids as text, `bootstrap.cluster_counts`), so every aspect and the
    average see the same resampled items; a resample leaving an aspect without a parsed
    prediction is dropped for it (and for the average)."""
    items = sorted({i for a in aspects for i in per_item.get(a, {})}, key=str)
    col = {i: k for k, i in enumerate(items)}
    right, parsed = np.zeros((len(aspects), len(items))), np.zeros((len(aspects), len(items)))
    for a, aspect in enumerate(aspects):
        for item, (hits, n_parsed, _) in per_item.get(aspect, {}).items():
            right[a, col[item]], parsed[a, col[item]] = hits, n_parsed
    clusters = [int(np.count_nonzero(parsed[a])) for a in range(len(aspects))]
    every = int(np.count_nonzero(parsed.sum(axis=0)))
    if not items or interval_refusal(every) is not None:
        reason = interval_refusal(every) or "no items"
        return ({a: Interval(None, c, 0, 0, interval_refusal(c) or reason) for a, c in zip(aspects, clusters)},
                Interval(None, every, 0, 0, reason))
    samples = ratio_samples(right, parsed, resamples, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = right.sum(axis=1) / parsed.sum(axis=1)
    per_aspect = {a: bootstrap_interval(samples[:, k], float(estimate[k]), clusters[k])
                  for k, a in enumerate(aspects)}
    average = bootstrap_interval(samples.mean(axis=1), float(np.mean(estimate)), every)
    return per_aspect, average


def reviewer_prior(judgments: Iterable[tuple[Any, Any, Any, Any]]) -> dict[tuple[Any, Any], Any]:
    """Baseline predictions {(item, annotator): choice} for one aspect.

    judgments: [(item, annotator, chosen_position, time)] where chosen_position is the
    position (e.g. "A"/"B" or 1/2) of the candidate the annotator chose and time is any
    comparable submit time. Each judgment is predicted by the same annotator's earliest
    judgment on another item (ties in time: smallest item id as text; a judgment with
    time None counts as later than every timed one). An annotator with
    no other judgment gets "N/A".

    >>> reviewer_prior([("i1", "ann1", 0, 1.0), ("i2", "ann1", 1, 2.0), ("i3", "ann2", 0, 1.0)])
    {('i1', 'ann1'): 1, ('i2', 'ann1'): 0, ('i3', 'ann2'): 'N/A'}
    """
    by_annotator: dict[Any, list[tuple[Any, str, Any, Any]]] = {}
    for item, annotator, position, time in judgments:
        by_annotator.setdefault(annotator, []).append((time, str(item), item, position))
    predictions: dict[tuple[Any, Any], Any] = {}
    for annotator, rows in by_annotator.items():
        rows.sort(key=lambda r: (r[0] is None, r[0], r[1]))  # no time: after all timed ones
        for _, _, item, _ in rows:
            other = next((r for r in rows if r[2] != item), None)
            predictions[(item, annotator)] = other[3] if other else NOT_AVAILABLE
    return predictions
