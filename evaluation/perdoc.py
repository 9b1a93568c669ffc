"""Per-DOC aspect accuracy of evaluators (PerSE Table 4) and the reviewer_prior baseline."""
from collections.abc import Iterable, Mapping
from typing import Any

NOT_AVAILABLE = "N/A"
UNPARSED = ""


def _norm(v: Any) -> str:
    return "" if v is None else str(v).strip()


def aspect_accuracy(judgments: Iterable[tuple[Any, Any, Any]],
                    predictions: Mapping[tuple[Any, Any], Any]) -> dict[str, Any]:
    """Accuracy of an evaluator on one aspect.

    judgments: [(item, annotator, choice)]. predictions: {(item, annotator): value} for a
    personalized evaluator and/or {(item, ""): value} for one prediction for everyone; the
    annotator's own key wins. A value of "" (or None, or no prediction at all) could not
    be parsed: left out of `accuracy`, wrong in `accuracy_strict`. "N/A" is wrong in both.
    Returns {"accuracy", "accuracy_strict", "n", "n_unparsed"}; n counts all judgments.

    Right, N/A (wrong), unparsed (left out of accuracy, wrong in accuracy_strict):

    >>> judged = [("i1", "ann1", "a"), ("i2", "ann1", "b"), ("i3", "ann1", "a")]
    >>> aspect_accuracy(judged, {("i1", ""): "a", ("i2", "ann1"): "N/A", ("i3", ""): ""})
    {'accuracy': 0.5, 'accuracy_strict': 0.3333333333333333, 'n': 3, 'n_unparsed': 1}
    """
    right = parsed = 0
    judgments = list(judgments)
    for item, annotator, choice in judgments:
        pred = predictions.get((item, annotator))
        if pred is None:
            pred = predictions.get((item, ""))
        pred = _norm(pred)
        if pred == UNPARSED:
            continue
        parsed += 1
        right += pred != NOT_AVAILABLE and pred == _norm(choice)
    n = len(judgments)
    return {"accuracy": right / parsed if parsed else None,
            "accuracy_strict": right / n if n else None,
            "n": n, "n_unparsed": n - parsed}


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
