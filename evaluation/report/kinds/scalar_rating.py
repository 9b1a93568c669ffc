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

Intervals (statistics.md, "Clustered data"): pairs of one item are not independent, so
every interval is a percentile bootstrap over items (2,000 resamples, seed 0): a resample
draws items with replacement and takes all their pairs, as often as the item was drawn.
None from fewer than 5 items, or when over 10% of the resamples are constant on a side
(dropped, and counted in `dropped_resamples`). p-values: exact permutation p (all n!
orderings) for n <= 9 pairs, else scipy's; both test over pairs (`p_method` says which).
"""
from collections.abc import Iterator
from typing import Any

import numpy as np
from scipy import stats

from evaluation.correlation import EXACT_MAX_N, exact_permutation_p

from .. import figures
from ..common import INTERVAL, Question, base_report, clean, question_rows
from ..inputs import Judgments, ReportInput, to_float
from ..markup import Report, figure, interval, num, table

SCORE = "score"
RESAMPLES = 2000
SEED = 0
MIN_CLUSTERS = 5  # no interval from fewer items
MAX_DROPPED = 0.10  # share of constant resamples above which an interval is not given
BLOCK_ENTRIES = 1 << 21  # floats per bootstrap block
REVIEWER_AVG, ITEM_AVG = "reviewer_avg", "item_avg"
CI_METHOD = "percentile bootstrap over items (2,000 resamples, seed 0)"
METHODS = ("pearson", "spearman", "kendall")
MAX_SCATTERS = 8
MAX_POINTS = 2000  # a scatter draws at most this many distinct (predicted, human) points

REPORT_SCHEMA = {
    "scores": {"type": "object", "description": "mean, sd, n of the (item, annotator) scores; the mean's ci95, "
                                                "ci_method, n_clusters."},
    "reviewer_variance": {"type": "object", "description": "value (mean over items with >= 2 ratings of the "
                                                           "sample variance of their ratings), n_items, ci95."},
    "evaluators": {"type": "object", "additionalProperties": {"type": "object"},
                   "description": "evaluator (reviewer_avg, item_avg, each metric, each LLM evaluator) -> pearson, "
                                  "spearman, kendall ({r, ci95, p, ci_method, n_clusters}), n_pairs, n_items, "
                                  "n_unparsed."},
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
        has = ~np.isnan(x)
        points[name] = (x[has], score[has], item[has])
    return points, {name: unparsed.get(name, 0) for name in points}, set(metrics)


# --- the item bootstrap --------------------------------------------------------------------

def item_draws(n_clusters: int, width: int, resamples: int = RESAMPLES, seed: int = SEED) -> Iterator[np.ndarray]:
    """(k, n_clusters) blocks of how often each cluster (item) is drawn in each resample, a
    resample drawing n_clusters items with replacement; `width` = the floats a statistic
    needs per resample (sizes the blocks). One default_rng(seed) draws every row in order,
    so the rows do not depend on the block size."""
    rng = np.random.default_rng(seed)
    block = max(1, min(resamples, BLOCK_ENTRIES // max(width, n_clusters, 1)))
    done = 0
    while done < resamples:
        k = min(block, resamples - done)
        idx = rng.integers(0, n_clusters, (k, n_clusters))
        yield np.stack([np.bincount(row, minlength=n_clusters) for row in idx]).astype(float)
        done += k


def _weighted_pearson(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row's weighted sample (row weights `w`, (k, n); x and y per pair,
    or per row and pair); NaN when a side is constant."""
    total = w.sum(axis=1)
    x, y = x - x.mean(), y - y.mean()  # centred: less cancellation
    mx, my = (w * x).sum(axis=1) / total, (w * y).sum(axis=1) / total
    cov = (w * x * y).sum(axis=1) / total - mx * my
    vx, vy = (w * x * x).sum(axis=1) / total - mx * mx, (w * y * y).sum(axis=1) / total - my * my
    tiny_x, tiny_y = 1e-12 * max(float(np.abs(x).max(initial=0)), 1e-150) ** 2, \
        1e-12 * max(float(np.abs(y).max(initial=0)), 1e-150) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        r = cov / np.sqrt(vx * vy)
    r[(vx <= tiny_x) | (vy <= tiny_y)] = np.nan
    return np.clip(r, -1.0, 1.0)


