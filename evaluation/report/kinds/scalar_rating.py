"""scalar_rating report (PerSE Table 2, Per-MPST; statistics.md "Scalar rating").

Pairs = (item, annotator) with a score (non-gold items). `scores`: mean, sd, n;
`agreement`: interval and ordinal alpha of `score`; `reviewer_variance`: mean over items
with >= 2 ratings of the sample variance of their ratings (PerSE Table 10);
`evaluators[<name>]`: Pearson, Spearman and Kendall tau-b between the evaluator's
predicted score and the human score over the pairs it covers, each {r, ci95, p}, plus
n_pairs, n_items, n_unparsed. A prediction row (question `score`) with `annotator` set
predicts that annotator's score (it wins over one for everybody); one with `annotator`
empty applies to every annotator of the item. Built-in baselines: `reviewer_avg` (the
mean of the annotator's *other* ratings in the study) and `item_avg` (the mean of the
*other* annotators' ratings of the item). Each metric score of the item (a prediction row
whose question is the item's candidate) is an evaluator too, the same for every annotator,
and is listed under `correlations` as well.

Intervals and p-values (statistics.md, "Clustered data"): pairs of one item are not
independent, so the correlations are evaluation.correlation's over clustered units (the
same as a similarity survey's over (item, pair) units: report.correlations.entry with the
items as clusters): every interval and p-value from one bootstrap over items (2,000
resamples, seed 0; bias-corrected, expanded percentile; the p-value is the interval's test
of r = 0), from 20 pairs and 5 items; with one pair per item the pairs are independent
units (Fisher z, permutation p). The mean score and the reviewer variance are means over
clustered units: bootstrap.clustered_mean over items.
"""
from typing import Any

import numpy as np

from evaluation.bootstrap import MIN_CLUSTERS, RESAMPLES, bootstrap_method, clustered_mean

from .. import figures
from ..common import INTERVAL, Question, base_report, clean, interval_keys, question_rows
from ..correlations import entry
from ..inputs import Judgments, ReportInput, to_float
from ..markup import Report, figure, interval, num, pval, table
from ..ppi.part import SCHEMA as PPI_SCHEMA
from ..ppi.quantities import Quantity, scalar

SCORE = "score"
REVIEWER_AVG, ITEM_AVG = "reviewer_avg", "item_avg"
CI_METHOD = bootstrap_method("items", RESAMPLES)
PAIRS = "(item, annotator)"
METHODS = ("pearson", "spearman", "kendall")
MAX_SCATTERS = 8
MAX_POINTS = 2000  # a scatter draws at most this many distinct (predicted, human) points

REPORT_SCHEMA = {
    "scores": {"type": "object", "description": "mean, sd, n of the (item, annotator) scores; the mean's ci95, "
                                                "ci_method, n_clusters, dropped_resamples."},
    "reviewer_variance": {"type": "object", "description": "value (mean over items with >= 2 ratings of the "
                                                           "sample variance of their ratings), n_items, ci95, "
                                                           "ci_method, n_clusters, dropped_resamples."},
    "evaluators": {"type": "object", "additionalProperties": {"type": "object"},
                   "description": "evaluator (reviewer_avg, item_avg, each metric, each LLM evaluator) -> pearson, "
                                  "spearman, kendall ({r, ci95, p, p_method, ci_method, n_clusters, "
                                  "dropped_resamples}), n_pairs, n_items, n_unparsed."},
    **PPI_SCHEMA,
}
Points = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]  # name -> (predicted, human, item) per pair


# --- the pairs ---------------------------------------------------------------------------

