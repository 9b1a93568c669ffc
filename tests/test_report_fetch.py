"""The report's fetch on PostgreSQL reads its columns as parsed texts (annotate/
report_columns.py): metric scores through PostgreSQL's JSON functions, judgments and
predictions grouped by label, items as joined texts. Each must give exactly the arrays the
generic path (rows read one by one, as on SQLite) gives, for every odd shape a batch may
carry, and the whole report must be the same either way."""
import datetime
import math

import numpy as np
import pytest

from annotate import report_columns, report_data
from annotate.models import Item
from annotate.report_data import _Index, _score_arrays, fetch_report_input
from evaluation.report import build_report
from tests.factories import add_items, add_judgments, add_predictions, get_annotator, make_study

pytestmark = [pytest.mark.django_db, pytest.mark.postgres("the fast reads use PostgreSQL's string_agg, JSON functions")]


def _candidates(a="m-a", b="m-b"):
    return [{"id": a, "text": "one"}, {"id": b, "text": "two"}]


ODD_ITEMS = [
    ("plain", {"rougeL": {"m-a": 0.5, "m-b": 0.25}, "bleu": {"m-a": 1, "m-b": 0}}),
    ("strings and booleans", {"judge": {"m-a": "0.75", "m-b": "not a number"}, "flag": {"m-a": True, "m-b": False}}),
    ("huge and tiny", {"rougeL": {"m-a": 1e300, "m-b": -1e-320}}),
    ("missing candidate", {"rougeL": {"m-a": 0.1}, "bleu": {"m-b": None}}),
    ("nested values", {"rougeL": {"m-a": [1], "m-b": {"x": 1}}}),
    ("metric not a dict", {"rougeL": 0.3, "bleu": {"m-a": 0.2, "m-b": 0.2}}),
    ("scores not a dict", [1, 2]),
    ("no scores", None),
    ("unicode metric", {"ρ-métrique": {"m-a": 0.9, "m-b": 0.1}}),
]


def _rows(arrays):
    """The score rows as a sorted list of (item, metric, candidate, value as text)."""
    item, metric, candidate, value = arrays
    if item is None:
        return []
    return sorted((int(i), str(m), str(c), "nan" if math.isnan(v) else repr(float(v)))
                  for i, m, c, v in zip(item.tolist(), metric.tolist(), candidate.tolist(), value.tolist()))


def test_pg_scores_equal_the_generic_path_on_odd_shapes():
    study = make_study(slug="fetch-odd")
    rows = []
    for k, (name, scores) in enumerate(ODD_ITEMS):
        data = {"input": name, "reference": "r", "candidates": _candidates()}
        if scores is not None:
            data["metric_scores"] = scores
        rows.append((f"i{k}", data, None))
    rows.append(("no candidate id", {"input": "x", "reference": "r", "candidates": [{"text": "a"}, {"text": "b"}],
                                     "metric_scores": {"rougeL": {"m-a": 0.4}}}, None))
    add_items(study, rows)
    items = list(Item.objects.filter(study=study).order_by("position", "id"))
    index = _Index([i.pk for i in items])
    candidates = np.empty((len(items), 2), dtype=object)
    candidates[:] = [[(c.get("id") if isinstance(c, dict) else None) for c in i.data["candidates"]] for i in items]
    generic = _score_arrays(candidates, [i.data.get("metric_scores") for i in items])
    fast = report_columns.score_arrays(report_columns.start_scores(study)(), index, candidates)
    assert _rows(fast) == _rows(generic)
    # Spot checks written out by hand: "0.75" is read as 0.75, True as 1, 1e300 as written.
    assert (1, "judge", "m-a", "0.75") in _rows(fast) and (1, "flag", "m-a", "1.0") in _rows(fast)
    assert (2, "rougeL", "m-a", "1e+300") in _rows(fast) and (2, "rougeL", "m-b", "-1e-320") in _rows(fast)


def _generic(monkeypatch):
    """Every PostgreSQL column reader made to decline, so the generic row path runs."""
    for name in ("judgment_columns", "item_columns", "prediction_columns"):
        monkeypatch.setattr(report_columns, name, lambda *args: None)

    def scores(study):
        return lambda: (study, None)

    def generic_scores(texts, index, candidates):
        items = list(Item.objects.filter(study=texts[0]).order_by("position", "id"))
        return _score_arrays(candidates, [i.data.get("metric_scores") for i in items])

    monkeypatch.setattr(report_columns, "start_scores", scores)
    monkeypatch.setattr(report_columns, "score_arrays", generic_scores)


