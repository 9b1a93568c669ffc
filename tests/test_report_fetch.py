"""The report's fetch on PostgreSQL reads metric scores in SQL (annotate/report_data.py
`_pg_score_arrays`); it must give exactly the rows the generic path (the items' JSON parsed
in Python, as on SQLite) gives, for every odd shape a batch may carry."""
import math

import numpy as np
import pytest

from annotate.models import Item
from annotate.report_data import _Index, _pg_score_arrays, _score_arrays, fetch_report_input
from evaluation.report import build_report
from tests.factories import add_items, make_study

pytestmark = [pytest.mark.django_db, pytest.mark.postgres("the score rows are read by PostgreSQL's JSON functions")]


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
    fast = _pg_score_arrays(study, index, candidates)
    assert _rows(fast) == _rows(generic)
    # Spot checks written out by hand: "0.75" is read as 0.75, True as 1, 1e300 as written.
    assert (1, "judge", "m-a", "0.75") in _rows(fast) and (1, "flag", "m-a", "1.0") in _rows(fast)
    assert (2, "rougeL", "m-a", "1e+300") in _rows(fast) and (2, "rougeL", "m-b", "-1e-320") in _rows(fast)


def test_the_pairwise_report_is_the_same_through_either_path(monkeypatch):
    """The whole report of a study with odd score shapes is identical whether the scores
    come from SQL or from the parsed JSON."""
    from annotate import report_data

    study = make_study(slug="fetch-report")
    add_items(study, [(f"i{k}", {"input": name, "reference": "r", "candidates": _candidates(),
                                 **({"metric_scores": s} if s is not None else {})}, None)
                      for k, (name, s) in enumerate(ODD_ITEMS)])
    fast = build_report(fetch_report_input(study))

    def generic(study, index, candidates):
        items = list(Item.objects.filter(study=study).order_by("position", "id"))
        return _score_arrays(candidates, [i.data.get("metric_scores") for i in items])

    monkeypatch.setattr(report_data, "_pg_score_arrays", generic)
    assert build_report(fetch_report_input(study)) == fast
