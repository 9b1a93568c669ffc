"""Annotator quality for researchers: gold accuracy and median seconds per item.

Gold accuracy = share of an annotator's answers on gold items that equal the gold answer,
by the report's rule (evaluation/annotator_quality.py): gold is {question: expected value}
(only the questions it names are checked) or one value (the kind's `bare_gold_question`).

A study's `quality` thresholds ({"min_gold_accuracy", "min_median_seconds", and together
"fast_seconds" + "max_fast_submits": more than N items answered in under Y s,
"max_flip_rate": a test-retest flip rate above it, over >= 5 repeats}) flag the
annotators below them (participants and staff alike), live: the dashboard marks them,
participants.csv says why, and reports leave their judgments out unless asked
(`report --include-flagged`, `?include_flagged=1`). An annotator with no gold answer
yet (or no timed item) is not flagged for that measure.

Everything is computed from the judgment columns the report reads (annotate/
report_columns.py); the report passes the columns it already has (`quality_of_columns`).
"""
import numpy as np

from annotate.kinds import get_kind
from annotate.reports.columns import JudgmentColumns, reader
from annotate.reports.retest import flip_rates
from evaluation import annotator_quality as measures
from evaluation.annotator_quality import flag_reasons  # noqa: F401  (participants.csv)


def gold_of(study) -> dict[int, object]:
    """{item pk: gold} of the study's gold items."""
    return dict(study.items.filter(is_gold=True).values_list("id", "gold"))


def quality_of_columns(study, columns: JudgmentColumns, golds: dict[int, object]) -> dict[str, dict]:
    """annotator_quality from judgment columns (every row of the study) and `golds`, with
    each annotator's test-retest `flip_rate` (>= 5 repeats; annotate/reports/retest.py)
    when the study sets `quality.max_flip_rate`."""
    names, coder = columns.annotator.labels, columns.annotator.codes
    quality = measures.annotator_quality([str(n) for n in names.tolist()], coder, columns.item_pk,
                                         columns.question.labels[columns.question.codes],
                                         columns.value.labels[columns.value.codes], columns.seconds, golds,
                                         get_kind(study.kind).bare_gold_question)
    if (study.quality or {}).get("max_flip_rate") is not None:
        for name, rate in flip_rates(study).items():
            if name in quality:
                quality[name]["flip_rate"] = rate
    return quality


def annotator_quality(study):
    """{username: {"items", "judgments", "median_seconds", "item_seconds", "gold_checked",
    "gold_correct", "gold_accuracy"}} over the study's judgments; None where undefined."""
    return quality_of_columns(study, reader().judgments(study), gold_of(study))


def flagged_annotators(study, quality=None):
    """{username: reason} of the annotators below the study's `quality` thresholds
    ({} when the study sets none). `quality`: annotator_quality(study), if already made."""
    if not study.quality:
        return {}
    return measures.flagged(annotator_quality(study) if quality is None else quality, study.quality)


def kept_rows(study, columns: JudgmentColumns, golds: dict[int, object]) -> tuple[np.ndarray, dict[str, str]]:
    """(mask of the rows of annotators not flagged, {flagged username: reason}) of a
    study's judgment columns; every row is kept when the study sets no thresholds."""
    if not study.quality:
        return np.ones(len(columns.item_pk), dtype=bool), {}
    flags = measures.flagged(quality_of_columns(study, columns, golds), study.quality)
    names = columns.annotator.labels
    out = np.array([str(n) in flags for n in names.tolist()], dtype=bool)
    return ~out[columns.annotator.codes] if len(names) else np.ones(0, dtype=bool), flags
