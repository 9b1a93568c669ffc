"""Fetch one study into a ReportInput: a handful of set-based queries (items, gold answers,
metric scores, ExPerT scores, judgments, usernames, predictions), never one query per item.

On PostgreSQL the large columns come from annotate/report_columns.py as parsed texts; the
generic path here (SQLite, or a column that would not read back exactly) reads rows with
values_list and gives the same arrays. Only the parts of an item's JSON that the report
needs are read: candidate ids and ExPerT scores as text, metric_scores as JSON text parsed
here in one pass. Texts are read only for similarity_survey studies, whose EGISES-HJ needs them.
"""
import json

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import F, TextField
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KT

from annotate import report_columns
from annotate.kinds import get_kind, study_config
from annotate.kinds.base import (
    NEEDS_CANDIDATES,
    NEEDS_EXPERT_SCORES,
    NEEDS_METRIC_SCORES,
    NEEDS_PAIR_TEXTS,
    NEEDS_SUBMIT_TIMES,
)
from annotate.models import Item, Judgment, Prediction
from annotate.quality import flagged_annotators
from annotate.report_columns import JudgmentColumns
from evaluation.report.inputs import ReportInput, to_float

PG_EXPERT_SCORE = ("annotate_item.data -> 'explanations' -> (annotate_item.data -> 'candidates' -> {k} ->> 'id')"
                   " ->> 'score'")


def _json_text(key):
    """One top-level JSON key of an item as text (PostgreSQL: parsed here in one pass,
    much cheaper than a JSON converter per row), or the decoded value elsewhere."""
    if connection.vendor == "postgresql":
        return RawSQL("(annotate_item.data -> %s)::text", [key], output_field=TextField())
    return F(f"data__{key}")


def _decoded(value):
    return json.loads(value) if isinstance(value, str) else value


def _expert_columns():
    """The ExPerT score of each candidate's explanation."""
    if connection.vendor == "postgresql":
        return {f"r_e{k}": RawSQL(PG_EXPERT_SCORE.format(k=k), [], output_field=TextField()) for k in (0, 1)}
    return {"r_explanations": F("data__explanations")}


def _score_arrays(candidates, metric_scores):
    """Long arrays (item index, metric, candidate id, value) of the items' metric_scores,
    for the two candidates of each item. On PostgreSQL `metric_scores` are JSON texts,
    decoded with one json.loads of the whole column."""
    texts = [m if m is not None else "null" for m in metric_scores]
    if texts and all(isinstance(t, str) for t in texts):
        metric_scores = json.loads("[" + ",".join(texts) + "]")
    by_metric = {}
    for index, (scores, first, second) in enumerate(zip(metric_scores, candidates[:, 0].tolist(),
                                                        candidates[:, 1].tolist())):
        if not isinstance(scores, dict):
            continue
        for metric, by_candidate in scores.items():
            if isinstance(by_candidate, dict):
                rows = by_metric.setdefault(metric, ([], [], []))
                rows[0].append(index)
                rows[1].append(by_candidate.get(first))
                rows[2].append(by_candidate.get(second))
    return report_columns.long_scores([(metric, np.asarray(index, dtype=np.int64), to_float(first), to_float(second))
                                       for metric, (index, first, second) in by_metric.items()], candidates)


class _Index:
    """Maps item primary keys to positions in the item arrays (vectorized)."""

    def __init__(self, pks):
        self.pks = np.asarray(pks, dtype=np.int64)
        self.order = np.argsort(self.pks)

    def __call__(self, pks):
        pks = pks if isinstance(pks, np.ndarray) else np.fromiter(pks, dtype=np.int64)
        return self.order[np.searchsorted(self.pks[self.order], pks)] if len(pks) else np.zeros(0, np.int64)


def _column(rows, k):
    return [row[k] for row in rows]


def _item_columns(needs):
    """The annotations of the items query for what the report needs."""
    columns = {}
    if NEEDS_CANDIDATES in needs:
        columns.update(r_a=KT("data__candidates__0__id"), r_b=KT("data__candidates__1__id"))
    if NEEDS_METRIC_SCORES in needs and connection.vendor != "postgresql":  # PostgreSQL: _pg_score_arrays
        columns.update(r_scores=_json_text("metric_scores"))
    if NEEDS_EXPERT_SCORES in needs:
        columns.update(_expert_columns())
    if NEEDS_PAIR_TEXTS in needs:
        columns.update(r_document=F("data__document"), r_users=F("data__users"), r_pairs=F("data__pairs"))
    return columns


