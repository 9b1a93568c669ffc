"""Annotator quality from a study's judgment columns: gold accuracy and median seconds per
item, and which annotators fall below a study's `quality` thresholds (plain NumPy, no
Django). The gold rule is the report's (`expected_answer`, `same_answer`: the report's
per-annotator gold accuracy uses them too), and the columns are the ones the report reads
(annotate/reports/columns.py), so the dashboard, participants.csv and the report's
exclusions agree, and a report with thresholds reads its judgments once.

Every row counts, skips included: an annotator's time and items are what they spent.
"""
from statistics import median
from typing import Any

import numpy as np


def expected_answer(gold: Any, question: str, bare_gold_question: str | None) -> Any:
    """The gold answer a judgment of `question` is checked against, or None when the gold
    does not cover it: gold is {question: answer}, or one bare answer that stands for
    `bare_gold_question` (None: for every question)."""
    if isinstance(gold, dict):
        return gold.get(question)
    if gold is None or (bare_gold_question is not None and question != bare_gold_question):
        return None
    return gold


def same_answer(value: Any, expected: Any) -> bool:
    """A judged value equals the gold answer: as text, or as numbers (a rating 4 is 4.0)."""
    if str(value) == str(expected):
        return True
    try:
        return float(value) == float(expected)
    except (TypeError, ValueError):
        return False


def annotator_quality(names: list[str], coder: np.ndarray, item: np.ndarray, question: np.ndarray,
                      value: np.ndarray, seconds: np.ndarray, gold_of: dict[int, Any],
                      bare_gold_question: str | None) -> dict[str, dict[str, Any]]:
    """{name: {"items", "judgments", "median_seconds", "item_seconds", "gold_checked",
    "gold_correct", "gold_accuracy"}} of the annotators with a row. Rows: `coder` (index
    into `names`), `item` (any integer item key), `question`, `value`, `seconds` (NaN:
    unknown), in submit order; `gold_of`: {item key: gold} of the gold items. An item's
    time is its first row with a known time (every question of an item carries it)."""
    n = len(names)
    coder, item = np.asarray(coder, dtype=np.int64), np.asarray(item, dtype=np.int64)
    judgments = np.bincount(coder, minlength=n)
    base = int(item.max()) + 1 if len(item) else 1
    key = coder * base + item
    items = np.bincount(coder[np.unique(key, return_index=True)[1]], minlength=n)
    timed = np.flatnonzero(~np.isnan(seconds))
    first = timed[np.unique(key[timed], return_index=True)[1]]  # first timed row of each (annotator, item)
    per_coder: list[list[float]] = [[] for _ in range(n)]
    for c, s in zip(coder[first].tolist(), seconds[first].tolist()):
        per_coder[c].append(s)
    checked, correct = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    on_gold = np.flatnonzero(np.isin(item, np.fromiter(gold_of, dtype=np.int64, count=len(gold_of))))
    for c, i, q, v in zip(coder[on_gold].tolist(), item[on_gold].tolist(), question[on_gold].tolist(),
                          value[on_gold].tolist()):
        expected = expected_answer(gold_of[i], q, bare_gold_question)
        if expected is not None:
            checked[c] += 1
            correct[c] += same_answer(v, expected)
    return {
        names[c]: {"items": int(items[c]), "judgments": int(judgments[c]),
                   "median_seconds": median(per_coder[c]) if per_coder[c] else None,
                   "item_seconds": per_coder[c], "gold_checked": int(checked[c]), "gold_correct": int(correct[c]),
                   "gold_accuracy": int(correct[c]) / int(checked[c]) if checked[c] else None}
        for c in np.flatnonzero(judgments).tolist()
    }


def flag_reasons(row: dict[str, Any], thresholds: dict[str, Any]) -> str:
    """Why one annotator's quality `row` falls below `thresholds`: "" when it does not. An
    annotator with no gold answer yet (or no timed item) is not flagged for that measure."""
    reasons = []
    accuracy, seconds = row.get("gold_accuracy"), row.get("median_seconds")
    low = thresholds.get("min_gold_accuracy")
    if low is not None and accuracy is not None and accuracy < low:
        reasons.append(f"gold accuracy {accuracy:.2f} < {low:g}")
    fast = thresholds.get("min_median_seconds")
    if fast is not None and seconds is not None and seconds < fast:
        reasons.append(f"median seconds {seconds:.1f} < {fast:g}")
    limit, under = thresholds.get("max_fast_submits"), thresholds.get("fast_seconds")
    if limit is not None and under is not None:
        n_fast = sum(s < under for s in row.get("item_seconds", ()))
        if n_fast > limit:
            reasons.append(f"{n_fast} items under {under:g} s > {limit:g}")
    flips = flip_reason(row.get("flip_rate"), thresholds.get("max_flip_rate"))  # test-retest, >= 5 repeats
    if flips:
        reasons.append(flips)
    return "; ".join(reasons)


def flip_reason(flip_rate: float | None, max_flip_rate: float | None) -> str:
    """The quality flag of one annotator's flip rate: "" when none.

    >>> flip_reason(0.4, 0.25), flip_reason(0.2, 0.25), flip_reason(0.4, None)
    ('flip rate 0.40 > 0.25', '', '')
    """
    if max_flip_rate is None or flip_rate is None or not flip_rate > max_flip_rate:
        return ""
    return f"flip rate {flip_rate:.2f} > {max_flip_rate:g}"


def flagged(quality: dict[str, dict[str, Any]], thresholds: dict[str, Any]) -> dict[str, str]:
    """{name: reason} of the annotators below `thresholds`, by name."""
    reasons = {name: flag_reasons(row, thresholds) for name, row in quality.items()}
    return {name: reason for name, reason in sorted(reasons.items()) if reason}