def test_the_pairwise_report_is_the_same_through_either_path(monkeypatch):
    """The whole report of a study with odd score shapes is identical whether the scores
    come from SQL or from the parsed JSON."""
    study = make_study(slug="fetch-report")
    add_items(study, [(f"i{k}", {"input": name, "reference": "r", "candidates": _candidates(),
                                 **({"metric_scores": s} if s is not None else {})}, None)
                      for k, (name, s) in enumerate(ODD_ITEMS)])
    fast = build_report(fetch_report_input(study))
    _generic(monkeypatch)
    assert build_report(fetch_report_input(study)) == fast


ODD_IDS = ["plain", "with, comma", "ünïcode ✓", "'quote\"", "1e5", " spaced "]
WHEN = datetime.datetime(2026, 11, 20, 12, 0, 0, 123456, tzinfo=datetime.UTC)


def _odd_study(slug, item_ids=ODD_IDS, candidate_ids=("m-a", "m-b")):
    """Items with odd ids and candidates, judgments with skips, missing and odd seconds and
    submit times, choices and ratings with odd values, predictions of several kinds."""
    study = make_study(slug=slug)
    rows = []
    for k, item_id in enumerate(item_ids):
        candidates = _candidates(*candidate_ids) if k != 2 else [{"text": "no id"}, {"id": "m-b", "text": "b"}]
        rows.append((item_id, {"input": item_id, "reference": "r", "candidates": candidates,
                               "metric_scores": {"rougeL": {candidate_ids[0]: k / 10, candidate_ids[1]: 0.25}}},
                     None))
    add_items(study, rows)
    values = [candidate_ids[0], candidate_ids[1], "tie", "", "1.0", "1"]
    judgments = []
    for k, item_id in enumerate(item_ids):
        for a, who in enumerate(("ann-x", "ann-y", "ann-z")):
            seconds = [None, 0.1, 1e-7, 12.5][(k + a) % 4]
            when = None if (k + a) % 3 == 0 else WHEN + datetime.timedelta(seconds=k * 7 + a, microseconds=k)
            judgments.append((item_id, who, "choice", values[(k + a) % len(values)],
                              "|".join(candidate_ids[::1 if a % 2 else -1]), seconds, when))
        judgments.append((item_id, "ann-x", "_skip", "unclear", "", None, WHEN))
    add_judgments(study, judgments)
    add_predictions(study, [(item_ids[0], "gemba", "", "choice", candidate_ids[0]),
                            (item_ids[1], "gemba", "", "choice", "N/A"),
                            (item_ids[1], "judge", "ann-x", "choice", candidate_ids[1]),
                            (item_ids[3], "bleu", "", candidate_ids[0], "0.5"),
                            (item_ids[3], "bleu", "", candidate_ids[1], "")])
    return study


def _same_columns(a, b):
    """The generic and the fast columns hold the same values (Labelled read as objects)."""
    from evaluation.report.inputs import objects

    def plain(column):
        return None if column is None else objects(column).tolist() if not isinstance(column, np.ndarray) \
            or column.dtype == object else column.tolist()

    for x, y in zip(a, b, strict=True):
        x, y = plain(x), plain(y)
        assert x == y or (x is not None and all(u == v or (u != u and v != v) for u, v in zip(x, y, strict=True)))


def test_judgment_columns_equal_the_generic_rows():
    study = _odd_study("fetch-judgments")
    excluded = [get_annotator("ann-z").pk]
    for want_time in (False, True):
        for skip in ([], excluded):
            fast = report_columns.judgment_columns(study, want_time, skip, report_data._usernames)
            generic = report_data._judgment_rows(study, want_time, skip)
            assert len(fast.item_pk) == (len(ODD_IDS) * (3 if not skip else 2) + len(ODD_IDS))
            _same_columns([fast.item_pk, fast.annotator, fast.question, fast.value, fast.shown, fast.seconds,
                           fast.time], [generic.item_pk, generic.annotator, generic.question, generic.value,
                                        generic.shown, generic.seconds, generic.time])
    # One value written out: the microseconds of a submit time survive the text round trip.
    fast = report_columns.judgment_columns(study, True, [], report_data._usernames)
    assert WHEN.timestamp() + 7 + 1 + 1e-6 in fast.time.tolist()


