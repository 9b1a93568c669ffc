"""LaMP's own metrics, as LaMP's `eval/evaluation.py` computes them (Salemi et al., 2024;
github.com/LaMP-Benchmark/LaMP), per item and per corpus. Django-free.

- Classification (LaMP-1, LaMP-2): prediction and gold are `str(x).strip()`ed and mapped
  to their index in the task's label list (exact, case-sensitive), -1 when not a label.
  `accuracy` = share of items whose two indices are equal (an invalid prediction counts
  wrong against a valid gold). `macro_f1` = scikit-learn's f1_score(gold, pred,
  labels=range(len(labels)), average="macro"): the mean over *every* listed label of
  2TP / (2TP + FP + FN), 0 for a label that is never gold nor predicted.
- Rating (LaMP-3): prediction and gold are stripped and read with `float()`; a prediction
  that is not a number becomes the extreme farther from the gold (1.0 if |1 - y| > |5 - y|,
  else 5.0: y = 3 gives 5.0). `mae` = mean |p - y|, `rmse` = sqrt(mean (p - y)^2).
- Generation (LaMP-4..7): ROUGE-1 and ROUGE-L F1 (rouge-score, no stemming): the runtime's
  `rouge1` and `rougeL` metrics.

An empty gold label counts, as in LaMP: it maps to -1 (LaMP-1/2), so it is right only
against an invalid prediction and adds a false positive to a valid predicted label.

Where humeval differs, and why (docs/runtime.md, "LaMP's metrics"): a prediction `float()`
reads as NaN or infinity is taken as unparseable here (the extreme farther from the gold);
LaMP's code stops with an error on it (`evaluate`'s mae/mse call scikit-learn, which
refuses NaN and infinity). A gold that is not a number (an empty one included) scores
None here (LaMP raises). LaMP's ROUGE is `evaluate`'s BootstrapAggregator mid (the median
of 1,000 unseeded bootstrap means: a different number on every run), ours the plain mean.

Per-item values (one per item and system, stored as metric scores): accuracy 1/0, the
absolute error for MAE and the squared error for RMSE (the report takes the root of their
mean), and for macro F1 each item's share of its system's corpus F1 (`f1_shares`: the mean
of the shares over the system's items is its macro F1).
"""
import math
from collections.abc import Sequence

LABELS: dict[str, tuple[str, ...]] = {
    "LaMP-1": ("[1]", "[2]"),
    "LaMP-2": ("sci-fi", "based on a book", "comedy", "action", "twist ending", "dystopia", "dark comedy", "classic",
               "psychology", "fantasy", "romance", "thought-provoking", "social commentary", "violence", "true story"),
    "LaMP-3": ("1", "2", "3", "4", "5"),
}
# Which LaMP tasks each metric is defined for (LaMP's evaluate_task).
METRIC_TASKS: dict[str, tuple[str, ...]] = {
    "lamp_accuracy": ("LaMP-1", "LaMP-2"), "lamp_f1": ("LaMP-1", "LaMP-2"),
    "lamp_mae": ("LaMP-3",), "lamp_rmse": ("LaMP-3",),
}


def canonical_task(name: object) -> str | None:
    """"LaMP-4" for LaMP's spellings "LaMP-4", "LaMP_4" (its outputs files), "lamp4"; None
    for anything else."""
    if not isinstance(name, str):
        return None
    compact = name.strip().lower().replace("_", "").replace("-", "")
    if compact.startswith("lamp") and compact[4:].isdigit() and 1 <= int(compact[4:]) <= 7:
        return f"LaMP-{int(compact[4:])}"
    return None


def label_index(text: object, labels: Sequence[str]) -> int:
    """LaMP's create_mapping: the index of `str(text).strip()` among `labels`, else -1."""
    value = str(text).strip()
    return labels.index(value) if value in labels else -1


def correct(prediction: object, gold: object, labels: Sequence[str]) -> bool:
    return label_index(prediction, labels) == label_index(gold, labels)


def accuracy(predictions: Sequence[object], golds: Sequence[object], labels: Sequence[str]) -> float:
    """Share of items whose prediction maps to the gold's label (LaMP's accuracy)."""
    return sum(correct(p, g, labels) for p, g in zip(predictions, golds)) / len(golds)


def label_counts(predictions: Sequence[object], golds: Sequence[object],
                 labels: Sequence[str]) -> list[tuple[int, int, int]]:
    """(TP, FP, FN) per label; an invalid prediction (-1) is a false negative of the gold
    only, as scikit-learn counts it with `labels` given."""
    counts = [[0, 0, 0] for _ in labels]
    for p, g in zip(predictions, golds):
        pi, gi = label_index(p, labels), label_index(g, labels)
        if pi == gi and gi >= 0:
            counts[gi][0] += 1
            continue
        if pi >= 0:
            counts[pi][1] += 1
        if gi >= 0:
            counts[gi][2] += 1
    return [(tp, fp, fn) for tp, fp, fn in counts]


def macro_f1(predictions: Sequence[object], golds: Sequence[object], labels: Sequence[str]) -> float:
    """Macro F1 over every listed label (absent labels count 0), LaMP's f1."""
    per_label = [2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else 0.0
                 for tp, fp, fn in label_counts(predictions, golds, labels)]
    return sum(per_label) / len(labels)


def f1_shares(predictions: Sequence[object], golds: Sequence[object], labels: Sequence[str]) -> list[float]:
    """Each item's share of the corpus macro F1, scaled so that their mean is macro_f1:
    n / |labels| x 2 / (2TP + FP + FN) of its gold label when it is right, else 0."""
    n = len(golds)
    counts = label_counts(predictions, golds, labels)
    shares = []
    for p, g in zip(predictions, golds):
        gi = label_index(g, labels)
        if gi >= 0 and label_index(p, labels) == gi:
            tp, fp, fn = counts[gi]
            shares.append(n / len(labels) * 2 / (2 * tp + fp + fn))
        else:
            shares.append(0.0)
    return shares


def _number(text: object) -> float | None:
    try:
        value = float(str(text).strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def rating_pair(prediction: object, gold: object) -> tuple[float, float] | None:
    """(prediction, gold) as LaMP-3 numbers: an unparseable prediction becomes the extreme
    farther from the gold (1.0 if |1 - y| > |5 - y| else 5.0). None when the gold is not a
    number."""
    y = _number(gold)
    if y is None:
        return None
    p = _number(prediction)
    if p is None:
        p = 1.0 if abs(1 - y) > abs(5 - y) else 5.0
    return p, y


def absolute_error(prediction: object, gold: object) -> float | None:
    pair = rating_pair(prediction, gold)
    return None if pair is None else abs(pair[0] - pair[1])


def squared_error(prediction: object, gold: object) -> float | None:
    pair = rating_pair(prediction, gold)
    return None if pair is None else (pair[0] - pair[1]) ** 2


def mae(predictions: Sequence[object], golds: Sequence[object]) -> float | None:
    """Mean absolute error over the items with a numeric gold (None without any)."""
    kept = [e for e in (absolute_error(p, g) for p, g in zip(predictions, golds)) if e is not None]
    return sum(kept) / len(kept) if kept else None


def rmse(predictions: Sequence[object], golds: Sequence[object]) -> float | None:
    """Root mean squared error over the items with a numeric gold (None without any)."""
    kept = [e for e in (squared_error(p, g) for p, g in zip(predictions, golds)) if e is not None]
    return math.sqrt(sum(kept) / len(kept)) if kept else None
