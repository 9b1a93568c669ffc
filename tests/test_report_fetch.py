"""The report's column reader (annotate/reports/columns.py): one interface, read on
PostgreSQL as parsed texts (`PostgresColumns`) or row by row with the ORM (`ColumnReader`,
every database). Both must give exactly the same columns for every odd shape a study may
hold, each PostgreSQL read must fall back to the ORM read when a text would not read back
(a separator inside an id or a value, a number NumPy does not parse), and the whole report
must be the same either way. Metric scores are read from Prediction rows only."""
import datetime
import math

import numpy as np
import pytest

from annotate.models import Judgment, Prediction
from annotate.reports import columns as report_columns
from annotate.reports.columns import ColumnReader, PostgresColumns, Unreadable
from annotate.reports.data import fetch_report_input
from evaluation.report import build_report
from evaluation.report.inputs import objects
from tests.factories import add_items, add_judgments, add_predictions, make_study

pytestmark = [pytest.mark.django_db, pytest.mark.postgres("the fast reads use PostgreSQL's string_agg, JSON functions")]
ODD_IDS = ["plain", "with, comma", "ünïcode ✓", "'quote\"", "1e5", " spaced "]
WHEN = datetime.datetime(2026, 11, 20, 12, 0, 0, 123456, tzinfo=datetime.UTC)


def _candidates(a="m-a", b="m-b"):
    return [{"id": a, "text": "one"}, {"id": b, "text": "two"}]


def _odd_study(slug, item_ids=ODD_IDS, candidate_ids=("m-a", "m-b"), missing_id=True):
    """Items with odd ids and candidates (one without an id, unless not `missing_id`),
    judgments with skips, missing and odd seconds and submit times, choices and ratings with
    odd values, predictions of several kinds (scores among them, one unparsed)."""
    study = make_study(slug=slug)
    rows = []
    for k, item_id in enumerate(item_ids):
        candidates = (_candidates(*candidate_ids) if k != 2 or not missing_id
                      else [{"text": "no id"}, {"id": "m-b", "text": "b"}])
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
                            (item_ids[3], "bleu", "", candidate_ids[1], ""),
                            (item_ids[4], "ρ-métrique", "", candidate_ids[1], "1e300")])
    return study


def _plain(column):
    """A column as a list of values (Labelled and object arrays read as objects)."""
    if column is None:
        return None
    if not isinstance(column, np.ndarray) or column.dtype == object:
        return objects(column).tolist()
    return column.tolist()


def _same(a, b):
    for x, y in zip(a, b, strict=True):
        x, y = _plain(x), _plain(y)
        assert x == y or (x is not None and all(u == v or (u != u and v != v) for u, v in zip(x, y, strict=True)))


def _items(cols):
    return [cols.pk, cols.item_id, cols.is_gold, cols.cand_item, cols.cand_id]


def _judgments(cols):
    return [cols.item_pk, cols.annotator, cols.question, cols.value, cols.shown, cols.seconds, cols.time]


def _predictions(cols):
    return [cols.item_pk, cols.evaluator, cols.annotator, cols.question, cols.value]


def test_both_readers_give_the_same_columns():
    study = _odd_study("fetch-columns", missing_id=False)
    fast, orm = PostgresColumns(), ColumnReader()
    items = fast._items(study, "candidates", ())  # the PostgreSQL read itself, no fallback
    assert items is not None and items.item_id == ODD_IDS
    assert items.cand_item.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    _same(_items(items), _items(orm.items(study, "candidates", ())))
    # A candidate without an id: the PostgreSQL read declines, the ORM keeps its place as None.
    odd = _odd_study("fetch-columns-odd")
    assert fast._items(odd, "candidates", ()) is None
    assert fast.items(odd, "candidates", ()).cand_id[4:6] == orm.items(odd, "candidates", ()).cand_id[4:6] == [
        None, "m-b"]
    for want_time in (False, True):
        judgments = fast._judgments(study, want_time)
        assert judgments is not None and len(judgments.item_pk) == len(ODD_IDS) * 4
        _same(_judgments(judgments), _judgments(orm.judgments(study, want_time)))
    # One value written out: the microseconds of a submit time survive the text round trip.
    assert WHEN.timestamp() + 7 + 1 + 1e-6 in fast._judgments(study, True).time.tolist()
    predictions = fast._predictions(study)
    assert predictions is not None and len(predictions.item_pk) == 6 + 2 * len(ODD_IDS)  # + the items' scores
    _same(_predictions(predictions), _predictions(orm.predictions(study)))
    rows = list(zip(_plain(predictions.evaluator), _plain(predictions.question), _plain(predictions.value)))
    assert ("ρ-métrique", "m-b", "1e300") in rows and ("bleu", "m-b", "") in rows


