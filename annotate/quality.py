"""Annotator quality for researchers: gold accuracy and median seconds per item.

Gold accuracy = share of an annotator's answers on gold items that equal the gold
answer. `gold` is either {question: expected value} (only the questions it names are
checked) or one value (checked against every question of the item).
"""
from statistics import median

from .models import Judgment


def gold_expected(gold, question):
    """The expected value for `question`, or None when the gold does not cover it."""
    value = gold.get(question) if isinstance(gold, dict) else gold
    return None if value is None else str(value)


def annotator_quality(study):
    """{username: {"items", "judgments", "median_seconds", "gold_checked", "gold_correct",
    "gold_accuracy"}} over the study's judgments; None where undefined."""
    rows = (Judgment.objects.filter(study=study)
            .values_list("annotator__username", "item_id", "question", "value", "seconds",
                         "item__is_gold", "item__gold").order_by("annotator__username", "item_id", "id"))
    out = {}
    for username, item_id, question, value, seconds, is_gold, gold in rows:
        row = out.setdefault(username, {"items": set(), "judgments": 0, "seconds": {}, "checked": 0, "correct": 0})
        row["items"].add(item_id)
        row["judgments"] += 1
        if seconds is not None:
            row["seconds"].setdefault(item_id, seconds)  # one time per item, not per question
        expected = gold_expected(gold, question) if is_gold else None
        if expected is not None:
            row["checked"] += 1
            row["correct"] += value == expected
    return {
        username: {
            "items": len(row["items"]), "judgments": row["judgments"],
            "median_seconds": median(row["seconds"].values()) if row["seconds"] else None,
            "gold_checked": row["checked"], "gold_correct": row["correct"],
            "gold_accuracy": row["correct"] / row["checked"] if row["checked"] else None,
        }
        for username, row in out.items()
    }
