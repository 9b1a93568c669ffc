"""LaMP's metrics (evaluation/lamp_metrics.py) on hand-worked cases, cross-checked with
scikit-learn, which is what LaMP's eval/evaluation.py calls through `evaluate` ("accuracy",
"f1" with labels=range(len(labels)), average="macro"; "mae"; "mse" with squared=False);
and the report's reading of them: lower-is-better picks, RMSE as the root of the mean."""
import math

import numpy as np
import pytest
from scipy.stats import t as student_t
from sklearn.metrics import accuracy_score, f1_score, mean_absolute_error, mean_squared_error

from evaluation.lamp_metrics import (
    LABELS,
    accuracy,
    canonical_task,
    f1_shares,
    label_index,
    macro_f1,
    mae,
    rating_pair,
    rmse,
)
from evaluation.report import build_report
from evaluation.report.inputs import ReportInput

TAGS = LABELS["LaMP-2"]


def sklearn_indices(values, labels):
    return [label_index(v, labels) for v in values]


def test_task_names_as_lamp_spells_them():
    assert [canonical_task(t) for t in ("LaMP_4", "LaMP-4", "lamp4", " LaMP_7 ", "LaMP_8", "LaMP", 4, None)] == [
        "LaMP-4", "LaMP-4", "LaMP-4", "LaMP-7", None, None, None, None]


def test_accuracy_strips_is_case_sensitive_and_counts_invalid_labels_wrong():
    """[1] right; ' [2] ' right after strip(); '[3]' is no label (-1): wrong; '[1]' vs [2]
    wrong -> 2/4. LaMP-2: 'Comedy' is not 'comedy'."""
    preds, golds = ["[1]", " [2] ", "[3]", "[1]"], ["[1]", "[2]", "[1]", "[2]"]
    assert accuracy(preds, golds, LABELS["LaMP-1"]) == 0.5
    assert accuracy_score(sklearn_indices(golds, LABELS["LaMP-1"]), sklearn_indices(preds, LABELS["LaMP-1"])) == 0.5
    assert accuracy(["Comedy", "comedy"], ["comedy", "comedy"], TAGS) == 0.5


def test_macro_f1_averages_over_every_listed_label_absent_ones_as_zero():
    """golds comedy comedy action, preds comedy horror action: 'horror' is not a label, so
    it is only a false negative of comedy. comedy: TP 1, FN 1 -> 2/3; action: TP 1 -> 1;
    the other 13 tags never occur -> 0. Macro over 15 labels: (2/3 + 1) / 15 = 0.111111."""
    golds, preds = ["comedy", "comedy", "action"], ["comedy", "horror", "action"]
    assert macro_f1(preds, golds, TAGS) == pytest.approx((2 / 3 + 1) / 15, abs=1e-15)
    assert macro_f1(preds, golds, TAGS) == pytest.approx(
        f1_score(sklearn_indices(golds, TAGS), sklearn_indices(preds, TAGS), labels=list(range(15)),
                 average="macro", zero_division=0), abs=1e-15)
    # an invalid prediction of an invalid gold: both map to -1, which LaMP's accuracy counts
    # as equal and its f1 (labels given) leaves out
    assert accuracy(["x"], ["y"], TAGS) == 1.0 and macro_f1(["x"], ["y"], TAGS) == 0.0


def test_macro_f1_and_its_item_shares_equal_sklearn_on_random_cases():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        pool = list(TAGS[:5]) + ["not a tag", " comedy "]
        golds = list(rng.choice(TAGS[:6], size=n))
        preds = list(rng.choice(pool, size=n))
        expected = f1_score(sklearn_indices(golds, TAGS), sklearn_indices(preds, TAGS), labels=list(range(15)),
                            average="macro", zero_division=0)
        assert macro_f1(preds, golds, TAGS) == pytest.approx(expected, abs=1e-12)
        assert float(np.mean(f1_shares(preds, golds, TAGS))) == pytest.approx(expected, abs=1e-12)
        assert accuracy(preds, golds, TAGS) == pytest.approx(
            accuracy_score(sklearn_indices(golds, TAGS), sklearn_indices(preds, TAGS)), abs=1e-15)