def test_items_of_any_number_of_candidates_and_a_single_candidate_object():
    """Candidates as a list of any length, or one {id, text} object (a kind whose items rate
    one output): the same long table from both readers, in item order."""
    study = make_study(slug="fetch-shapes")
    add_items(study, [("three", {"candidates": [{"id": "a"}, {"id": "b"}, {"id": "c"}]}, None),
                      ("one", {"candidates": {"id": "solo", "text": "x"}}, None),
                      ("none", {"candidates": "not a list"}, None),
                      ("number", {"candidates": [{"id": 7}, {"id": "b"}]}, None)])
    fast = PostgresColumns()._items(study, "candidates", ("candidates",))
    orm = ColumnReader().items(study, "candidates", ("candidates",))
    assert fast.cand_item.tolist() == [0, 0, 0, 1, 3, 3]
    assert fast.cand_id == ["a", "b", "c", "solo", "7", "b"]
    _same(_items(fast), _items(orm))
    assert fast.data == orm.data and fast.data[1] == {"candidates": {"id": "solo", "text": "x"}}
    add_items(study, [("bare", {"candidates": [{"id": "x"}, "bare"]}, None)])
    assert PostgresColumns()._items(study, "candidates", ()) is None  # an entry without an id: the ORM reads it
    read = PostgresColumns().items(study, "candidates", ())  # "bare" has position 0: after "three" (same position)
    assert read.cand_id[3:5] == ["x", None] and read.cand_id == ColumnReader().items(study, "candidates", ()).cand_id


def test_expert_scores_are_the_same_from_both_readers():
    study = make_study("explanation_choice", slug="fetch-expert")
    add_items(study, [("a", {"candidates": _candidates(), "explanations": {"m-a": {"score": 0.75}, "m-b": {"score": 1},
                                                                            "m-c": "not an object"}}, None),
                      ("b", {"candidates": _candidates(), "explanations": [1]}, None),
                      ("c", {"candidates": _candidates(), "explanations": {"m-b": {"no": "score"}}}, None)])
    fast, orm = PostgresColumns().expert_scores(study), ColumnReader().expert_scores(study)
    assert fast[0].tolist() == orm[0].tolist() and fast[1] == orm[1] == ["m-a", "m-b", "m-b"]
    assert [float(v) if v is not None else None for v in fast[2]] == [0.75, 1.0, None]
    assert [float(v) if v is not None else None for v in orm[2]] == [0.75, 1.0, None]


def test_numbers_refuses_a_bad_text_instead_of_raising_numpys_error():
    """NumPy (the pinned 2.x) raises ValueError on an entry it cannot parse; the reader
    must see Unreadable (its signal to fall back), never a ValueError."""
    assert report_columns.numbers("1,2.5,nan", 3).tolist()[:2] == [1.0, 2.5]
    for text, n in (("1,x,3", 3), ("1,,2", 3), ("abc", 1), ("1,2", 3), ("1.5,2", 2)):
        with pytest.raises(Unreadable):
            report_columns.numbers(text, n, np.int64 if text == "1.5,2" else float)
    assert report_columns.numbers(None, 0).tolist() == []


def _orm_only(monkeypatch):
    """Every PostgreSQL read made to decline, so the ORM reads run."""
    for name in ("_items", "_judgments", "_predictions"):
        monkeypatch.setattr(PostgresColumns, name, lambda self, *args: None)


def test_a_column_numpy_cannot_parse_falls_back_to_the_orm(monkeypatch):
    """Bad input for real: the judgments query made to return a text NumPy refuses ('x' for
    every time spent). The read must fall back to the ORM, and the report must be the one
    the clean read gives."""
    study = _odd_study("fetch-bad-number")
    clean = build_report(fetch_report_input(study))
    orm_reads = []
    original = ColumnReader.judgments

    def spy(self, *args):
        orm_reads.append(args)
        return original(self, *args)

    monkeypatch.setattr(ColumnReader, "judgments", spy)
    monkeypatch.setattr(report_columns, "PG_JUDGMENTS",
                        report_columns.PG_JUDGMENTS.replace("coalesce(seconds::text, 'nan')", "'x'"))
    assert PostgresColumns()._judgments(study, False) is None
    assert build_report(fetch_report_input(study)) == clean
    assert orm_reads  # the fallback ran


