"""The report's column reader: one interface, two implementations.

`ColumnReader` reads a study's items, judgments, predictions and ExPerT scores as columns
(arrays, one entry per row) with the ORM, row by row, on every database. `PostgresColumns`
reads the same columns as comma-joined texts (`string_agg`) that NumPy parses in one call,
so a million judgments cost a few texts instead of a million Python tuples; judgments are
grouped by their few distinct labels (annotator, question, value, shown order), so labels
arrive once per group with the row ids of the group, already as integer codes. Each of
its reads falls back to the ORM read of the same columns when a text would not read back
exactly (a separator inside an id, a number NumPy does not parse): both readers give the
same arrays. `reader()` picks the reader for the database in use. Test-retest repeats
(Judgment.repeat_of) are never read here: every statistic but the report's `retest`
(annotate/reports/retest.py) sees first answers only.

Candidates come as one long table (item, candidate id; any number per item) from the item
key the kind names (`StudyKind.candidates_key`: a list of {id, ...} or one {id, ...}).
"""
import json
import warnings
from dataclasses import dataclass

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection

from annotate.models import Judgment, Prediction
from evaluation.report.inputs import Labelled, objects

UNIT = "\x1f"  # between the texts of one column (item ids, candidate ids, values)
NULL = "\x1e"  # a missing candidate id


class Unreadable(Exception):
    """A column did not parse into the number of values it holds."""


def numbers(text, n, dtype=float):
    """The `n` comma-joined numbers of `text` (None or "" when n = 0); Unreadable when the
    text does not parse (NumPy raises ValueError on a bad entry) or holds another count."""
    if n == 0:
        return np.zeros(0, dtype=dtype)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # older NumPy warned on a bad entry
            values = np.fromstring(text, dtype=dtype, sep=",")
    except (TypeError, ValueError):
        raise Unreadable from None
    if len(values) != n:
        raise Unreadable
    return values


def texts(text, n):
    """The `n` UNIT-joined texts of `text`, NULL read as None."""
    parts = text.split(UNIT) if n else []
    if len(parts) != n:
        raise Unreadable
    return [None if p == NULL else p for p in parts]


@dataclass
class ItemColumns:
    pk: np.ndarray  # int64, in (position, id) order, as every column here
    item_id: list
    is_gold: np.ndarray  # bool
    cand_item: np.ndarray  # int64 index into the items, one row per candidate, in item order
    cand_id: list  # the candidate id of each row (None: a candidate without an id)
    data: list | None  # {key: JSON value or None} per item for the asked keys; None when none asked


@dataclass
class JudgmentColumns:
    item_pk: np.ndarray
    annotator: Labelled  # usernames
    question: Labelled
    value: Labelled
    shown: Labelled
    seconds: np.ndarray
    time: np.ndarray | None  # epoch seconds, NaN = unknown; None when not asked for

    def where(self, keep: np.ndarray) -> "JudgmentColumns":
        """The rows where `keep` holds."""
        return JudgmentColumns(self.item_pk[keep], self.annotator.where(keep), self.question.where(keep),
                               self.value.where(keep), self.shown.where(keep), self.seconds[keep],
                               None if self.time is None else self.time[keep])


@dataclass
class PredictionColumns:
    item_pk: np.ndarray  # in id order
    evaluator: np.ndarray  # object, as the other three
    annotator: np.ndarray  # "" = for every annotator
    question: np.ndarray
    value: np.ndarray


def _id_text(value):
    """A candidate id as PostgreSQL's ->> reads it: strings as they are, other JSON as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _json_texts(text, n):
    """The `n` UNIT-joined JSON texts of `text`, parsed in one call."""
    return json.loads("[" + ",".join(texts(text, n)) + "]") if n else []


def candidate_rows(value):
    """The candidate ids in one item's candidates value (a list of {id}, or one {id})."""
    entries = [value] if isinstance(value, dict) else value if isinstance(value, list) else []
    return [_id_text(c.get("id")) if isinstance(c, dict) else None for c in entries]