def test_ratings_take_the_farther_extreme_when_unparseable():
    """(4, 3): error 1; 'five' for y = 1: |1 - 1| = 0 is not > |5 - 1| = 4 -> 5.0, error 4;
    ' 2 ' for y = 5 -> 2, error 3; 'abc' for y = 4: |1 - 4| = 3 > |5 - 4| = 1 -> 1.0, error
    3. MAE = 11 / 4 = 2.75; RMSE = sqrt((1 + 16 + 9 + 9) / 4) = sqrt(8.75)."""
    golds, preds = ["3", "1", "5", "4"], ["4", "five", " 2 ", "abc"]
    assert mae(preds, golds) == 2.75
    assert rmse(preds, golds) == pytest.approx(math.sqrt(8.75), abs=1e-15)
    mapped = [rating_pair(p, g)[0] for p, g in zip(preds, golds)]
    assert mapped == [4.0, 5.0, 2.0, 1.0]
    assert mean_absolute_error([3, 1, 5, 4], mapped) == 2.75
    assert math.sqrt(mean_squared_error([3, 1, 5, 4], mapped)) == pytest.approx(rmse(preds, golds), abs=1e-15)
    assert rating_pair("n/a", "3") == (5.0, 3.0)  # y = 3: |1 - 3| = |5 - 3|, not farther: 5.0
    assert rating_pair("4.5", "2") == (4.5, 2.0)  # float(): not clamped, as in LaMP
    assert rating_pair("nan", "2") == (5.0, 2.0)  # not finite: unparseable here (docs/runtime.md)
    assert rating_pair("3", "three") is None  # a gold that is not a number cannot be scored


def lamp3_input():
    """Two systems on five LaMP-3 items; lamp_mae (absolute error) and lamp_rmse (squared
    error) stored per candidate. A: errors 0, 1, 2, 0, 1; B: errors 2, 0, 0, 1, 0. Human
    majority: A, B, B, A, B. Lower error is better: the metric picks A, B, B, A, B
    (alignment 5/5). Five items: the smallest sample that gets a t interval."""
    j_item = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    j_value = ["A", "A", "B", "B", "B", "B", "A", "A", "B", "B"]
    errors = {"A": [0.0, 1.0, 2.0, 0.0, 1.0], "B": [2.0, 0.0, 0.0, 1.0, 0.0]}
    scores = [(i, m, s, e if m == "lamp_mae" else e * e) for s, es in errors.items() for i, e in enumerate(es)
              for m in ("lamp_mae", "lamp_rmse")]
    return ReportInput(
        slug="s", kind="pairwise_alignment", config={}, item_ids=[f"i{k}" for k in range(1, 6)], is_gold=[False] * 5,
        gold=None, candidates=np.array([["A", "B"]] * 5, dtype=object),
        j_item=j_item, j_annotator=["a1", "a2"] * 5, j_question=["choice"] * 10, j_value=j_value,
        s_item=[s[0] for s in scores], s_metric=[s[1] for s in scores], s_candidate=[s[2] for s in scores],
        s_value=[s[3] for s in scores])


def test_report_reads_errors_lower_is_better_and_rmse_as_a_root():
    report = build_report(lamp3_input())
    assert report["alignment"]["lamp_mae"]["alignment"] == 1.0
    assert report["alignment"]["lamp_rmse"]["alignment"] == 1.0
    a = report["systems"]["A"]["metrics"]
    assert a["lamp_mae"]["mean"] == pytest.approx(0.8)
    # RMSE of A = sqrt((0 + 1 + 4 + 0 + 1) / 5); its interval is the root of the squared errors' t interval
    assert a["lamp_rmse"]["mean"] == pytest.approx(math.sqrt(6 / 5), abs=1e-12)
    sd = float(np.std([0.0, 1.0, 4.0, 0.0, 1.0], ddof=1))
    half = float(student_t.ppf(0.975, 4)) * sd / math.sqrt(5)
    low, high = a["lamp_rmse"]["ci95"]
    assert (low, high) == (0.0, pytest.approx(math.sqrt(6 / 5 + half), abs=1e-9))  # 6/5 - half < 0 -> 0
    assert report["systems"]["B"]["metrics"]["lamp_rmse"]["mean"] == pytest.approx(1.0, abs=1e-12)