def _gold_answers(study, pks, is_gold, index):
    """The gold answer of each item (None for non-gold items), in item order."""
    gold = [None] * len(pks)
    if np.any(is_gold):
        gold_of = dict(study.items.filter(is_gold=True).values_list("id", "gold"))
        gold_pks = np.fromiter(gold_of, dtype=np.int64, count=len(gold_of))
        gold_pks = gold_pks[np.isin(gold_pks, pks)]  # an item imported since `pks` were read is not in the report
        for position, pk in zip(index(gold_pks).tolist(), gold_pks.tolist()):
            gold[position] = gold_of[pk]
    return gold


def _expert_rows(items, col, candidates):
    """(item pk, candidate id, ExPerT score) of every explanation with a score."""
    expert = []
    if "r_e0" in col:
        for k in (0, 1):
            expert += [(row[0], c, row[col[f"r_e{k}"]]) for row, c in zip(items, candidates[:, k])
                       if row[col[f"r_e{k}"]] is not None]
    elif "r_explanations" in col:
        for row in items:
            for candidate, explanation in (_decoded(row[col["r_explanations"]]) or {}).items():
                if isinstance(explanation, dict):
                    expert.append((row[0], candidate, explanation.get("score")))
    return expert


def _usernames(ids):
    """{user id: username} of `ids` (the id as text for a user that no longer exists)."""
    names = dict(get_user_model().objects.filter(id__in=list(ids)).values_list("id", "username"))
    return {i: names.get(i, str(i)) for i in ids}


def _judgment_rows(study, want_time, excluded_ids):
    """The study's judgments row by row (the generic path of report_columns.judgment_columns,
    same columns, same id order)."""
    judgments = Judgment.objects.filter(study=study).exclude(annotator_id__in=list(excluded_ids))
    rows = list(judgments.order_by("id").values_list(
        "item_id", "annotator_id", "question", "value", "shown_order", "seconds",
        *(["submitted_at"] if want_time else [])))
    names = _usernames(sorted({r[1] for r in rows}))
    time = None
    if want_time:
        time = np.array([r[6].timestamp() if r[6] is not None else np.nan for r in rows], dtype=float)
    return JudgmentColumns(
        item_pk=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
        annotator=[names[r[1]] for r in rows], question=_column(rows, 2), value=_column(rows, 3),
        shown=_column(rows, 4), seconds=np.array([np.nan if r[5] is None else r[5] for r in rows], dtype=float),
        time=time)


def _known_times(time):
    """Submit times with the unknown ones (NaN) after every known one, in row order."""
    unknown = np.isnan(time)
    if unknown.any():
        time = time.copy()
        time[unknown] = (np.nanmax(time) if (~unknown).any() else 0.0) + 1 + np.flatnonzero(unknown)
    return time


def _items_generic(study, needs):
    """The items row by row, with the JSON parts the kind needs: (pks, item ids, gold
    flags, candidates, item_data, ExPerT rows, metric score texts or None)."""
    columns = _item_columns(needs)
    items = list(study.items.order_by("position", "id").annotate(**columns)
                 .values_list("id", "item_id", "is_gold", *columns))
    col = {name: 3 + k for k, name in enumerate(columns)}
    candidates = item_data = None
    if NEEDS_CANDIDATES in needs:
        candidates = np.empty((len(items), 2), dtype=object)
        candidates[:, 0] = _column(items, col["r_a"])
        candidates[:, 1] = _column(items, col["r_b"])
    if NEEDS_PAIR_TEXTS in needs:
        item_data = [{"document": row[col["r_document"]] or {}, "users": row[col["r_users"]] or [],
                      "pairs": row[col["r_pairs"]] or []} for row in items]
    scores = _column(items, col["r_scores"]) if "r_scores" in col else None
    return (np.array(_column(items, 0), dtype=np.int64), _column(items, 1), np.array(_column(items, 2), dtype=bool),
            candidates, item_data, _expert_rows(items, col, candidates), scores)