def _labelled(keys, group):
    """Labelled column of each row from its group's key (groups share labels)."""
    labels = sorted(set(keys), key=lambda v: (v is None, str(v)))
    code_of = {v: k for k, v in enumerate(labels)}
    label_array = np.empty(len(labels), dtype=object)
    label_array[:] = labels
    return Labelled(label_array, np.array([code_of[k] for k in keys], dtype=np.int64)[group])


def usernames(ids):
    """{user id: username} of `ids` (the id as text for a user that no longer exists)."""
    names = dict(get_user_model().objects.filter(id__in=list(ids)).values_list("id", "username"))
    return {i: names.get(i, str(i)) for i in ids}


def _column(rows, k):
    return [row[k] for row in rows]


class ColumnReader:
    """The columns of a study read with the ORM, row by row (every database)."""

    def items(self, study, candidates_key=None, keys=()) -> ItemColumns:
        """The study's items in import order: pk, item id, gold flag, the candidate ids
        under `candidates_key`, and the values of the top-level `keys` (None if missing)."""
        fields = ([f"data__{candidates_key}"] if candidates_key else []) + [f"data__{k}" for k in keys]
        rows = list(study.items.order_by("position", "id").values_list("id", "item_id", "is_gold", *fields))
        cand_item, cand_id = [], []
        if candidates_key:
            for index, row in enumerate(rows):
                ids = candidate_rows(row[3])
                cand_item += [index] * len(ids)
                cand_id += ids
        first = 3 + bool(candidates_key)
        data = [dict(zip(keys, row[first:])) for row in rows] if keys else None
        return ItemColumns(np.array(_column(rows, 0), dtype=np.int64), _column(rows, 1),
                           np.array(_column(rows, 2), dtype=bool), np.array(cand_item, dtype=np.int64), cand_id, data)

    def judgments(self, study, want_time=False) -> JudgmentColumns:
        """Every judgment of the study in id (submit) order, test-retest repeats left out
        (annotate/reports/retest.py reads those)."""
        rows = list(Judgment.objects.filter(study=study, repeat_of__isnull=True).order_by("id").values_list(
            "item_id", "annotator_id", "question", "value", "shown_order", "seconds",
            *(["submitted_at"] if want_time else [])))
        names = usernames(sorted({r[1] for r in rows}))
        time = None
        if want_time:
            time = np.array([r[6].timestamp() if r[6] is not None else np.nan for r in rows], dtype=float)
        group = np.arange(len(rows))
        return JudgmentColumns(
            item_pk=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            annotator=_labelled([names[r[1]] for r in rows], group), question=_labelled(_column(rows, 2), group),
            value=_labelled(_column(rows, 3), group), shown=_labelled(_column(rows, 4), group),
            seconds=np.array([np.nan if r[5] is None else r[5] for r in rows], dtype=float), time=time)

    def predictions(self, study) -> PredictionColumns:
        """Every prediction of the study in id order."""
        rows = list(Prediction.objects.filter(study=study).order_by("id").values_list(
            "item_id", "evaluator", "annotator", "question", "value"))
        return PredictionColumns(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
                                 *(objects(_column(rows, k)) for k in range(1, 5)))

    def expert_scores(self, study) -> tuple[np.ndarray, list, list]:
        """(item pk, candidate id, score) of every ExPerT explanation object in the items'
        `explanations` ({candidate id: explanation}), in import order."""
        rows = study.items.order_by("position", "id").values_list("id", "data__explanations")
        out = [(pk, candidate, explanation.get("score")) for pk, explanations in rows
               if isinstance(explanations, dict)
               for candidate, explanation in explanations.items() if isinstance(explanation, dict)]
        return np.array(_column(out, 0), dtype=np.int64), _column(out, 1), _column(out, 2)


