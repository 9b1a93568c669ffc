"""Fetch one study into a ReportInput: a handful of set-based queries (items, gold answers,
metric scores, ExPerT scores, judgments, usernames, predictions) with values_list, never
one query per item, so a study with 100,000 judgments reports within the 3 s budget.

Only the parts of an item's JSON that the report needs are read: candidate ids as text,
and on PostgreSQL the metric and ExPerT scores unnested into rows by jsonb_each (other
databases read those JSON keys and flatten them here). Texts are read only for
similarity_survey studies, whose EGISES-HJ needs them.
"""
import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models.fields.json import KT

from annotate import kinds
from annotate.models import Judgment, Prediction
from evaluation.report.inputs import ReportInput

PG_SCORES = """
SELECT i.id, m.key, c.key, c.value #>> '{}'
FROM annotate_item i
CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(i.data -> 'metric_scores') = 'object'
                                   THEN i.data -> 'metric_scores' ELSE '{}'::jsonb END) AS m
CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(m.value) = 'object' THEN m.value ELSE '{}'::jsonb END) AS c
WHERE i.study_id = %s
"""
PG_EXPERT = """
SELECT i.id, e.key, e.value ->> 'score'
FROM annotate_item i
CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(i.data -> 'explanations') = 'object'
                                   THEN i.data -> 'explanations' ELSE '{}'::jsonb END) AS e
WHERE i.study_id = %s AND jsonb_typeof(e.value) = 'object'
"""


def _rows(sql, params):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _metric_score_rows(study):
    """[(item pk, metric, candidate id, value text)] of the items' metric_scores."""
    if connection.vendor == "postgresql":
        return _rows(PG_SCORES, [study.pk])
    out = []
    for pk, scores in study.items.exclude(data__metric_scores=None).values_list("id", "data__metric_scores"):
        for metric, by_candidate in (scores or {}).items() if isinstance(scores, dict) else []:
            for candidate, value in (by_candidate or {}).items() if isinstance(by_candidate, dict) else []:
                out.append((pk, metric, candidate, value))
    return out


def _expert_rows(study):
    """[(item pk, candidate id, ExPerT score)] of explanation_choice items."""
    if connection.vendor == "postgresql":
        return _rows(PG_EXPERT, [study.pk])
    out = []
    for pk, explanations in study.items.values_list("id", "data__explanations"):
        for candidate, explanation in (explanations or {}).items() if isinstance(explanations, dict) else []:
            if isinstance(explanation, dict):
                out.append((pk, candidate, explanation.get("score")))
    return out


class _Index:
    """Maps item primary keys to positions in the item arrays (vectorized)."""

    def __init__(self, pks):
        self.pks = np.asarray(pks, dtype=np.int64)
        self.order = np.argsort(self.pks)

    def __call__(self, pks):
        pks = np.fromiter(pks, dtype=np.int64)
        return self.order[np.searchsorted(self.pks[self.order], pks)] if len(pks) else np.zeros(0, np.int64)


def _column(rows, k):
    return [row[k] for row in rows]


def fetch_report_input(study):
    """The ReportInput of `study`."""
    kind = study.kind
    columns = {}
    if kind in kinds.TWO_CANDIDATE_KINDS:
        columns = {"r_a": KT("data__candidates__0__id"), "r_b": KT("data__candidates__1__id")}
    if kind == kinds.SIMILARITY_SURVEY:
        columns = {"r_document": "data__document", "r_users": "data__users", "r_pairs": "data__pairs"}
    items_qs = study.items.order_by("position", "id")
    expressions = {k: v for k, v in columns.items() if not isinstance(v, str)}
    fields = [k if k in expressions else v for k, v in columns.items()]
    items = list(items_qs.annotate(**expressions).values_list("id", "item_id", "is_gold", *fields))
    index = _Index(_column(items, 0))
    item_ids = _column(items, 1)
    is_gold = np.array(_column(items, 2), dtype=bool)
    gold = [None] * len(items)
    gold_pks = [row[0] for row in items if row[2]]
    if gold_pks:
        gold_of = dict(study.items.filter(id__in=gold_pks).values_list("id", "gold"))
        for position in index(gold_pks).tolist():
            gold[position] = gold_of[items[position][0]]
    candidates = item_data = None
    if kind in kinds.TWO_CANDIDATE_KINDS:
        candidates = np.empty((len(items), 2), dtype=object)
        candidates[:, 0] = _column(items, 3)
        candidates[:, 1] = _column(items, 4)
    if kind == kinds.SIMILARITY_SURVEY:
        item_data = [{"document": row[3] or {}, "users": row[4] or [], "pairs": row[5] or []} for row in items]

    scores = _metric_score_rows(study) if kind in kinds.PAIRWISE_KINDS else []
    expert = _expert_rows(study) if kind == kinds.EXPLANATION_CHOICE else []

    want_time = kind == kinds.ASPECT_PAIRWISE
    rows = list(Judgment.objects.filter(study=study).order_by("id").values_list(
        "item_id", "annotator_id", "question", "value", "shown_order", "seconds",
        *(["submitted_at"] if want_time else [])))
    user_ids = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    uniq_users, user_code = np.unique(user_ids, return_inverse=True)
    usernames = dict(get_user_model().objects.filter(id__in=uniq_users.tolist()).values_list("id", "username"))
    name_of = np.empty(len(uniq_users), dtype=object)
    name_of[:] = [usernames.get(int(u), str(u)) for u in uniq_users.tolist()]
    j_time = None
    if want_time:
        j_time = np.array([r[6].timestamp() if r[6] is not None else np.nan for r in rows], dtype=float)
        unknown = np.isnan(j_time)  # unknown submit times sort after known ones, in row order
        if unknown.any():
            j_time[unknown] = (np.nanmax(j_time) if (~unknown).any() else 0.0) + 1 + np.flatnonzero(unknown)

    preds = list(Prediction.objects.filter(study=study).values_list(
        "item_id", "evaluator", "annotator", "question", "value"))
    config = dict(study.config or {})
    config.update(allow_tie=study.allow_tie, aspects=kinds.study_aspects(config), scale=list(kinds.study_scale(config)))
    return ReportInput(
        slug=study.slug, kind=kind, config=config,
        item_ids=item_ids, is_gold=is_gold, gold=gold, candidates=candidates, item_data=item_data,
        j_item=index(r[0] for r in rows),
        j_annotator=name_of[user_code.ravel()] if len(rows) else [],
        j_question=_column(rows, 2), j_value=_column(rows, 3), j_shown=_column(rows, 4),
        j_seconds=np.array([np.nan if r[5] is None else r[5] for r in rows], dtype=float),
        j_time=j_time,
        s_item=index(r[0] for r in scores), s_metric=_column(scores, 1), s_candidate=_column(scores, 2),
        s_value=_column(scores, 3),
        e_item=index(r[0] for r in expert), e_candidate=_column(expert, 1), e_value=_column(expert, 2),
        p_item=index(r[0] for r in preds), p_evaluator=_column(preds, 1), p_annotator=_column(preds, 2),
        p_question=_column(preds, 3), p_value=_column(preds, 4),
        annotations_per_item=study.annotations_per_item,
    )


def study_report(study, fmt="json"):
    """(report dict, rendered text) of `study` in `fmt`."""
    from evaluation.report import build_report, render

    inp = fetch_report_input(study)
    report = build_report(inp)
    return report, render(report, inp, fmt)