def _midranks(w: np.ndarray, code: np.ndarray, n_codes: int) -> np.ndarray:
    """Each pair's midrank in each row's weighted sample: the pairs with value code c hold
    positions (weight of the lower codes) + 1 ... + (their weight)."""
    totals = np.zeros((w.shape[0], n_codes))
    np.add.at(totals.T, code, w.T)
    below = np.cumsum(totals, axis=1) - totals
    return (below + (totals + 1) / 2)[:, code]


def _weighted_kendall(w: np.ndarray, xcode: np.ndarray, ycode: np.ndarray, n_x: int, n_y: int) -> np.ndarray:
    """Kendall's tau-b of each row's weighted sample. Pairs are gathered into cells (x code,
    y code); S = sum over cells of w_cell * (earlier-x units at a lower y - at a higher y),
    where "earlier" is a strictly smaller x (pairs tied in x count in neither); tau-b =
    S / sqrt((n0 - n1)(n0 - n2)), n1 and n2 the pairs tied in x and in y."""
    k = w.shape[0]
    cells = np.zeros((k, n_x, n_y))
    flat = cells.reshape(k, n_x * n_y)
    np.add.at(flat.T, xcode * n_y + ycode, w.T)
    before = np.cumsum(cells, axis=1) - cells  # units at a smaller x, per y level
    lower = np.cumsum(before, axis=2) - before  # ... at a lower y level
    higher = before.sum(axis=2, keepdims=True) - lower - before
    s = (cells * (lower - higher)).sum(axis=(1, 2))
    total = w.sum(axis=1)
    wx, wy = cells.sum(axis=2), cells.sum(axis=1)
    n0 = total * (total - 1) / 2
    n1, n2 = (wx * (wx - 1) / 2).sum(axis=1), (wy * (wy - 1) / 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = s / np.sqrt((n0 - n1) * (n0 - n2))
    tau[(n0 - n1 <= 0) | (n0 - n2 <= 0)] = np.nan
    return np.clip(tau, -1.0, 1.0)


def bootstrap_coefficients(x: np.ndarray, y: np.ndarray, cluster: np.ndarray, resamples: int = RESAMPLES,
                           seed: int = SEED) -> dict[str, np.ndarray]:
    """{method: its value in every item-bootstrap resample} (NaN where a resample is constant
    on a side); `cluster` = each pair's cluster (item) index, 0 ... n_clusters - 1."""
    n_clusters = int(cluster.max()) + 1 if len(cluster) else 0
    ux, xcode = np.unique(x, return_inverse=True)
    uy, ycode = np.unique(y, return_inverse=True)
    if len(ux) < len(uy):  # Kendall's cells: the side with fewer values as levels
        xcode, ycode, ux, uy = ycode, xcode, uy, ux
    out: dict[str, list[np.ndarray]] = {m: [] for m in METHODS}
    width = max(len(x), len(ux) * len(uy))
    for counts in item_draws(n_clusters, width, resamples, seed):
        w = counts[:, cluster]
        out["pearson"].append(_weighted_pearson(w, x, y))
        out["spearman"].append(_weighted_pearson(w, _midranks(w, xcode, len(ux)), _midranks(w, ycode, len(uy))))
        out["kendall"].append(_weighted_kendall(w, xcode, ycode, len(ux), len(uy)))
    return {m: np.concatenate(v) if v else np.zeros(0) for m, v in out.items()}


def interval_part(samples: np.ndarray, n_clusters: int) -> dict[str, Any]:
    """{"ci95", "ci_method", "n_clusters", "dropped_resamples"} (+ "ci_reason" when None)."""
    dropped = int(np.count_nonzero(np.isnan(samples)))
    part: dict[str, Any] = {"ci95": None, "ci_method": CI_METHOD, "n_clusters": int(n_clusters),
                            "dropped_resamples": dropped}
    if n_clusters < MIN_CLUSTERS:
        part["ci_reason"] = f"fewer than {MIN_CLUSTERS} items"
    elif not len(samples) or dropped > MAX_DROPPED * len(samples):
        part["ci_reason"] = f"{dropped} of {len(samples)} resamples constant on a side (over 10%)"
    else:
        lo, hi = np.percentile(samples[~np.isnan(samples)], [2.5, 97.5])
        part["ci95"] = [clean(lo), clean(hi)]
    return part


def correlation_part(x: np.ndarray, y: np.ndarray, item: np.ndarray) -> dict[str, Any]:
    """{method: {"r", "p", "ci95", ...}} and n_pairs, n_items of one evaluator's pairs."""
    items, cluster = np.unique(item, return_inverse=True)
    n = len(x)
    out: dict[str, Any] = {}
    constant = n < 3 or np.all(x == x[0]) or np.all(y == y[0])
    if constant:
        reason = "fewer than 3 pairs" if n < 3 else "a side is constant"
        for method in METHODS:
            out[method] = {"r": None, "p": None, "p_method": None, "ci95": None, "ci_method": CI_METHOD,
                           "n_clusters": int(len(items)), "dropped_resamples": 0, "ci_reason": reason}
    else:
        results = {"pearson": stats.pearsonr(x, y), "spearman": stats.spearmanr(x, y),
                   "kendall": stats.kendalltau(x, y, variant="b")}
        exact = exact_permutation_p(x, y) if n <= EXACT_MAX_N else None
        samples = bootstrap_coefficients(x, y, cluster.astype(np.int64)) if len(items) >= MIN_CLUSTERS else None
        p_method = (f"exact permutation over the {n} pairs (all {n}! orderings)" if exact is not None
                    else "scipy's test over the pairs")
        for method, result in results.items():
            r = clean(float(result.statistic))
            p = exact[method] if exact is not None else clean(float(result.pvalue))
            part = interval_part(samples[method] if samples is not None else np.zeros(0), len(items))
            out[method] = {"r": r, "p": clean(p) if r is not None else None, "p_method": p_method, **part}
    out["n_pairs"], out["n_items"] = int(n), int(len(items))
    return out


# --- the report ----------------------------------------------------------------------------

def mean_part(values: np.ndarray, item: np.ndarray) -> dict[str, Any]:
    """{"mean", "sd", "n", "unit", "ci95", ...}: the mean's interval resamples items."""
    n = len(values)
    out: dict[str, Any] = {"mean": clean(values.mean()) if n else None,
                           "sd": clean(values.std(ddof=1)) if n >= 2 else None, "n": int(n),
                           "unit": "(item, annotator) score"}
    items, cluster = np.unique(item, return_inverse=True)
    samples = np.zeros(0)
    if len(items) >= MIN_CLUSTERS:
        samples = np.concatenate([(counts[:, cluster] @ values) / counts[:, cluster].sum(axis=1)
                                  for counts in item_draws(len(items), n)])
    return {**out, **interval_part(samples, len(items))}


def reviewer_variance(item: np.ndarray, score: np.ndarray) -> dict[str, Any]:
    """Mean over items with >= 2 ratings of the sample variance of their ratings (PerSE
    Table 10), with an interval over those items."""
    size = int(item.max()) + 1 if len(item) else 0
    count = np.bincount(item, minlength=size)
    total = np.bincount(item, weights=score, minlength=size)
    squares = np.bincount(item, weights=score * score, minlength=size)
    rated = np.flatnonzero(count >= 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = (squares[rated] - total[rated] ** 2 / count[rated]) / (count[rated] - 1)
    variance = np.maximum(variance, 0.0)
    samples = np.zeros(0)
    if len(rated) >= MIN_CLUSTERS:
        samples = np.concatenate([(counts @ variance) / counts.sum(axis=1) for counts in item_draws(len(rated), 1)])
    return {"value": clean(variance.mean()) if len(rated) else None, "n_items": int(len(rated)),
            "unit": "item (sample variance of its ratings)", **interval_part(samples, len(rated))}


def correlation_entry(name: str, part: dict[str, Any]) -> dict[str, Any]:
    """A metric's evaluator entry in the shape of the common `correlations` key."""
    entry: dict[str, Any] = {"n": part["n_pairs"], "unit": "(item, annotator)", "x": f"{name} of the item",
                             "y": "the annotator's score"}
    for method in METHODS:
        c = part[method]
        entry[method] = {"r": c["r"], "p_value": c["p"], "ci95": c["ci95"], "ci_method": c["ci_method"],
                         "n_clusters": c["n_clusters"]}
    return entry


def build(inp: ReportInput) -> dict[str, Any]:
    report, js = base_report(inp, [Question.single(SCORE, INTERVAL)], SCORE)
    agreement = report["agreement"].get(SCORE)
    if agreement is not None:
        agreement.update(ci_method="percentile bootstrap over items (1,000 resamples, seed 0)",
                         n_clusters=agreement["n_units"])
    item, _, score = human_scores(inp, js)
    report["scores"] = mean_part(score, item)
    report["reviewer_variance"] = reviewer_variance(item, score)
    points, unparsed, metrics = evaluator_points(inp, js)
    evaluators = {}
    for name in sorted(points):
        x, y, items = points[name]
        evaluators[name] = {**correlation_part(x, y, items), "n_unparsed": int(unparsed[name])}
    report["evaluators"] = evaluators
    report["correlations"] = {name: correlation_entry(name, evaluators[name]) for name in sorted(metrics)}
    return report


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
    fig, ax = figures.plt.subplots(figsize=(4.2, 3.4))
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
                    "items.")
    evaluators = r.get("evaluators") or {}
    rows = []
    for name, e in evaluators.items():
        rows.append([name, e["n_pairs"], e["n_items"], e["n_unparsed"]]
                    + [v for m in METHODS for v in (e[m]["r"], interval(e[m]["ci95"]), e[m]["p"])])
    correlations = table(["evaluator", "pairs", "items", "unparsed", "Pearson r", "95% CI", "p", "Spearman rho",
                          "95% CI", "p", "Kendall tau-b", "95% CI", "p"], rows,
                         "Each evaluator's predicted score against the annotator's own score, over the (item, "
                         "annotator) pairs it covers. reviewer_avg: the mean of the annotator's other ratings; "
                         "item_avg: the mean of the other annotators' ratings of the item; a metric: the item's "
                         "score, the same for every annotator. unparsed: predictions without a number (left out). "
                         f"95% CI: {CI_METHOD}, none from fewer than {MIN_CLUSTERS} items or when over 10% of the "
                         "resamples are constant. p: exact permutation p for up to 9 pairs, else scipy's. An en "
                         "dash: undefined (fewer than 3 pairs, or a constant side).")
    parts = ['<section id="scalar-rating"><h2>Scalar rating</h2>', summary, "<h3>Evaluators</h3>", correlations]
    if inp is not None and evaluators:
        points, _, _ = evaluator_points(inp)
        for n, name in enumerate(sorted(evaluators)[:MAX_SCATTERS]):
            x, y, _ = points[name]
            fig_id = f"fig-scalar-{n}"
            pearson = evaluators[name]["pearson"]
            caption = (f"{name}: predicted score (x) against the annotator's score (y), n = {len(x)} (item, "
                       f"annotator) pairs over {evaluators[name]['n_items']} items; Pearson r = {num(pearson['r'])}, "
                       f"95% CI {interval(pearson['ci95'])} (bootstrap over items). A dot's area grows with the "
                       "pairs at that point.")
            parts.append(figure(fig_id, scatter(fig_id, x, y, f"{name} (predicted)", "annotator's score"), caption))
    return "".join(parts) + "</section>"