def test_item_and_prediction_columns_equal_the_generic_rows(monkeypatch):
    from annotate.kinds import get_kind

    study = _odd_study("fetch-items")
    needs = get_kind(study.kind).report_needs
    fast, generic = report_data._items(study, needs), report_data._items_generic(study, needs)
    assert fast[1] == generic[1] == ODD_IDS
    assert fast[3][2].tolist() == [None, "m-b"] and fast[3].tolist() == generic[3].tolist()
    _same_columns(fast[:3], generic[:3])
    fast_predictions = report_columns.prediction_columns(study)
    assert len(fast_predictions[0]) == 5
    monkeypatch.setattr(report_columns, "prediction_columns", lambda study: None)
    _same_columns(fast_predictions, report_data._predictions(study))


@pytest.mark.parametrize("item_ids, candidate_ids", [
    (["a\x1fb", *ODD_IDS[1:]], ("m-a", "m-b")),  # the separator in an item id
    (ODD_IDS, ("m\x1fa", "m-b")),  # ... in a candidate id
    ([*ODD_IDS[:-1], "\x1e"], ("m-a", "m-b")),  # the missing-candidate marker as an id
])
def test_a_separator_inside_a_text_falls_back_to_the_generic_path(monkeypatch, item_ids, candidate_ids):
    from annotate.kinds import get_kind

    study = _odd_study(f"fetch-sep-{item_ids[0][:1]}{item_ids[-1][:1]}{candidate_ids[0][1:2]}".encode().hex(),
                       item_ids, candidate_ids)
    assert report_columns.item_columns(study, True) is None
    report = build_report(fetch_report_input(study))
    assert report_data._items(study, get_kind(study.kind).report_needs)[1] == item_ids
    _generic(monkeypatch)
    assert build_report(fetch_report_input(study)) == report


def test_stored_nan_and_infinite_seconds_read_as_the_generic_path():
    """PostgreSQL writes a stored NaN or infinity as 'NaN', 'Infinity', '-Infinity'; NumPy
    reads those words, so the fast path keeps them exactly as the row path does."""
    from annotate.models import Judgment

    study = _odd_study("fetch-nan-seconds")
    rows = list(Judgment.objects.filter(study=study, question="choice").order_by("id")[:3])
    for row, seconds in zip(rows, (float("inf"), float("-inf"), float("nan")), strict=True):
        Judgment.objects.filter(pk=row.pk).update(seconds=seconds)
    fast = report_columns.judgment_columns(study, False, [], report_data._usernames)
    generic = report_data._judgment_rows(study, False, [])
    assert fast.seconds[:3].tolist()[:2] == [float("inf"), float("-inf")] and math.isnan(fast.seconds[2])
    assert np.array_equal(fast.seconds, generic.seconds, equal_nan=True)


def test_every_demo_kind_reports_the_same_through_either_path(monkeypatch):
    """The demo study of each kind, judged by three annotators: its report is identical
    whether the columns come from PostgreSQL's texts or from rows read one by one."""
    import io

    from django.core.management import call_command

    from annotate.models import Study
    from tests.factories import judge_every_item

    call_command("demo", "--force", stdout=io.StringIO())
    studies = list(Study.objects.all())
    assert len({s.kind for s in studies}) == 4
    for study in studies:
        judge_every_item(study)
    fast = {s.slug: build_report(fetch_report_input(s)) for s in studies}
    _generic(monkeypatch)
    assert {s.slug: build_report(fetch_report_input(s)) for s in studies} == fast


@pytest.mark.django_db(transaction=True)
def test_scores_read_on_a_second_connection_outside_a_transaction():
    """Outside a transaction the score query runs on its own connection beside the other
    columns; the result is the one read in line."""
    study = _odd_study("fetch-thread")
    texts = report_columns.start_scores(study)()
    inline = report_columns._score_texts(study)
    assert [g[0] for g in texts[0]] == [g[0] for g in inline[0]] == ["rougeL"]
    for a, b in zip(texts[0], inline[0], strict=True):
        assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a[1:4], b[1:4], strict=True))
