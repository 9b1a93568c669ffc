"""Annotator quality for researchers: gold accuracy and median seconds per item.

Gold accuracy = share of an annotator's answers on gold items that equal the gold
answer. `gold` is either {question: expected value} (only the questions it names are
checked) or one value (checked against every question of the item).

A study's `quality` thresholds ({"min_gold_accuracy", "min_median_seconds", and together
"fast_seconds" + "max_fast_submits": more than N items answered in under Y s}) flag the
annotators below them (participants and staff alike), live: the dashboard marks them,
participants.csv says why, and reports leave their judgments out unless asked
(`report --include-flagged`, `?include_flagged=1`). An annotator with no gold answer
yet (or no timed item) is not flagged for that measure.
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
            "item_seconds": list(row["seconds"].values()),
            "gold_checked": row["checked"], "gold_correct": row["correct"],
            "gold_accuracy": row["correct"] / row["checked"] if row["checked"] else None,
        }
        for username, row in out.items()
    }


def flag_reasons(row, thresholds):
    """Why one annotator's quality `row` falls below `thresholds`: "" when it does not."""
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
    return "; ".join(reasons)


def flagged_annotators(study, quality=None):
    """{username: reason} of the annotators below the study's `quality` thresholds
    ({} when the study sets none). `quality`: annotator_quality(study), if already made."""
    if not study.quality:
        return {}
    quality = annotator_quality(study) if quality is None else quality
    reasons = {name: flag_reasons(row, study.quality) for name, row in quality.items()}
    return {name: reason for name, reason in sorted(reasons.items()) if reason}