def _grouped(groups, ids_at):
    """(group index of each row, column(k, dtype)) of grouped string_agg rows whose column
    `ids_at` holds the rows' ids: rows are put in id order, and column(k) parses group
    column k into one array in that order (Unreadable when a text does not parse)."""
    counts = [g[ids_at].count(",") + 1 for g in groups]

    def parsed(k, dtype):
        if not groups:
            return np.zeros(0, dtype=dtype)
        return np.concatenate([numbers(g[k], c, dtype) for g, c in zip(groups, counts)])

    order = np.argsort(parsed(ids_at, np.int64), kind="stable")
    return np.repeat(np.arange(len(groups)), counts)[order], lambda k, dtype=float: parsed(k, dtype)[order]


PG_JUDGMENTS = """
SELECT annotator_id, question, value, shown_order, string_agg(id::text, ','), string_agg(item_id::text, ','),
       string_agg(coalesce(seconds::text, 'nan'), ','), {time}
FROM annotate_judgment WHERE study_id = %s AND repeat_of_id IS NULL
GROUP BY annotator_id, question, value, shown_order"""
PG_SUBMIT_TIME = "string_agg(coalesce(extract(epoch FROM submitted_at)::text, 'nan'), ',')"

# Candidate ids: each item's ids as one JSON array text (a jsonpath over the candidates
# value, lax: one object is read as a list of one), joined by UNIT (JSON text never holds a
# raw control character); `expected` counts the candidates, so a candidate without an id
# (which the path skips) sends the read to the ORM, which keeps its place as None.
PG_CANDIDATE_COLUMNS = """, jsonb_path_query_array(i.data -> %s, 'lax $[*].id')::text AS ids,
       CASE jsonb_typeof(i.data -> %s) WHEN 'array' THEN jsonb_array_length(i.data -> %s)
            WHEN 'object' THEN 1 ELSE 0 END AS expected"""
PG_ITEMS = """
SELECT count(*), string_agg(id::text, ','), string_agg(position::text, ','), string_agg(is_gold::int::text, ','),
       string_agg(item_id, E'\\x1f'), bool_or(strpos(item_id, E'\\x1f') > 0 OR strpos(item_id, E'\\x1e') > 0),
       string_agg(ids, E'\\x1f'), coalesce(bool_or(jsonb_array_length(ids::jsonb) <> expected), false){keys}
FROM (SELECT i.id, i.position, i.is_gold, i.item_id{candidates}{key_columns}
      FROM annotate_item i WHERE i.study_id = %s OFFSET 0) items"""
PG_PREDICTIONS = """
SELECT evaluator, annotator, question, string_agg(id::text, ','), string_agg(item_id::text, ','),
       string_agg(value, E'\\x1f'), bool_or(strpos(value, E'\\x1f') > 0)
FROM annotate_prediction WHERE study_id = %s GROUP BY evaluator, annotator, question"""
PG_EXPERT_SCORES = """
SELECT i.id, e.key, e.value ->> 'score' FROM annotate_item i
CROSS JOIN LATERAL jsonb_each(CASE jsonb_typeof(i.data -> 'explanations') WHEN 'object'
                               THEN i.data -> 'explanations' ELSE '{}'::jsonb END) e
WHERE i.study_id = %s AND jsonb_typeof(e.value) = 'object' ORDER BY i.position, i.id"""


