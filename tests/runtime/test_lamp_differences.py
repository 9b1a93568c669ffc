"""Issue 31 items 13 and 5 (LaMP's metrics against LaMP's own code, eval/evaluation.py of
github.com/LaMP-Benchmark/LaMP): what matches and what differs on purpose.

- An empty gold label counts, as LaMP counts it: mapped to -1 for LaMP-1/2 (right only
  against an invalid prediction). Checked against scikit-learn, which LaMP's `evaluate`
  metrics call (accuracy_score; f1_score with labels=range(len(labels)), macro).
- A NaN or infinite LaMP-3 prediction: LaMP's code stops (scikit-learn refuses NaN and
  infinity); humeval takes it as unparseable, the extreme farther from the gold.
- ROUGE: LaMP's corpus value is rouge-score's BootstrapAggregator mid (the median of 1,000
  unseeded bootstrap means); ours is the plain mean. The mid moves from run to run; its
  distance from the mean is measured here.
- A plan refuses an empty gold with its own message (annotators would compare against no
  text)."""
import json

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, mean_absolute_error

from evaluation.lamp_metrics import LABELS, absolute_error, label_index, squared_error
from models_runtime.metrics.lamp import lamp_accuracy, lamp_f1_scores, lamp_summary

from .test_plans import files, plan, refused  # noqa: F401 - fixture

LAMP2 = LABELS["LaMP-2"]
# (gold, prediction, system): q3's gold is empty; A predicts a tag there, B nothing valid.
ROWS = [("comedy", "comedy", "A"), ("action", "comedy", "A"), ("", "comedy", "A"), ("sci-fi", "sci-fi", "A"),
        ("comedy", "comedy", "B"), ("action", "action", "B"), ("", "no such tag", "B"), ("sci-fi", "comedy", "B")]


def records():
    return [{"output": p, "reference": g, "candidate_id": s, "task": "LaMP-2"} for g, p, s in ROWS]


def test_an_empty_gold_label_counts_as_lamp_counts_it():
    assert lamp_accuracy(records()) == [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0]  # B's q3: -1 == -1
    _, summary = lamp_f1_scores(records())
    table = lamp_summary(records(), ["lamp_accuracy", "lamp_f1"])
    for system in "AB":
        golds = [label_index(g, LAMP2) for g, _, s in ROWS if s == system]
        preds = [label_index(p, LAMP2) for _, p, s in ROWS if s == system]
        lamp_f1 = f1_score(golds, preds, labels=list(range(len(LAMP2))), average="macro", zero_division=0)
        assert summary[system] == {"lamp_f1": pytest.approx(lamp_f1, abs=1e-12), "n": 4}
        assert table[system] == {"n": 4, "lamp_accuracy": accuracy_score(golds, preds),
                                 "lamp_f1": pytest.approx(lamp_f1, abs=1e-12)}
    assert (table["A"]["lamp_accuracy"], table["B"]["lamp_accuracy"]) == (0.5, 0.75)


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf"])
def test_a_non_finite_rating_stops_lamp_and_is_unparseable_here(bad):
    with pytest.raises(ValueError, match="Input contains"):  # what LaMP's mae/mse (scikit-learn) do
        mean_absolute_error([2.0, 4.0], [float(bad), 4.0])
    # gold 2: |1 - 2| = 1 is not > |5 - 2| = 3, so an unparseable prediction is 5.0
    assert (absolute_error(bad, "2"), squared_error(bad, "2")) == (3.0, 9.0)
    assert absolute_error("4", "") is None  # an empty LaMP-3 gold is not a number (LaMP raises)


def test_rouge_bootstrap_mid_differs_from_the_mean_by_its_noise():
    from rouge_score import rouge_scorer, scoring

    scorer = rouge_scorer.RougeScorer(["rouge1"])
    pairs = [("the cat sat on the mat", "a cat sat"), ("rain floods the old market", "old market floods"),
             ("bike lane downtown", "the city opens a bike lane"), ("library open longer", "library hours"),
             ("a dog ran in the park", "dog park"), ("storm warning", "heavy rain this week"),
             ("bakery wins bread prize", "small bakery wins"), ("new bridge opens", "the bridge opens today"),
             ("council meets", "city council meets on monday"), ("market reopens", "market reopens after repairs")]
    scores = [scorer.score(ref, pred) for ref, pred in pairs]
    mean = float(np.mean([s["rouge1"].fmeasure for s in scores]))
    mids = []
    for seed in range(20):  # LaMP does not seed: each run is one of these
        np.random.seed(seed)
        aggregator = scoring.BootstrapAggregator()
        for s in scores:
            aggregator.add_scores(s)
        mids.append(aggregator.aggregate()["rouge1"].mid.fmeasure)
    assert len(set(mids)) > 1  # not reproducible, so not matched
    assert max(abs(m - mean) for m in mids) < 0.01


def test_a_plan_refuses_an_empty_gold_with_its_reason(fake_llm, files):  # noqa: F811
    outputs = json.loads((files / "dev_outputs.json").read_text())
    outputs["golds"][1]["output"] = "  "
    (files / "dev_outputs.json").write_text(json.dumps(outputs))
    assert refused(plan(), files) == [
        "input: dev_questions.json question 1: empty output for id '311' in dev_outputs.json (a study compares the "
        "outputs with the user's own text)"]