def _items(study, needs):
    """`_items_generic`, or on PostgreSQL for kinds that need no per-item JSON beyond the
    candidate ids, report_columns.item_columns."""
    if connection.vendor == "postgresql" and not needs & {NEEDS_EXPERT_SCORES, NEEDS_PAIR_TEXTS}:
        cols = report_columns.item_columns(study, NEEDS_CANDIDATES in needs)
        if cols is not None:
            return cols.pk, cols.item_id, cols.is_gold, cols.candidates, None, [], None
    return _items_generic(study, needs)


def _judgments(study, want_time, excluded_ids):
    """`_judgment_rows`, or on PostgreSQL report_columns.judgment_columns."""
    if connection.vendor == "postgresql":
        cols = report_columns.judgment_columns(study, want_time, excluded_ids, _usernames)
        if cols is not None:
            return cols
    return _judgment_rows(study, want_time, excluded_ids)


def _predictions(study):
    """(item pk, evaluator, annotator, question, value) of the study's predictions."""
    if connection.vendor == "postgresql":
        cols = report_columns.prediction_columns(study)
        if cols is not None:
            return cols
    preds = list(Prediction.objects.filter(study=study).order_by("id").values_list(
        "item_id", "evaluator", "annotator", "question", "value"))
    return (np.fromiter((r[0] for r in preds), dtype=np.int64, count=len(preds)),
            *(_column(preds, k) for k in range(1, 5)))


def fetch_report_input(study, min_votes=None, include_flagged=False):
    """The ReportInput of `study`: what its kind's report needs (StudyKind.report_needs).
    Annotators below the study's quality thresholds (annotate/quality.py) are left out
    and listed in `excluded_annotators`, unless `include_flagged`. On PostgreSQL the
    large columns come as parsed texts (annotate/report_columns.py)."""
    kind = get_kind(study.kind)
    needs = kind.report_needs
    excluded = {} if include_flagged else flagged_annotators(study)
    excluded_ids = list(get_user_model().objects.filter(username__in=list(excluded)).values_list("id", flat=True))
    pg_scores = None  # started first: PostgreSQL reads every item's JSON while the rest is fetched
    if connection.vendor == "postgresql" and NEEDS_METRIC_SCORES in needs:
        pg_scores = report_columns.start_scores(study)
    pks, item_ids, is_gold, candidates, item_data, expert, score_texts = _items(study, needs)
    index = _Index(pks)
    js = _judgments(study, NEEDS_SUBMIT_TIMES in needs, excluded_ids)
    p_item, p_evaluator, p_annotator, p_question, p_value = _predictions(study)
    if pg_scores is not None:
        scores = report_columns.score_arrays(pg_scores(), index, candidates)
    elif score_texts is not None:
        scores = _score_arrays(candidates, score_texts)
    else:
        scores = (None, None, None, None)
    return ReportInput(
        slug=study.slug, kind=kind.name, config=kind.report_config(study_config(study)),
        item_ids=item_ids, is_gold=is_gold,
        gold=_gold_answers(study, pks, is_gold, index), candidates=candidates, item_data=item_data,
        j_item=index(js.item_pk), j_annotator=js.annotator,
        j_question=js.question, j_value=js.value, j_shown=js.shown,
        j_seconds=js.seconds, j_time=None if js.time is None else _known_times(js.time),
        s_item=scores[0], s_metric=scores[1], s_candidate=scores[2], s_value=scores[3],
        e_item=index(r[0] for r in expert), e_candidate=_column(expert, 1), e_value=_column(expert, 2),
        p_item=index(p_item), p_evaluator=p_evaluator, p_annotator=p_annotator,
        p_question=p_question, p_value=p_value,
        annotations_per_item=study.annotations_per_item,
        complete_items=Item.objects.complete_in(study).count(),
        min_votes=study_min_votes(study.config, min_votes),
        excluded_annotators=excluded,
    )


def study_min_votes(config, override=None):
    """`override` if given, else the study setting `min_votes` (statistics.md, "Majority
    label"), default 2."""
    value = (config or {}).get("min_votes", 2) if override is None else override
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return 2


def study_report(study, fmt="json", min_votes=None, include_flagged=False):
    """(report dict, rendered text) of `study` in `fmt`."""
    from evaluation.report import build_report, render

    inp = fetch_report_input(study, min_votes, include_flagged)
    report = build_report(inp)
    return report, render(report, inp, fmt)
