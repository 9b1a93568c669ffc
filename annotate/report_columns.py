"""The report's fetch on PostgreSQL, column by column: each column comes back as one
comma-joined text (`string_agg`) that NumPy parses in one call, so a million judgments
cost a few texts instead of a million Python tuples. Judgments and predictions are grouped
by their few distinct labels (annotator, question, value, shown order), so labels arrive
once per group with the row ids of the group, already as integer codes.

Every function returns None when a column would not read back exactly (a separator inside
an item id, a number PostgreSQL writes in a form NumPy does not parse); the caller then
takes the generic row-by-row path of annotate/report_data.py, which gives the same arrays.
"""
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from django.db import connection

from evaluation.report.inputs import Labelled, to_float

UNIT = "\x1f"  # between the texts of one column (item ids, candidate ids)
NULL = "\x1e"  # a missing candidate id


class Unreadable(Exception):
    """A column did not parse into the number of values it holds."""


def numbers(text, n, dtype=float):
    """The `n` comma-joined numbers of `text` (None or "" when n = 0)."""
    if n == 0:
        return np.zeros(0, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # NumPy's warning on a bad entry
        values = np.fromstring(text, dtype=dtype, sep=",")
    if len(values) != n:
        raise Unreadable
    return values


def texts(text, n):
    """The `n` UNIT-joined texts of `text`, NULL read as None."""
    parts = text.split(UNIT) if n else []
    if len(parts) != n:
        raise Unreadable
    return [None if p == NULL else p for p in parts]


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


def _labelled(keys, group):
    """Labelled column of each row from its group's key (groups share labels)."""
    labels = sorted(set(keys), key=lambda v: (v is None, str(v)))
    code_of = {v: k for k, v in enumerate(labels)}
    label_array = np.empty(len(labels), dtype=object)
    label_array[:] = labels
    return Labelled(label_array, np.array([code_of[k] for k in keys], dtype=np.int64)[group])


@dataclass
class JudgmentColumns:
    item_pk: np.ndarray
    annotator: Labelled  # usernames
    question: Labelled
    value: Labelled
    shown: Labelled
    seconds: np.ndarray
    time: np.ndarray | None  # epoch seconds, NaN = unknown; None when not asked for


PG_JUDGMENTS = """
SELECT annotator_id, question, value, shown_order, string_agg(id::text, ','), string_agg(item_id::text, ','),
       string_agg(coalesce(seconds::text, 'nan'), ','), {time}
FROM annotate_judgment WHERE study_id = %s AND NOT (annotator_id = ANY(%s))
GROUP BY annotator_id, question, value, shown_order"""
PG_SUBMIT_TIME = "string_agg(coalesce(extract(epoch FROM submitted_at)::text, 'nan'), ',')"


def judgment_columns(study, want_time, excluded_ids, username_of):
    """The study's judgments in id (submit) order, leaving out the annotators of
    `excluded_ids`; `username_of(ids)` names the annotators."""
    with connection.cursor() as cursor:
        cursor.execute(PG_JUDGMENTS.format(time=PG_SUBMIT_TIME if want_time else "NULL"),
                       [study.pk, list(excluded_ids)])
        groups = cursor.fetchall()
    try:
        group, column = _grouped(groups, 4)
        item_pk, seconds = column(5, np.int64), column(6)
        time = column(7) if want_time else None
    except Unreadable:
        return None
    names = username_of(sorted({g[0] for g in groups}))
    return JudgmentColumns(item_pk, _labelled([names[g[0]] for g in groups], group),
                           _labelled([g[1] for g in groups], group), _labelled([g[2] for g in groups], group),
                           _labelled([g[3] for g in groups], group), seconds, time)


@dataclass
class ItemColumns:
    pk: np.ndarray  # in (position, id) order, as every array here
    item_id: list
    is_gold: np.ndarray
    candidates: np.ndarray | None  # object (n, 2)


# Candidate ids come from a subquery that PostgreSQL must not flatten (OFFSET 0): each is
# read from the item's JSON once, not once per use in the aggregates.
PG_BOTH = "coalesce(c0, '') || coalesce(c1, '')"
PG_ITEM_CANDIDATES = (", string_agg(coalesce(c0, E'\\x1e'), E'\\x1f'), string_agg(coalesce(c1, E'\\x1e'), E'\\x1f'), "
                      f"bool_or(strpos({PG_BOTH}, E'\\x1f') > 0 OR strpos({PG_BOTH}, E'\\x1e') > 0)")
PG_ITEMS = """
SELECT count(*), string_agg(id::text, ','), string_agg(position::text, ','), string_agg(is_gold::int::text, ','),
       string_agg(item_id, E'\\x1f'),
       bool_or(strpos(item_id, E'\\x1f') > 0 OR strpos(item_id, E'\\x1e') > 0){candidates}
FROM (SELECT id, position, is_gold, item_id, {columns} FROM annotate_item WHERE study_id = %s OFFSET 0) items"""
PG_CANDIDATE_COLUMNS = "data -> 'candidates' -> 0 ->> 'id' AS c0, data -> 'candidates' -> 1 ->> 'id' AS c1"


def item_columns(study, want_candidates):
    """The study's items in import order: pk, item id, gold flag and (if asked) the ids of
    the two candidates."""
    with connection.cursor() as cursor:
        cursor.execute(PG_ITEMS.format(candidates=PG_ITEM_CANDIDATES if want_candidates else "",
                                       columns=PG_CANDIDATE_COLUMNS if want_candidates else "NULL"), [study.pk])
        row = cursor.fetchone()
    n = row[0]
    if row[5] or (want_candidates and row[8]):
        return None
    try:
        pk, position = numbers(row[1], n, np.int64), numbers(row[2], n, np.int64)
        order = np.lexsort((pk, position))
        item_id = np.asarray(texts(row[4], n), dtype=object)[order] if n else np.zeros(0, dtype=object)
        candidates = None
        if want_candidates:
            candidates = np.empty((n, 2), dtype=object)
            for k in (0, 1):
                candidates[:, k] = texts(row[6 + k], n)
            candidates = candidates[order]
        return ItemColumns(pk[order], item_id.tolist(), numbers(row[3], n, np.int64)[order].astype(bool),
                           candidates)
    except Unreadable:
        return None


PG_PREDICTIONS = """
SELECT evaluator, annotator, question, value, string_agg(id::text, ','), string_agg(item_id::text, ',')
FROM annotate_prediction WHERE study_id = %s GROUP BY evaluator, annotator, question, value"""


def prediction_columns(study):
    """(item pk, evaluator, annotator, question, value) of the study's predictions in id
    order, the four text columns as Labelled."""
    with connection.cursor() as cursor:
        cursor.execute(PG_PREDICTIONS, [study.pk])
        groups = cursor.fetchall()
    try:
        group, column = _grouped(groups, 4)
        item_pk = column(5, np.int64)
    except Unreadable:
        return None
    return (item_pk, *(_labelled([g[k] for g in groups], group) for k in range(4)))


PG_SCORE_ROWS = """
FROM annotate_item i
CROSS JOIN LATERAL (SELECT i.data -> 'candidates' -> 0 ->> 'id' AS c0, i.data -> 'candidates' -> 1 ->> 'id' AS c1) c
CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(i.data -> 'metric_scores') = 'object'
                                   THEN i.data -> 'metric_scores' ELSE '{}'::jsonb END) m
WHERE i.study_id = %s AND jsonb_typeof(m.value) = 'object'
"""
# The common case first: every score a JSON number (or null, or a missing candidate: nan),
# its text as PostgreSQL writes it; `all numbers` says whether that reading is exact.
PG_PLAIN_SCORES = ("SELECT m.key, string_agg(i.id::text, ','), string_agg(coalesce(m.value ->> c.c0, 'nan'), ','), "
                   "string_agg(coalesce(m.value ->> c.c1, 'nan'), ','), "
                   "bool_and(coalesce(jsonb_typeof(m.value -> c.c0), 'null') IN ('number', 'null') "
                   "AND coalesce(jsonb_typeof(m.value -> c.c1), 'null') IN ('number', 'null')), count(*) "
                   + PG_SCORE_ROWS + " GROUP BY m.key ORDER BY m.key")
# A score as json.loads + to_float read it: numbers as written, booleans 1/0; strings are
# read in Python (PG_STRING_SCORES); null, arrays, objects, a missing candidate: nan.
PG_NUMBER = ("coalesce(CASE jsonb_typeof(m.value -> c.{c}) WHEN 'number' THEN m.value ->> c.{c} "
             "WHEN 'boolean' THEN (m.value ->> c.{c} = 'true')::int::text END, 'nan')")
PG_SCORES = ("SELECT m.key, string_agg(i.id::text, ','), string_agg(" + PG_NUMBER.format(c="c0") + ", ','), "
             "string_agg(" + PG_NUMBER.format(c="c1") + ", ','), "
             "bool_or(jsonb_typeof(m.value -> c.c0) = 'string' OR jsonb_typeof(m.value -> c.c1) = 'string') "
             + PG_SCORE_ROWS + " GROUP BY m.key ORDER BY m.key")
PG_STRING_SCORES = ("SELECT i.id, m.key, m.value ->> c.c0, m.value ->> c.c1 " + PG_SCORE_ROWS
                    + " AND (jsonb_typeof(m.value -> c.c0) = 'string' OR jsonb_typeof(m.value -> c.c1) = 'string')")


def _score_groups(cursor, study):
    """[(metric, item pks, first scores, second scores, has strings)], by metric name. One
    query when every score is a number (the common case), else the full reading."""
    cursor.execute(PG_PLAIN_SCORES, [study.pk])
    plain = cursor.fetchall()
    if all(g[4] for g in plain):
        try:
            return [(key, numbers(pks, n, np.int64), numbers(first, n), numbers(second, n), False)
                    for key, pks, first, second, _, n in plain]
        except Unreadable:
            pass
    cursor.execute(PG_SCORES, [study.pk])
    return [(key, np.fromstring(pks, dtype=np.int64, sep=","), np.fromstring(first, sep=","),
             np.fromstring(second, sep=","), has_strings) for key, pks, first, second, has_strings in cursor.fetchall()]


def _score_texts(study):
    """(score groups, {(item pk, metric): the two scores as strings} where any is one)."""
    with connection.cursor() as cursor:
        groups = _score_groups(cursor, study)
        strings = {}
        if any(group[4] for group in groups):
            cursor.execute(PG_STRING_SCORES, [study.pk])
            strings = {(pk, key): (a, b) for pk, key, a, b in cursor.fetchall()}
    return groups, strings


def _on_own_connection(study):
    try:
        return _score_texts(study)
    finally:
        connection.close()  # this thread's connection


def start_scores(study):
    """A callable returning `_score_texts(study)`, whose query starts now on a second
    database connection (PostgreSQL works through the JSON of every item while this thread
    reads the other columns), unless the caller is inside a transaction: another
    connection could not see its rows, so the query then runs when called."""
    if connection.in_atomic_block:
        return lambda: _score_texts(study)
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(_on_own_connection, study)
    pool.shutdown(wait=False)
    return future.result


def score_arrays(fetched, index, candidates):
    """annotate/report_data.py `_score_arrays` computed by PostgreSQL from `fetched` (what
    `start_scores` returns): per metric (in name order) its items and the two candidates'
    scores, so no item's JSON is parsed in Python. Scores written as strings (rare) are
    read row by row."""
    groups, strings = fetched
    per_metric = []
    for key, pk, first, second, has_strings in groups:
        order = np.argsort(pk, kind="stable")
        pk, first, second = pk[order], first[order], second[order]
        if has_strings:
            for row in np.flatnonzero([(p, key) in strings for p in pk.tolist()]).tolist():
                a, b = strings[(int(pk[row]), key)]
                first[row], second[row] = to_float([a, b])
        item = index(pk)
        order = np.argsort(item, kind="stable")  # item order (import position), as the generic path
        per_metric.append((key, item[order], first[order], second[order]))
    return long_scores(per_metric, candidates)


def long_scores(per_metric, candidates):
    """The report's long score arrays (item index, metric, candidate id, value) from
    [(metric, item indices, first candidate's scores, second's)]; Nones without any."""
    items, metrics, cands, values = [], [], [], []
    for key, item, first, second in per_metric:
        items += [item, item]
        metrics.append(np.full(2 * len(item), key, dtype=object))
        cands += [candidates[item, 0], candidates[item, 1]]
        values += [first, second]
    if not items:
        return None, None, None, None
    return np.concatenate(items), np.concatenate(metrics), np.concatenate(cands), np.concatenate(values)
