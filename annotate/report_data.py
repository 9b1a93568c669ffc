"""Fetch one study into a ReportInput: a handful of set-based queries (items, gold answers,
metric scores, ExPerT scores, judgments, usernames, predictions) with values_list, never
one query per item, so a study with 100,000 judgments reports within the 3 s budget.

Only the parts of an item's JSON that the report needs are read: candidate ids and
ExPerT scores as text, metric_scores as JSON text parsed here in one pass. Texts are read only for
similarity_survey studies, whose EGISES-HJ needs them.
"""
import json

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import F, TextField
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KT

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
    items, metrics, cands, values = [], [], [], []
    for metric, (index, first, second) in by_metric.items():
        index = np.asarray(index, dtype=np.int64)
        items += [index, index]
        metrics.append(np.full(2 * len(index), metric, dtype=object))
        cands += [candidates[index, 0], candidates[index, 1]]
        values += [to_float(first), to_float(second)]
    if not items:
        return None, None, None, None
    return np.concatenate(items), np.concatenate(metrics), np.concatenate(cands), np.concatenate(values)


PG_SCORE_ROWS = """
FROM annotate_item i
CROSS JOIN LATERAL (SELECT i.data -> 'candidates' -> 0 ->> 'id' AS c0, i.data -> 'candidates' -> 1 ->> 'id' AS c1) c
CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(i.data -> 'metric_scores') = 'object'
                                   THEN i.data -> 'metric_scores' ELSE '{}'::jsonb END) m
WHERE i.study_id = %s AND jsonb_typeof(m.value) = 'object'
"""
# A score as json.loads + to_float read it: numbers as written, booleans 1/0; strings are
# read in Python (`_pg_string_scores`); null, arrays, objects, a missing candidate: nan.
PG_NUMBER = ("coalesce(CASE jsonb_typeof(m.value -> c.{c}) WHEN 'number' THEN m.value ->> c.{c} "
             "WHEN 'boolean' THEN (m.value ->> c.{c} = 'true')::int::text END, 'nan')")
PG_SCORES = ("SELECT m.key, string_agg(i.id::text, ','), string_agg(" + PG_NUMBER.format(c="c0") + ", ','), "
             "string_agg(" + PG_NUMBER.format(c="c1") + ", ','), "
             "bool_or(jsonb_typeof(m.value -> c.c0) = 'string' OR jsonb_typeof(m.value -> c.c1) = 'string') "
             + PG_SCORE_ROWS + " GROUP BY m.key ORDER BY m.key")
PG_STRING_SCORES = ("SELECT i.id, m.key, m.value ->> c.c0, m.value ->> c.c1 " + PG_SCORE_ROWS
                    + " AND (jsonb_typeof(m.value -> c.c0) = 'string' OR jsonb_typeof(m.value -> c.c1) = 'string')")


def _pg_score_arrays(study, index, candidates):
    """`_score_arrays` computed by PostgreSQL: per metric (in name order) its items and the
    two candidates' scores, each column one comma-joined text parsed by NumPy, so no item's
    JSON is parsed in Python. Scores written as strings (rare) are read row by row."""
    with connection.cursor() as cursor:
        cursor.execute(PG_SCORES, [study.pk])
        groups = cursor.fetchall()
        strings = {}
        if any(group[4] for group in groups):
            cursor.execute(PG_STRING_SCORES, [study.pk])
            strings = {(pk, key): (a, b) for pk, key, a, b in cursor.fetchall()}
    items, metrics, cands, values = [], [], [], []
    for key, pks, first, second, has_strings in groups:
        pk = np.fromstring(pks, dtype=np.int64, sep=",")
        first, second = np.fromstring(first, sep=","), np.fromstring(second, sep=",")
        order = np.argsort(pk, kind="stable")
        pk, first, second = pk[order], first[order], second[order]
        if has_strings:
            for row in np.flatnonzero([(p, key) in strings for p in pk.tolist()]).tolist():
                a, b = strings[(int(pk[row]), key)]
                first[row], second[row] = to_float([a, b])
        item = index(pk.tolist())
        order = np.argsort(item, kind="stable")  # item order (import position), as the generic path
        item, first, second = item[order], first[order], second[order]
        items += [item, item]
        metrics.append(np.full(2 * len(item), key, dtype=object))
        cands += [candidates[item, 0], candidates[item, 1]]
        values += [first, second]
    if not items:
        return None, None, None, None
    return np.concatenate(items), np.concatenate(metrics), np.concatenate(cands), np.concatenate(values)


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


