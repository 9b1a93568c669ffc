"""`manage.py score` with LaMP's metrics on a study whose items carry their LaMP task (as
plans write it in meta.task): the stored per-item values, the job's `lamp` table (LaMP's
corpus numbers per system), the report's systems table, and the refusals that say what to
use instead."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Study
from annotate.reports.data import study_report
from annotate.studies.importing import import_batch_bytes
from tests.factories import header, jsonl

from .helpers import scores

pytestmark = pytest.mark.django_db


def lamp_study(slug, task, rows):
    """rows: (item id, gold, text of system A, text of system B)."""
    items = [{"item_id": i, "input": f"question {i}", "reference": gold, "meta": {"task": task},
              "candidates": [{"id": "A", "text": a}, {"id": "B", "text": b}]} for i, gold, a, b in rows]
    return import_batch_bytes(jsonl(header(slug, "pairwise_alignment"), *items)).study


def run_score(slug, metrics, *extra):
    out = StringIO()
    call_command("score", slug, "--metrics", metrics, *extra, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_lamp2_accuracy_and_macro_f1_per_system():
    """Golds comedy, comedy, action, sci-fi. A: comedy, horror (no tag), action, sci-fi ->
    accuracy 3/4; F1 comedy 2/3, action 1, sci-fi 1, 12 absent tags 0 -> (8/3) / 15.
    B: comedy x4 -> accuracy 2/4; comedy TP 2 FP 2 -> 2/3, action FN, sci-fi FN -> (2/3) / 15.
    Shares of A: n / 15 x 2 / (2TP + FP + FN) = 4/15 x 2/3 (comedy: 2 + 0 + 1), 0, 4/15 x 1
    (action: 2), 4/15 x 1 -> mean (8/45 + 8/15) / 4 = (8/3) / 15."""
    study = lamp_study("lamp2", "LaMP-2", [("q1", "comedy", "comedy", "comedy"), ("q2", "comedy", "horror", "comedy"),
                                          ("q3", "action", "action", "comedy"), ("q4", "sci-fi", "sci-fi", "comedy")])
    result = run_score("lamp2", "lamp_accuracy,lamp_f1")["result"]
    assert result["lamp"] == {"A": {"n": 4, "lamp_accuracy": 0.75, "lamp_f1": pytest.approx(8 / 3 / 15, abs=1e-12)},
                              "B": {"n": 4, "lamp_accuracy": 0.5, "lamp_f1": pytest.approx(2 / 3 / 15, abs=1e-12)}}
    acc = scores(study, "lamp_accuracy")
    assert [acc[(i, "A")] for i in ("q1", "q2", "q3", "q4")] == [1.0, 0.0, 1.0, 1.0]
    f1 = scores(study, "lamp_f1")
    assert [f1[(i, "A")] for i in ("q1", "q2", "q3", "q4")] == pytest.approx([4 / 15 * 2 / 3, 0, 4 / 15, 4 / 15])
    table = study_report(Study.objects.get(slug="lamp2"))[0]["systems"]
    assert table["A"]["metrics"]["lamp_f1"]["mean"] == pytest.approx(8 / 3 / 15, abs=1e-9)
    assert table["B"]["metrics"]["lamp_accuracy"]["mean"] == 0.5


def test_lamp3_mae_and_rmse_with_the_task_given_on_the_command_line():
    """Items without meta.task, --task LaMP_3 (LaMP's spelling). A: 4 for 3, 'five' for 1
    (-> 5.0), 2 for 5: errors 1, 4, 3; B exact: 0, 0, 0."""
    items = [{"item_id": i, "input": "rate", "reference": gold, "candidates": [{"id": "A", "text": a},
                                                                             {"id": "B", "text": gold}]}
             for i, gold, a in (("r1", "3", "4"), ("r2", "1", "five"), ("r3", "5", " 2 "))]
    study = import_batch_bytes(jsonl(header("lamp3", "pairwise_alignment"), *items)).study
    result = run_score("lamp3", "lamp_mae,lamp_rmse", "--task", "LaMP_3")["result"]
    assert result["lamp"]["A"] == {"n": 3, "lamp_mae": pytest.approx(8 / 3),
                                   "lamp_rmse": pytest.approx((26 / 3) ** 0.5)}
    assert result["lamp"]["B"] == {"n": 3, "lamp_mae": 0.0, "lamp_rmse": 0.0}
    assert scores(study, "lamp_rmse")[("r2", "A")] == 16.0  # the squared error; the report takes the root
    report = study_report(Study.objects.get(slug="lamp3"))[0]
    assert report["systems"]["A"]["metrics"]["lamp_rmse"]["mean"] == pytest.approx((26 / 3) ** 0.5, abs=1e-9)


def test_lamp_metrics_on_the_wrong_task_or_without_one_say_what_to_use():
    lamp_study("lamp4", "LaMP_4", [("a1", "Rain falls", "Rain", "Snow")])
    with pytest.raises(CommandError, match=r"lamp_accuracy is defined for LaMP-1 and LaMP-2 .*these items are "
                                           r"LaMP-4: use rouge1, rougeL"):
        run_score("lamp4", "lamp_accuracy")
    lamp_study("no-task", "", [("a1", "comedy", "comedy", "action")])
    with pytest.raises(CommandError, match="lamp_f1 needs the LaMP task of the items: .*--task LaMP-N"):
        run_score("no-task", "lamp_f1")
    with pytest.raises(CommandError, match=r"unknown metric 'rmse' \(did you mean `lamp_rmse`\?\) \(known: .*"
                                           r"egises_jsd.*lamp_rmse"):
        run_score("no-task", "rmse")
    with pytest.raises(CommandError, match="task 'LaMP-9' is not a LaMP task"):
        run_score("no-task", "lamp_f1", "--task", "LaMP-9")
