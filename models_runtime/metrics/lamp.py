"""LaMP's own metrics as named metrics for `score` and plans (evaluation/lamp_metrics.py
holds the rules): `lamp_accuracy` (1 when right, else 0), `lamp_mae` (the absolute error)
and `lamp_rmse` (the squared error; the report shows the root of its mean) per record;
`lamp_f1` needs every item of a system at once, so the score job computes it when the
other metrics are done (`lamp_f1_scores`). ROUGE-1/L are `rouge1` and `rougeL`.

The LaMP task of a record is the score job's `task` param (`--task`), else the item's
`meta.task` (plans write it); a metric used on a task LaMP does not define it for is a
configuration error that names the metrics that do apply.
"""
from collections import defaultdict

from evaluation.lamp_metrics import (
    LABELS,
    METRIC_TASKS,
    absolute_error,
    canonical_task,
    correct,
    f1_shares,
    squared_error,
)

from .registry import register_metric

STUDY_LEVEL = "lamp_f1"  # computed over a whole study (score_finish), not per chunk


def metrics_for(task: str) -> list[str]:
    """The lamp_* metrics LaMP defines for `task`, plus ROUGE for the generation tasks."""
    names = [m for m, tasks in METRIC_TASKS.items() if task in tasks]
    return names or ["rouge1", "rougeL"]


def check_task(metric: str, task) -> str:
    """The canonical task, or JobParamsError saying what to do."""
    from ..job_support.kinds import JobParamsError

    canonical = canonical_task(task)
    if canonical is None:
        raise JobParamsError(f"{metric} needs the LaMP task of the items: plans write it in each item's meta.task; "
                             "otherwise pass --task LaMP-N to score (task param)")
    if canonical not in METRIC_TASKS[metric]:
        use = ", ".join(metrics_for(canonical))
        raise JobParamsError(f"{metric} is defined for {' and '.join(METRIC_TASKS[metric])} (LaMP's "
                             f"eval/evaluation.py); these items are {canonical}: use {use}")
    return canonical


def record_task(record: dict, metric: str) -> str:
    return check_task(metric, record.get("task") or (record.get("meta") or {}).get("task"))


def _usable(record) -> bool:
    """A record LaMP scores: a prediction and a gold, an empty gold included (LaMP counts
    it: label -1 for LaMP-1/2; for LaMP-3 it is not a number, scored None here)."""
    return record.get("output") is not None and record.get("reference") is not None


@register_metric("lamp_accuracy")
def lamp_accuracy(records, *, model=None, device=None):
    return [float(correct(r["output"], r["reference"], LABELS[record_task(r, "lamp_accuracy")]))
            if _usable(r) else None for r in records]


@register_metric("lamp_mae")
def lamp_mae(records, *, model=None, device=None):
    return [absolute_error(r["output"], r["reference"]) if _usable(r) and record_task(r, "lamp_mae") else None
            for r in records]


@register_metric("lamp_rmse")
def lamp_rmse(records, *, model=None, device=None):
    return [squared_error(r["output"], r["reference"]) if _usable(r) and record_task(r, "lamp_rmse") else None
            for r in records]


def lamp_f1_scores(records) -> tuple[list[float | None], dict[str, dict]]:
    """(each record's share of its system's macro F1, {system: {"lamp_f1", "n"}}): records
    carry `candidate_id` (the system); the mean of a system's shares is its macro F1."""
    from evaluation.lamp_metrics import macro_f1

    by_system: dict[str, list[int]] = defaultdict(list)
    for n, record in enumerate(records):
        if _usable(record):
            by_system[str(record["candidate_id"])].append(n)
    values: list[float | None] = [None] * len(records)
    summary = {}
    for system, rows in sorted(by_system.items()):
        labels = LABELS[record_task(records[rows[0]], "lamp_f1")]
        predictions = [records[n]["output"] for n in rows]
        golds = [records[n]["reference"] for n in rows]
        for n, share in zip(rows, f1_shares(predictions, golds, labels)):
            values[n] = share
        summary[system] = {"lamp_f1": macro_f1(predictions, golds, labels), "n": len(rows)}
    return values, summary


def lamp_summary(records, metrics) -> dict[str, dict]:
    """{system: {metric: LaMP's corpus value, "n": items}} for the lamp_* `metrics`, over
    `records` (with `candidate_id`): the numbers LaMP's eval/evaluation.py prints."""
    from evaluation import lamp_metrics

    corpus = {"lamp_accuracy": lambda p, g, t: lamp_metrics.accuracy(p, g, LABELS[t]),
              "lamp_f1": lambda p, g, t: lamp_metrics.macro_f1(p, g, LABELS[t]),
              "lamp_mae": lambda p, g, t: lamp_metrics.mae(p, g), "lamp_rmse": lambda p, g, t: lamp_metrics.rmse(p, g)}
    by_system: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        if _usable(record):
            by_system[str(record["candidate_id"])].append(record)
    out: dict[str, dict[str, float | None]] = {}
    for system, rows in sorted(by_system.items()):
        predictions, golds = [r["output"] for r in rows], [r["reference"] for r in rows]
        out[system] = {"n": len(rows)}
        for metric in metrics:
            if metric in corpus:
                out[system][metric] = corpus[metric](predictions, golds, record_task(rows[0], metric))
    return out


@register_metric(STUDY_LEVEL)
def lamp_f1(records, *, model=None, device=None):
    """Over the records given as one corpus (the score job gives it the whole study)."""
    return lamp_f1_scores(records)[0]