def _gold_answers(study, items, index):
    """The gold answer of each item (None for non-gold items), in item order."""
    gold = [None] * len(items)
    gold_pks = [row[0] for row in items if row[2]]
    if gold_pks:
        gold_of = dict(study.items.filter(id__in=gold_pks).values_list("id", "gold"))
        for position in index(gold_pks).tolist():
            gold[position] = gold_of[items[position][0]]
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


def _judgment_rows(study, want_time, excluded=()):
    """The study's judgments (in submit order when `want_time`), their annotators' names
    and, when `want_time`, their submit times as floats (unknown ones last, in row order).
    Judgments of the `excluded` usernames are left out."""
    judgments = Judgment.objects.filter(study=study)
    if excluded:
        judgments = judgments.exclude(annotator__username__in=list(excluded))
    rows = list((judgments.order_by("id") if want_time else judgments).values_list(
        "item_id", "annotator_id", "question", "value", "shown_order", "seconds",
        *(["submitted_at"] if want_time else [])))
    user_ids = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    uniq_users, user_code = np.unique(user_ids, return_inverse=True)
    usernames = dict(get_user_model().objects.filter(id__in=uniq_users.tolist()).values_list("id", "username"))
    name_of = np.empty(len(uniq_users), dtype=object)
    name_of[:] = [usernames.get(int(u), str(u)) for u in uniq_users.tolist()]
    names = name_of[user_code.ravel()] if len(rows) else []
    j_time = None
    if want_time:
        j_time = np.array([r[6].timestamp() if r[6] is not None else np.nan for r in rows], dtype=float)
        unknown = np.isnan(j_time)
        if unknown.any():
            j_time[unknown] = (np.nanmax(j_time) if (~unknown).any() else 0.0) + 1 + np.flatnonzero(unknown)
    return rows, names, j_time


def fetch_report_input(study, min_votes=None, include_flagged=False):
    """The ReportInput of `study`: what its kind's report needs (StudyKind.report_needs).
    Annotators below the study's quality thresholds (annotate/quality.py) are left out
    and listed in `excluded_annotators`, unless `include_flagged`."""
    kind = get_kind(study.kind)
    excluded = {} if include_flagged else flagged_annotators(study)
    columns = _item_columns(kind.report_needs)
    items = list(study.items.order_by("position", "id").annotate(**columns)
                 .values_list("id", "item_id", "is_gold", *columns))
    col = {name: 3 + k for k, name in enumerate(columns)}
    index = _Index(_column(items, 0))
    candidates = item_data = None
    if NEEDS_CANDIDATES in kind.report_needs:
        candidates = np.empty((len(items), 2), dtype=object)
        candidates[:, 0] = _column(items, col["r_a"])
        candidates[:, 1] = _column(items, col["r_b"])
    if NEEDS_PAIR_TEXTS in kind.report_needs:
        item_data = [{"document": row[col["r_document"]] or {}, "users": row[col["r_users"]] or [],
                      "pairs": row[col["r_pairs"]] or []} for row in items]
    if "r_scores" in col:
        scores = _score_arrays(candidates, _column(items, col["r_scores"]))
    elif NEEDS_METRIC_SCORES in kind.report_needs:
        scores = _pg_score_arrays(study, index, candidates)
    else:
        scores = (None, None, None, None)
    expert = _expert_rows(items, col, candidates)
    rows, names, j_time = _judgment_rows(study, NEEDS_SUBMIT_TIMES in kind.report_needs, excluded)
    preds = list(Prediction.objects.filter(study=study).values_list(
        "item_id", "evaluator", "annotator", "question", "value"))
    return ReportInput(
        slug=study.slug, kind=kind.name, config=kind.report_config(study_config(study)),
        item_ids=_column(items, 1), is_gold=np.array(_column(items, 2), dtype=bool),
        gold=_gold_answers(study, items, index), candidates=candidates, item_data=item_data,
        j_item=index(r[0] for r in rows), j_annotator=names,
        j_question=_column(rows, 2), j_value=_column(rows, 3), j_shown=_column(rows, 4),
        j_seconds=np.array([np.nan if r[5] is None else r[5] for r in rows], dtype=float),
        j_time=j_time,
        s_item=scores[0], s_metric=scores[1], s_candidate=scores[2], s_value=scores[3],
        e_item=index(r[0] for r in expert), e_candidate=_column(expert, 1), e_value=_column(expert, 2),
        p_item=index(r[0] for r in preds), p_evaluator=_column(preds, 1), p_annotator=_column(preds, 2),
        p_question=_column(preds, 3), p_value=_column(preds, 4),
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