def human_scores(inp: ReportInput, js: Judgments) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(item, coder, score) of every counted pair with a numeric score, by item then coder."""
    rows = question_rows(js, SCORE)
    score = to_float(inp.value_names)[rows.vcode] if len(rows) else np.zeros(0)
    keep = ~np.isnan(score)
    item, coder, score = rows.item[keep], rows.coder[keep], score[keep]
    order = np.lexsort((coder, item))
    return item[order].astype(np.int64), coder[order].astype(np.int64), score[order]


def baselines(item: np.ndarray, coder: np.ndarray, score: np.ndarray) -> dict[str, np.ndarray]:
    """reviewer_avg and item_avg of every pair (NaN where there is no other rating)."""
    out = {}
    for name, group in ((REVIEWER_AVG, coder), (ITEM_AVG, item)):
        size = int(group.max()) + 1 if len(group) else 0
        total = np.bincount(group, weights=score, minlength=size)[group] - score
        count = np.bincount(group, minlength=size)[group] - 1
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return out


def predicted(inp: ReportInput, item: np.ndarray, coder: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """({evaluator: its predicted score of every pair, NaN where it has none}, {evaluator:
    prediction rows whose value is not a number}), from the `score` predictions of non-gold
    items: a row for an annotator wins over one for everybody; a later row wins a repeat."""
    pair_of = {(i, c): k for k, (i, c) in enumerate(zip(item.tolist(), coder.tolist()))}
    pairs_of_item: dict[int, list[int]] = {}
    for k, i in enumerate(item.tolist()):
        pairs_of_item.setdefault(i, []).append(k)
    coder_of = {str(name): c for c, name in enumerate(inp.annotator_names.tolist())}
    rows = np.flatnonzero((inp.p_question == SCORE) & ~inp.p_is_score & ~inp.is_gold[inp.p_item]) \
        if len(inp.p_item) else np.zeros(0, dtype=np.int64)
    values = to_float(inp.p_value[rows])
    out: dict[str, np.ndarray] = {}
    unparsed: dict[str, int] = {}
    personal: dict[str, set[int]] = {}
    for r, value in zip(rows.tolist(), values.tolist()):
        name, who = str(inp.p_evaluator[r]), str(inp.p_annotator[r])
        column = out.setdefault(name, np.full(len(item), np.nan))
        unparsed[name] = unparsed.get(name, 0) + (value != value)
        mine = personal.setdefault(name, set())
        if who:
            k = pair_of.get((int(inp.p_item[r]), coder_of.get(who, -1)), -1)
            if k >= 0:
                column[k] = value
                mine.add(k)
        else:
            for k in pairs_of_item.get(int(inp.p_item[r]), []):
                if k not in mine:
                    column[k] = value
    return out, unparsed


def metric_values(inp: ReportInput, item: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """({metric: the item's score, on every pair of the item}, {metric: unparsed score rows})."""
    out: dict[str, np.ndarray] = {}
    for s_item, metric, value in zip(inp.s_item.tolist(), inp.s_metric.tolist(), inp.s_value.tolist()):
        if not inp.is_gold[s_item]:
            per_item = out.setdefault(str(metric), np.full(inp.n_items, np.nan))
            per_item[s_item] = value  # a later row wins
    bad = inp.p_is_score & np.isnan(to_float(inp.p_value)) & ~inp.is_gold[inp.p_item] if len(inp.p_item) \
        else np.zeros(0, dtype=bool)
    unparsed: dict[str, int] = {}
    for name in inp.p_evaluator[bad].tolist():
        unparsed[str(name)] = unparsed.get(str(name), 0) + 1
        out.setdefault(str(name), np.full(inp.n_items, np.nan))
    return {m: v[item] for m, v in out.items()}, unparsed


def evaluator_points(inp: ReportInput, js: Judgments | None = None) -> tuple[Points, dict[str, int], set[str]]:
    """({evaluator: (predicted, human, item) over the pairs it covers}, {evaluator:
    n_unparsed}, the metric names): baselines, metrics and predicted scores."""
    js = Judgments.of(inp, inp.counted()) if js is None else js
    item, coder, score = human_scores(inp, js)
    columns = baselines(item, coder, score)
    metrics, unparsed = metric_values(inp, item)
    llm, llm_unparsed = predicted(inp, item, coder)
    columns.update(metrics)
    columns.update({name: values for name, values in llm.items() if name not in columns})
    unparsed = {**unparsed, **{k: v for k, v in llm_unparsed.items() if k not in unparsed}}
    points = {}
    for name, x in columns.items():
        has = np.isfinite(x)  # +-inf is no score (as for every kind's metric scores)
        points[name] = (x[has], score[has], item[has])
    return points, {name: unparsed.get(name, 0) for name in points}, set(metrics)


# --- the report ----------------------------------------------------------------------------

def correlation_of(name: str, x: np.ndarray, y: np.ndarray, item: np.ndarray) -> dict[str, Any]:
    """One evaluator's pairs as a `correlations` entry (report.correlations.entry, the items
    as clusters): n, n_clusters, unit, x, y and per method r, p_value, ci95, ci_method,
    n_clusters, p_method, dropped_resamples (ci_reason / p_reason where there is none)."""
    return entry(x, y, PAIRS, f"{name} of the item", "the annotator's score", clusters=item)


def evaluator_entry(correlation: dict[str, Any], n_unparsed: int) -> dict[str, Any]:
    """The `evaluators` entry of interfaces.md ({r, ci95, p} per method, n_pairs, n_items,
    n_unparsed) from its correlation entry; each method keeps how its interval and p were made."""
    out: dict[str, Any] = {}
    for method in METHODS:
        c = dict(correlation[method])
        c["p"] = c.pop("p_value")
        out[method] = c
    return {**out, "n_pairs": correlation["n"], "n_items": correlation["n_clusters"], "n_unparsed": int(n_unparsed)}


def mean_part(values: np.ndarray, item: np.ndarray) -> dict[str, Any]:
    """{"mean", "sd", "n", "unit", interval keys}: the mean's interval resamples items."""
    n = len(values)
    mean, found = clustered_mean(values, item)
    return {"mean": clean(mean), "sd": clean(values.std(ddof=1)) if n >= 2 else None, "n": int(n),
            "unit": f"{PAIRS} score", **interval_keys(found, CI_METHOD)}


def reviewer_variance(item: np.ndarray, score: np.ndarray) -> dict[str, Any]:
    """Mean over items with >= 2 ratings of the sample variance of their ratings (PerSE
    Table 10), with a bootstrap interval over those items."""
    size = int(item.max()) + 1 if len(item) else 0
    count = np.bincount(item, minlength=size)
    total = np.bincount(item, weights=score, minlength=size)
    squares = np.bincount(item, weights=score * score, minlength=size)
    rated = np.flatnonzero(count >= 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = (squares[rated] - total[rated] ** 2 / count[rated]) / (count[rated] - 1)
    variance = np.maximum(variance, 0.0)
    value, found = clustered_mean(variance, rated)
    return {"value": clean(value), "n_items": int(len(rated)), "unit": "item (sample variance of its ratings)",
            **interval_keys(found, CI_METHOD)}


def build(inp: ReportInput) -> dict[str, Any]:
    report, js = base_report(inp, [Question.single(SCORE, INTERVAL)], SCORE)
    item, _, score = human_scores(inp, js)
    report["scores"] = mean_part(score, item)
    report["reviewer_variance"] = reviewer_variance(item, score)
    points, unparsed, metrics = evaluator_points(inp, js)
    correlations = {name: correlation_of(name, *points[name]) for name in sorted(points)}
    report["evaluators"] = {name: evaluator_entry(correlations[name], unparsed[name]) for name in sorted(points)}
    report["correlations"] = {name: correlations[name] for name in sorted(metrics)}
    return report


def ppi_quantities(inp: ReportInput) -> list[Quantity]:
    """The mean human score of each system (report/ppi/quantities.py)."""
    item, _, score = human_scores(inp, Judgments.of(inp, inp.counted()))
    return scalar(inp, SCORE, item, score)


# --- the CSV and the HTML -------------------------------------------------------------------

def table_columns(inp: ReportInput) -> dict[str, dict[tuple[str, str], Any]]:
    """The per-item CSV table's own columns: the item's mean score and each metric's score."""
    js = Judgments.of(inp, inp.counted())
    item, _, score = human_scores(inp, js)
    n = np.bincount(item, minlength=inp.n_items)
    total = np.bincount(item, weights=score, minlength=inp.n_items)
    columns: dict[str, dict[tuple[str, str], Any]] = {"mean_score": {
        (str(inp.item_ids[i]), SCORE): clean(total[i] / n[i]) for i in np.flatnonzero(n).tolist()}}
    for s_item, metric, value in zip(inp.s_item.tolist(), inp.s_metric.tolist(), inp.s_value.tolist()):
        columns.setdefault(f"metric_{metric}", {})[(str(inp.item_ids[s_item]), SCORE)] = value
    return columns


@figures._literal_text
def scatter(name: str, x: np.ndarray, y: np.ndarray, xlabel: str, ylabel: str) -> str | None:
    """Predicted (x) against human (y) scores, one dot per distinct point, its area by how
    many pairs it holds; at most MAX_POINTS points (the most frequent)."""
    if not len(x):
        return None
    points, counts = np.unique(np.column_stack([x, y]), axis=0, return_counts=True)
    if len(points) > MAX_POINTS:
        keep = np.sort(np.argsort(-counts, kind="stable")[:MAX_POINTS])
        points, counts = points[keep], counts[keep]
    fig, ax = figures.pyplot().subplots(figsize=(4.2, 3.4))
    ax.scatter(points[:, 0], points[:, 1], s=12 + 60 * np.sqrt(counts / counts.max()), color=figures.BLUE,
               alpha=0.6, linewidths=0)
    ax.set_xlabel(figures.plain_label(xlabel, figures.MAX_AXIS_LABEL))
    ax.set_ylabel(figures.plain_label(ylabel, figures.MAX_AXIS_LABEL))
    ax.grid(alpha=0.3)
    return figures._svg(fig, name)


def html_section(r: Report, inp: ReportInput | None = None) -> str:
    """Scores, reviewer variance, the evaluators' correlations and their scatters."""
    scores, variance = r.get("scores") or {}, r.get("reviewer_variance") or {}
    summary = table(["", "value", "95% CI", "n", "items"],
                    [("mean score", scores.get("mean"), interval(scores.get("ci95")), scores.get("n"),
                      scores.get("n_clusters")),
                     ("sd of the scores", scores.get("sd"), "–", scores.get("n"), scores.get("n_clusters")),
                     ("reviewer variance", variance.get("value"), interval(variance.get("ci95")), None,
                      variance.get("n_items"))],
                    "Scores: one per (item, annotator) pair, gold items left out. Reviewer variance: the mean over "
                    "items with 2 or more ratings of the sample variance of their ratings (PerSE Table 10: one "
                    f"score does not fit every reader). Intervals: {CI_METHOD}; none from fewer than {MIN_CLUSTERS} "
                    "items or when over 10% of the resamples had no defined value.")
    evaluators = r.get("evaluators") or {}
    rows = []
    for name, e in evaluators.items():
        rows.append([name, e["n_pairs"], e["n_items"], e["n_unparsed"]]
                    + [v for m in METHODS for v in (e[m]["r"], interval(e[m]["ci95"]), pval(e[m]["p"]))])
    correlations = table(["evaluator", "pairs", "items", "unparsed", "Pearson r", "95% CI", "p", "Spearman rho",
                          "95% CI", "p", "Kendall tau-b", "95% CI", "p"], rows,
                         "Each evaluator's predicted score against the annotator's own score, over the (item, "
                         "annotator) pairs it covers. reviewer_avg: the mean of the annotator's other ratings; "
                         "item_avg: the mean of the other annotators' ratings of the item; a metric: the item's "
                         "score, the same for every annotator. unparsed: predictions without a number (left out). "
                         "The pairs of an item are not independent: 95% CI and p come from one bootstrap over items "
                         f"({CI_METHOD}; p: the interval's test of r = 0), from 20 pairs and {MIN_CLUSTERS} items; "
                         "none when over 10% of the resamples are constant on a side. With one pair per item: "
                         "Fisher z (n >= 10) and the exact permutation p (n <= 9) or scipy's. An en dash: undefined "
                         "(fewer than 3 pairs, a constant side) or not computed (too few pairs or items).")
    parts = ['<section id="scalar-rating"><h2>Scalar rating</h2>', summary, "<h3>Evaluators</h3>", correlations]
    if inp is not None and evaluators:
        points, _, _ = evaluator_points(inp)
        for n, name in enumerate(sorted(evaluators)[:MAX_SCATTERS]):
            x, y, _ = points[name]
            fig_id = f"fig-scalar-{n}"
            pearson = evaluators[name]["pearson"]
            caption = (f"{name}: predicted score (x) against the annotator's score (y), n = {len(x)} (item, "
                       f"annotator) pairs over {evaluators[name]['n_items']} items; Pearson r = {num(pearson['r'])}, "
                       f"95% CI {interval(pearson['ci95'])} ({pearson.get('ci_method') or 'no interval'}). A dot's "
                       "area grows with the pairs at that point.")
            parts.append(figure(fig_id, scatter(fig_id, x, y, f"{name} (predicted)", "annotator's score"), caption))
    return "".join(parts) + "</section>"