@pytest.mark.parametrize("item_ids, candidate_ids, value", [
    (["a\x1fb", *ODD_IDS[1:]], ("m-a", "m-b"), "0.5"),  # the separator in an item id
    (ODD_IDS, ("m\x1fa", "m-b"), "0.5"),  # ... in a candidate id
    ([*ODD_IDS[:-1], "\x1e"], ("m-a", "m-b"), "0.5"),  # the missing-candidate marker as an id
    (ODD_IDS, ("m-a", "m-b"), "a\x1fb"),  # ... in a prediction's value
])
def test_a_separator_inside_a_text_falls_back_to_the_orm(monkeypatch, item_ids, candidate_ids, value):
    study = _odd_study(f"fetch-sep-{item_ids[0][:1]}{item_ids[-1][:1]}{candidate_ids[0][1:2]}{value[:1]}"
                       .encode().hex(), item_ids, candidate_ids)
    add_predictions(study, [(item_ids[5], "judge", "", "choice", value)])
    declined = (PostgresColumns()._items(study, "candidates", ()) is None,
                PostgresColumns()._predictions(study) is None)
    assert any(declined)
    report = build_report(fetch_report_input(study))
    assert PostgresColumns().items(study, "candidates", ()).item_id == item_ids
    _orm_only(monkeypatch)
    assert build_report(fetch_report_input(study)) == report


def test_stored_nan_and_infinite_seconds_read_as_the_orm_does():
    """PostgreSQL writes a stored NaN or infinity as 'NaN', 'Infinity', '-Infinity'; NumPy
    reads those words, so the fast read keeps them exactly as the row read does."""
    study = _odd_study("fetch-nan-seconds")
    rows = list(Judgment.objects.filter(study=study, question="choice").order_by("id")[:3])
    for row, seconds in zip(rows, (float("inf"), float("-inf"), float("nan")), strict=True):
        Judgment.objects.filter(pk=row.pk).update(seconds=seconds)
    fast = PostgresColumns()._judgments(study, False)
    orm = ColumnReader().judgments(study, False)
    assert fast.seconds[:3].tolist()[:2] == [float("inf"), float("-inf")] and math.isnan(fast.seconds[2])
    assert np.array_equal(fast.seconds, orm.seconds, equal_nan=True)


def test_metric_scores_come_from_prediction_rows_only():
    """An item's metric_scores JSON is not read by the report: the Prediction rows are (the
    importer writes one per score). A score changed or deleted there changes the report."""
    study = _odd_study("fetch-scores")
    inp = fetch_report_input(study)
    assert sorted(set(inp.s_metric.tolist())) == ["bleu", "rougeL", "ρ-métrique"]
    Prediction.objects.filter(study=study, evaluator="rougeL").delete()
    inp = fetch_report_input(study)
    assert "rougeL" not in set(inp.s_metric.tolist())  # though every item's JSON still holds it
    assert "rougeL" not in build_report(inp)["alignment"]


def test_quality_flags_come_from_the_report_columns_with_the_reports_gold_rule():
    """ann-z answers the gold item wrongly, ann-x rightly; the thresholds leave ann-z out.
    A rating gold of 4 matches a stored "4.0" by the report's rule (numbers compare as
    numbers), as the report's own gold accuracy counts it."""
    from annotate.reports.quality import annotator_quality

    study = _odd_study("fetch-quality")
    add_items(study, [("gold-1", {"input": "g", "reference": "r", "candidates": _candidates()},
                       {"choice": "m-a", "usefulness": 4})])
    add_judgments(study, [("gold-1", "ann-x", "choice", "m-a", "m-a|m-b", 3.0),
                          ("gold-1", "ann-x", "usefulness", "4.0", "", 3.0),
                          ("gold-1", "ann-z", "choice", "m-b", "m-a|m-b", 4.0)])
    quality = annotator_quality(study)
    assert (quality["ann-x"]["gold_checked"], quality["ann-x"]["gold_correct"]) == (2, 2)
    assert (quality["ann-z"]["gold_checked"], quality["ann-z"]["gold_correct"]) == (1, 0)
    assert quality["ann-x"]["items"] == len(ODD_IDS) + 1 and quality["ann-x"]["judgments"] == 2 * len(ODD_IDS) + 2
    study.quality = {"min_gold_accuracy": 0.5}
    study.save()
    report = build_report(fetch_report_input(study))
    assert report["excluded_annotators"] == {"ann-z": "gold accuracy 0.00 < 0.5"}
    assert "ann-z" not in report["annotators"] and report["annotators"]["ann-x"]["gold_accuracy"] == 1.0
    assert build_report(fetch_report_input(study, include_flagged=True))["annotators"]["ann-z"]["gold_accuracy"] == 0


def test_every_demo_kind_reports_the_same_through_either_reader(monkeypatch):
    """The demo study of each kind, judged by three annotators: its report is identical
    whether the columns come from PostgreSQL's texts or from rows read one by one."""
    import io

    from django.core.management import call_command

    from annotate.kinds import KINDS
    from annotate.models import Study
    from tests.factories import judge_every_item

    call_command("demo", "--force", stdout=io.StringIO())
    studies = list(Study.objects.all())
    assert {s.kind for s in studies} == set(KINDS)
    for study in studies:
        judge_every_item(study)
    fast = {s.slug: build_report(fetch_report_input(s)) for s in studies}
    _orm_only(monkeypatch)
    assert {s.slug: build_report(fetch_report_input(s)) for s in studies} == fast