class PostgresColumns(ColumnReader):
    """The same columns read as parsed texts on PostgreSQL; each read falls back to the
    ORM read (ColumnReader) when its texts would not read back exactly."""

    def items(self, study, candidates_key=None, keys=()):
        fast = self._items(study, candidates_key, keys)
        return fast if fast is not None else super().items(study, candidates_key, keys)

    def judgments(self, study, want_time=False):
        fast = self._judgments(study, want_time)
        return fast if fast is not None else super().judgments(study, want_time)

    def predictions(self, study):
        fast = self._predictions(study)
        return fast if fast is not None else super().predictions(study)

    def expert_scores(self, study):
        with connection.cursor() as cursor:
            cursor.execute(PG_EXPERT_SCORES, [study.pk])
            rows = cursor.fetchall()
        return np.array(_column(rows, 0), dtype=np.int64), _column(rows, 1), _column(rows, 2)

    def _items(self, study, candidates_key, keys):
        params = [candidates_key] * 3 if candidates_key else []
        sql = PG_ITEMS.format(
            keys="".join(f", string_agg(k{n}, E'\\x1f')" for n in range(len(keys))),
            candidates=PG_CANDIDATE_COLUMNS if candidates_key else ", '[]' AS ids, 0 AS expected",
            key_columns="".join(f", coalesce((i.data -> %s)::text, 'null') AS k{n}" for n in range(len(keys))))
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, *keys, study.pk])
            row = cursor.fetchone()
        n = row[0]
        if row[5] or row[7]:  # a separator inside an item id, or a candidate without an id
            return None
        try:
            pk, position = numbers(row[1], n, np.int64), numbers(row[2], n, np.int64)
            order = np.lexsort((pk, position))
            item_id = np.asarray(texts(row[4], n), dtype=object)[order] if n else np.zeros(0, dtype=object)
            ids = [[_id_text(c) for c in item] for item in _json_texts(row[6], n)]
            data = None
            if keys:
                columns = [_json_texts(row[8 + k], n) for k in range(len(keys))]
                data = [dict(zip(keys, values)) for values in zip(*columns)] if n else []
                data = [data[k] for k in order.tolist()]
        except Unreadable:
            return None
        ids = [ids[k] for k in order.tolist()]
        counts = np.fromiter((len(c) for c in ids), dtype=np.int64, count=n)
        return ItemColumns(pk[order], item_id.tolist(), numbers(row[3], n, np.int64)[order].astype(bool),
                           np.repeat(np.arange(n), counts), [c for item in ids for c in item], data)

    def _judgments(self, study, want_time):
        with connection.cursor() as cursor:
            cursor.execute(PG_JUDGMENTS.format(time=PG_SUBMIT_TIME if want_time else "NULL"), [study.pk])
            groups = cursor.fetchall()
        try:
            group, column = _grouped(groups, 4)
            item_pk, seconds = column(5, np.int64), column(6)
            time = column(7) if want_time else None
        except Unreadable:
            return None
        names = usernames(sorted({g[0] for g in groups}))
        return JudgmentColumns(item_pk, _labelled([names[g[0]] for g in groups], group),
                               _labelled([g[1] for g in groups], group), _labelled([g[2] for g in groups], group),
                               _labelled([g[3] for g in groups], group), seconds, time)

    def _predictions(self, study):
        """Grouped by (evaluator, annotator, question), the values joined as texts: metric
        scores are mostly distinct numbers, which a group per value would not gather."""
        with connection.cursor() as cursor:
            cursor.execute(PG_PREDICTIONS, [study.pk])
            groups = cursor.fetchall()
        if any(g[6] for g in groups):
            return None
        counts = [g[3].count(",") + 1 for g in groups]
        try:
            ids = np.concatenate([numbers(g[3], c, np.int64) for g, c in zip(groups, counts)]) if groups else []
            item_pk = np.concatenate([numbers(g[4], c, np.int64) for g, c in zip(groups, counts)]) if groups else []
            values = objects([v for g, c in zip(groups, counts) for v in texts(g[5], c)])
        except Unreadable:
            return None
        order = np.argsort(np.asarray(ids, dtype=np.int64), kind="stable")
        group = np.repeat(np.arange(len(groups)), counts)[order]
        return PredictionColumns(np.asarray(item_pk, dtype=np.int64)[order],
                                 *(objects([g[k] for g in groups])[group] for k in range(3)), values[order])


def reader() -> ColumnReader:
    """The column reader for the database in use."""
    return PostgresColumns() if connection.vendor == "postgresql" else ColumnReader()
