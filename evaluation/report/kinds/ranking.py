"""The listwise ranking study's report (statistics.md, "Best-worst and listwise ranking";
interfaces.md, report key `ranking`).

Every counted judgment of question `rank` is one ranking of its item's outputs, stored as
the candidate ids best first joined by ">" with "=" inside a tied rank (`a>b=c>d`,
interfaces.md "Judgments CSV"; `split_order` / `join_order`). A value that does not rank
every candidate of its item exactly once is left out and counted (`ranking_detail.n_unparsed`;
every door refuses such answers, so this only guards data edited by hand).

Keys besides the common ones (report/common.py; `agreement` is empty: the agreement of
rankings is Kendall's W):
- `ranking`: Plackett-Luce strengths by maximum likelihood (log scale, mean 0), item-
  bootstrap `ci95` and `rank_ci95` (2,000 resamples, seed 0), ties by Luce's rule for tied
  ranks (evaluation.screens.plackett_luce; docs/statistics.md); null with `reason` when the
  strengths are not defined; `ranking_detail` (model, n_rankings, n_clusters, resamples,
  seed, dropped_resamples, n_unparsed);
- `kendall_w`: Kendall's W over annotators per item, mean over the items with >= 2
  rankings, with its n and a bootstrap interval over items;
- `systems` (per-system table: metric means on the items of its human row, `human` from
  the implied pairs: every two outputs of a ranking are one comparison, the higher one
  wins, the same rank is a tie), `pairwise_wins`, `pairwise_n`, `intransitivity`, and
  `correlations_ranking` (each metric's system means against the strengths: Kendall tau-b,
  exact p for n <= 9 systems), as the pairwise kinds report them (report/strengths.py).
"""
from itertools import combinations
from typing import Any

import numpy as np

from evaluation.bootstrap import bootstrap_interval, bootstrap_method, interval_refusal
from evaluation.bradley_terry import (
    RESAMPLES,
    Comparisons,
    intransitivity,
    pairwise_n,
    pairwise_wins,
    resampled_sums,
    win_matrix,
)
from evaluation.intervals import t_interval
from evaluation.screens.answer_checks import order_groups, order_text
from evaluation.screens.plackett_luce import (
    Rankings,
    implied_comparisons,
    kendall_w_of_item,
    kendall_w_per_item,
    midranks,
    plackett_luce,
)
from evaluation.vocabulary import LOWER_IS_BETTER, TIE

from ..choice import metric_scores, slot_scores
from ..common import base_report, clean, clean_list, item_majority
from ..inputs import Judgments, ReportInput, codes_of, objects
from ..strengths import compared_slots, correlations_ranking, human_part
from ..systems import system_codes, system_wins, systems_table

RANK_QUESTION = "rank"
MODEL_NAME = "Plackett-Luce"
STRENGTH_MEASURE = "plackett_luce_strength"  # the per-system CSV's measure name
VALUE_COLUMNS = False  # the per-item CSV has no n_<value> column per distinct order (up to 8! of them)

REPORT_SCHEMA = {
    "systems": {"type": "object", "additionalProperties": {"type": "object"},
                "description": "system id -> n_items, metrics (mean, ci95 on the items of its human row), wins, "
                               "decided, win_rate (items whose majority best is it), human (n, wins, ties, "
                               "win_rate, ci95 over the implied pairs of the rankings)."},
    "pairwise_wins": {"type": "object", "additionalProperties": {"type": "object"},
                      "description": "a -> b -> times a was ranked above b (same rank 0.5)."},
    "pairwise_n": {"type": "object", "additionalProperties": {"type": "object"},
                   "description": "a -> b -> rankings holding both a and b."},
    "ranking": {"type": "object", "nullable": True, "additionalProperties": {"type": "object"},
                "description": "system id -> strength (Plackett-Luce, log, mean 0), ci95, rank, rank_ci95 (bootstrap "
                               "over items); null with `reason` when the strengths are not defined."},
    "reason": {"type": "string", "description": "why `ranking` is null."},
    "ranking_detail": {"type": "object", "description": "model, n_rankings, n_clusters, resamples, seed, "
                                                        "dropped_resamples, ci_method, n_unparsed."},
    "kendall_w": {"type": "object", "description": "value (mean Kendall's W over items with >= 2 rankings), n (those "
                                                   "items), n_rankings, n_items_undefined, tie_corrected, ci95, "
                                                   "ci_method."},
    "intransitivity": {"type": "object", "description": "circular_triads, zeta, n_systems, cycles, undecided_pairs "
                                                        "(majority tournament of the implied pairs)."},
    "correlations_ranking": {"type": "object", "description": "metric -> Kendall tau-b (and Pearson, Spearman) of "
                                                              "its system means against the Plackett-Luce strengths."},
}


def split_order(value: Any) -> list[list[str]]:
    """A stored order as its ranks, best first (evaluation.screens.answer_checks.order_groups).

    >>> split_order("a>b=c>d")
    [['a'], ['b', 'c'], ['d']]
    """
    return order_groups(str(value))


join_order = order_text  # ranks as the stored text: [["a"], ["b", "c"]] -> "a>b=c"


def rankings_of(inp: ReportInput, rows: Judgments, systems: list[str]) -> tuple[Rankings, np.ndarray, int]:
    """(the rankings of the `rank` rows that rank every candidate of their item once, the
    mask of those rows, rows left out). Each distinct value is parsed once; rankings without
    ties, all of one length, become an int array (Rankings' fast path)."""
    code_of = {s: k for k, s in enumerate(systems)}
    parsed: list[list[list[int]] | None] = []
    for value in rows.value_names.tolist():
        groups = [[code_of.get(c, -1) for c in g] for g in split_order(value)] if value not in (None, "") else []
        placed = [c for g in groups for c in g]
        ok = bool(placed) and min(placed) >= 0 and len(set(placed)) == len(placed)
        parsed.append(groups if ok else None)
    value_set = [frozenset(c for g in p for c in g) if p is not None else None for p in parsed]
    # The item's candidate set, one frozenset per item (the rows' value sets compare with it).
    labels, c_code = codes_of(inp.c_id)
    system_of_label = np.array([code_of.get(str(x), -1) for x in labels.tolist()], dtype=np.int64)
    item_sets: list[frozenset[int] | None] = [None] * inp.n_items
    codes = system_of_label[c_code] if len(c_code) else np.zeros(0, dtype=np.int64)
    bounds = np.searchsorted(inp.c_item, np.arange(inp.n_items + 1))
    for i in np.unique(rows.item).tolist():
        item_sets[i] = frozenset(codes[bounds[i]:bounds[i + 1]].tolist())
    keep = np.fromiter((value_set[v] is not None and value_set[v] == item_sets[i]
                        for v, i in zip(rows.vcode.tolist(), rows.item.tolist())), dtype=bool, count=len(rows))
    kept_codes = rows.vcode[keep]
    used = [parsed[v] or [] for v in np.unique(kept_codes).tolist()]
    lengths = {len(p) for p in used}
    orders: list[Any] | np.ndarray
    if used and len(lengths) == 1 and all(len(g) == 1 for p in used for g in p):  # no ties, one length
        width = lengths.pop()
        table = np.array([[g[0] for g in p] if p is not None and len(p) == width else [-1] * width for p in parsed],
                         dtype=np.int64)
        orders = table[kept_codes]
    else:
        orders = [parsed[v] for v in kept_codes.tolist()]
    return Rankings(systems, rows.item[keep], orders), keep, int(np.count_nonzero(~keep))


def pair_comparisons(r: Rankings) -> Comparisons:
    """The implied pairs of the rankings (evaluation.screens.plackett_luce.implied_comparisons),
    vectorized over positions for the int-array form (no ties)."""
    if not isinstance(r.orders, np.ndarray):
        return implied_comparisons(r)
    k = r.orders.shape[1] if r.orders.ndim == 2 else 0
    pairs = list(combinations(range(k), 2))
    if not pairs or not len(r.orders):
        empty = np.zeros(0, dtype=np.int64)
        return Comparisons(r.systems, empty, empty, empty, np.zeros(0))
    first = np.concatenate([r.orders[:, a] for a, _ in pairs])
    second = np.concatenate([r.orders[:, b] for _, b in pairs])
    item = np.tile(np.asarray(r.item, dtype=np.int64), len(pairs))
    return Comparisons(r.systems, item, first, second, np.ones(len(first)))


def item_w(r: Rankings) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(W per item with >= 2 rankings and a defined W, those items' codes, their rankings,
    items whose W is undefined) by plackett_luce.kendall_w_of_item's formula. Rankings
    without ties (the int-array form) take a vectorized path: per item the rank sums R_i of
    its outputs over its m rankings, W = 12 sum_i (R_i - m (n + 1) / 2)^2 / (m^2 (n^3 - n));
    every ranking of an item ranks the same outputs (rankings_of checked them)."""
    if not isinstance(r.orders, np.ndarray):
        by_item: dict[int, list[Any]] = {}
        for it, order in zip(np.asarray(r.item).tolist(), r.orders):
            by_item.setdefault(int(it), []).append(order)
        values, labels, n_rankings, undefined = kendall_w_per_item(dict(sorted(by_item.items())))
        return np.array(values, dtype=float), np.array(labels, dtype=np.int64), n_rankings, undefined
    j, k = r.orders.shape if r.orders.ndim == 2 else (0, 0)
    items, item_row = np.unique(np.asarray(r.item, dtype=np.int64), return_inverse=True)
    item_row = item_row.ravel()
    s = len(r.systems)
    sums = np.zeros((len(items), s))
    np.add.at(sums, (np.repeat(item_row, k), r.orders.ravel()), np.tile(np.arange(1, k + 1, dtype=float), j))
    m = np.bincount(item_row, minlength=len(items)).astype(float)
    present = np.zeros((len(items), s), dtype=bool)
    if j:
        present[item_row[:, None], r.orders] = True
    multi = (m >= 2) & (k >= 2)
    spread = (np.where(present, sums - (m * (k + 1) / 2)[:, None], 0.0) ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = 12 * spread / (m * m * (k**3 - k))
    return w[multi], items[multi], int(m[multi].sum()), 0


def mean_w(r: Rankings, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """The report's `kendall_w`: plackett_luce.kendall_w's keys and value (the mean of W
    over the items with >= 2 rankings, its n), with the interval drawn the way the strengths'
    is: the items' W values as profiles (items of equal W are one profile; W takes few
    values), resampled by the compiled item bootstrap (evaluation.bradley_terry.resampled_sums:
    rank_bootstrap.draw_counts, 2,000 resamples, seed 0), each resample's mean over its
    drawn items, the report's bias-corrected expanded percentile interval. At 20,000 items
    this costs a fraction of a second where evaluation.bootstrap.clustered_mean's per-item
    draw took seconds."""
    values, labels, n_rankings, undefined = item_w(r)
    ties = not isinstance(r.orders, np.ndarray) and any(len(g) > 1 for o in r.orders for g in o)
    out: dict[str, Any] = {"value": None, "n": int(len(values)), "n_rankings": n_rankings,
                           "n_items_undefined": undefined, "tie_corrected": ties, "ci95": None,
                           "ci_method": bootstrap_method("items", resamples, seed), "n_clusters": int(len(values))}
    if not len(values):
        out["reason"] = "no item has 2 or more rankings with a defined W"
        return out
    out["value"] = float(np.mean(values))
    refusal = interval_refusal(len(values))
    if refusal is not None:
        out["ci_reason"] = refusal
        return out
    distinct, profile = np.unique(values, return_inverse=True)
    mult = np.bincount(profile.ravel(), minlength=len(distinct))
    sums = resampled_sums(mult, np.c_[distinct, np.ones(len(distinct))], resamples, seed)
    interval = bootstrap_interval(sums[:, 0] / sums[:, 1], out["value"], len(values))
    out["ci95"] = interval.ci95
    if interval.ci95 is None:
        out["ci_reason"] = interval.reason
    return out


def best_of(r: Rankings) -> np.ndarray:
    """Each ranking's best output ("tie" when it puts several first)."""
    if isinstance(r.orders, np.ndarray):
        return objects([r.systems[c] for c in r.orders[:, 0].tolist()]) if len(r.orders) else objects([])
    return objects([r.systems[o[0][0]] if len(o[0]) == 1 else TIE for o in r.orders])


def best_labels(inp: ReportInput, rows: Judgments, top: np.ndarray) -> np.ndarray:
    """Per item: the majority of its rankings' best output (`best_of`; None where there is
    no majority): the `wins` of the per-system table."""
    names, code = codes_of(top)
    js = Judgments(rows.item, rows.coder, code, np.zeros(len(code), dtype=np.int64),
                   rows.annotator, rows.question, top, rows.shown, rows.seconds, rows.time,
                   question_names=objects([RANK_QUESTION]), value_names=names)
    return item_majority(js, inp.n_items, names, inp.min_votes).label


def mean_ranks(inp: ReportInput, r: Rankings) -> np.ndarray:
    """(n_items, systems): each output's mean rank over its item's rankings (1 = best; a
    tied output at the mean of its group's positions), NaN where it was never ranked."""
    s = len(r.systems)
    total, count = np.zeros((inp.n_items, s)), np.zeros((inp.n_items, s))
    if isinstance(r.orders, np.ndarray):
        j, k = r.orders.shape if r.orders.ndim == 2 else (0, 0)
        rows = np.repeat(np.asarray(r.item, dtype=np.int64), k)
        np.add.at(total, (rows, r.orders.ravel()), np.tile(np.arange(1, k + 1, dtype=float), j))
        np.add.at(count, (rows, r.orders.ravel()), 1.0)
    else:
        for it, order in zip(np.asarray(r.item).tolist(), r.orders):
            for c, rank in midranks(order)[0].items():
                total[it, c] += rank
                count[it, c] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row pair (NaN where a row is constant)."""
    xc, yc = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((xc * yc).sum(axis=1) / np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1)))


def _kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row pair over its k(k - 1)/2 pairs of outputs (NaN where a
    row is constant)."""
    a, b = np.triu_indices(x.shape[1], 1)
    sx, sy = np.sign(x[:, a] - x[:, b]), np.sign(y[:, a] - y[:, b])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((sx * sy).sum(axis=1) / np.sqrt((sx != 0).sum(axis=1) * (sy != 0).sum(axis=1)))


def item_coefficients(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Per row (item): Pearson, Spearman (Pearson of the average ranks) and Kendall tau-b
    between its outputs' scores x and human values y (rows of one width)."""
    from scipy.stats import rankdata  # heavy imports inside the function: docs/architecture.md

    return {"pearson": _pearson_rows(x, y),
            "spearman": _pearson_rows(rankdata(x, axis=1), rankdata(y, axis=1)),
            "kendall": _kendall_rows(x, y)}


ITEM_CORRELATION = ("mean over items of the per-item coefficient between the item's outputs' scores and minus their "
                    "mean ranks (items with >= 3 such outputs and neither side constant)")


def output_correlations(inp: ReportInput, r: Rankings, slots: dict[str, np.ndarray]) -> dict[str, Any]:
    """`correlations` (item level): per metric and item, Pearson, Spearman and Kendall tau-b
    between the metric's scores of the item's outputs (negated for lower-is-better metrics)
    and minus their mean ranks over the item's rankings (the segment-level correlation of
    machine-translation metric evaluation), over the outputs with both (>= 3); each
    coefficient's mean over the items, with the t interval and one-sample t-test (against 0)
    over items (independent units: one value per item)."""
    ranks = mean_ranks(inp, r)
    code_of = {name: k for k, name in enumerate(r.systems)}
    labels, code = codes_of(inp.c_id)
    system = np.array([code_of.get(str(x), -1) for x in labels.tolist()], dtype=np.int64)[code]
    known = system >= 0
    item, slot, system = inp.c_item[known], inp.c_slot[known], system[known]
    human = -ranks[item, system] if len(item) else np.zeros(0)
    out = {}
    for metric, matrix in sorted(slots.items()):
        score = matrix[item, slot] * (-1.0 if metric in LOWER_IS_BETTER else 1.0)
        use = np.isfinite(score) & np.isfinite(human)
        it, xs, ys = item[use], score[use], human[use]  # rows in item order
        per_item = np.bincount(it, minlength=inp.n_items)
        starts = np.r_[0, np.cumsum(per_item)[:-1]]
        values: dict[str, list[np.ndarray]] = {"pearson": [], "spearman": [], "kendall": []}
        for k in sorted(set(per_item[per_item >= 3].tolist())):
            rows = starts[per_item == k][:, None] + np.arange(k)
            for name, coefficient in item_coefficients(xs[rows], ys[rows]).items():
                values[name].append(coefficient)
        pooled = {name: np.concatenate(v) if v else np.zeros(0) for name, v in values.items()}
        if not len(pooled["kendall"]):
            continue
        entry: dict[str, Any] = {"n": int(len(pooled["kendall"])), "n_clusters": int(len(pooled["kendall"])),
                                 "unit": "item", "x": f"{'minus ' if metric in LOWER_IS_BETTER else ''}{metric} "
                                                      "scores of the item's outputs (each coefficient per item, "
                                                      "then its mean over items; 95% CI: t interval, p: one-sample "
                                                      "t-test against 0, over items)",
                                 "y": "minus the outputs' mean ranks over the item's rankings (1 = best)",
                                 "method": ITEM_CORRELATION}
        for name, v in pooled.items():
            defined = v[np.isfinite(v)]
            t = t_interval(defined, null=0.0)
            entry[name] = {"r": clean(t.mean), "ci95": clean_list(list(t.ci95)) if t.ci95 else None,
                           "p_value": clean(t.p_value), "ci_method": "t interval over items",
                           "n_clusters": int(len(defined)), "n_undefined": int(len(v) - len(defined)),
                           "p_method": "one-sample t-test over items against 0",
                           **({"ci_reason": t.reason} if t.ci95 is None and t.reason else {})}
        out[metric] = entry
    return out


def build(inp: ReportInput) -> dict[str, Any]:
    """The report of a listwise ranking study (module docstring)."""
    report, js = base_report(inp, [], RANK_QUESTION)
    rows = js.of_question(RANK_QUESTION)
    systems = [str(s) for s in system_codes(inp)[0].tolist()]
    r, keep, n_unparsed = rankings_of(inp, rows, systems)
    kept_rows = rows.where(keep)
    fitted = plackett_luce(r)
    compared = pair_comparisons(r)
    w = win_matrix(compared)
    same_items = compared_slots(inp, compared) if len(compared) else None
    slots = slot_scores(inp, metric_scores(inp))
    top = best_of(r)
    table = systems_table(inp, system_wins(inp, best_labels(inp, kept_rows, top)), slots, same_items)
    for system, human in human_part(compared).items():
        table[system]["human"] = human
    report["systems"] = table
    report["pairwise_wins"], report["pairwise_n"] = pairwise_wins(w, systems), pairwise_n(w, systems)
    report["ranking"] = fitted["ranking"]
    if fitted["ranking"] is None:
        report["reason"] = fitted["reason"]
    report["ranking_detail"] = {**fitted["detail"], "n_unparsed": n_unparsed, "model_name": MODEL_NAME,
                                "strength_measure": STRENGTH_MEASURE,
                                **({"reason": fitted["reason"]} if "reason" in fitted else {})}
    report["intransitivity"] = intransitivity(w, systems)
    means = {m: {s: v["metrics"][m]["mean"] for s, v in table.items() if m in v["metrics"]} for m in slots}
    report["correlations_ranking"] = {
        m: dict(e, y=f"{MODEL_NAME} strength of the system")
        for m, e in correlations_ranking(fitted["ranking"], means).items()}
    names, code = codes_of(top)  # whole orders are too many to count: how often each output was ranked best
    report["value_counts"] = {RANK_QUESTION: dict(sorted(zip(map(str, names.tolist()),
                                                            np.bincount(code, minlength=len(names)).tolist())))}
    report["kendall_w"] = {k: clean(v) if not isinstance(v, list) else [clean(x) for x in v]
                           for k, v in mean_w(r).items()}
    report["correlations"] = output_correlations(inp, r, slots)
    return report


def table_columns(inp: ReportInput, report: dict[str, Any] | None = None) -> dict[str, dict[tuple[str, str], Any]]:
    """The per-item CSV's `kendall_w` column: W of the item's rankings (items with >= 2)."""
    js = Judgments.of(inp, inp.counted()).of_question(RANK_QUESTION)
    systems = [str(s) for s in system_codes(inp)[0].tolist()]
    r, _, _ = rankings_of(inp, js, systems)
    by_item: dict[int, list[Any]] = {}
    for item, order in zip(np.asarray(r.item).tolist(), r.groups()):
        by_item.setdefault(item, []).append(order)
    cells = {}
    for item, orders in by_item.items():
        if len(orders) >= 2:
            w = kendall_w_of_item(orders)
            if w is not None:
                cells[(str(inp.item_ids[item]), RANK_QUESTION)] = round(w, 6)
    return {"kendall_w": cells}


def html_section(report: dict[str, Any], inp: Any = None) -> str:
    """Kendall's W (the Systems section, with the strengths' forest plot, is the shared one:
    report/ranking_html.py)."""
    from html import escape

    from ..markup import interval, num
    w = report.get("kendall_w") or {}
    if w.get("value") is None:
        text = f"Kendall's W: not defined ({escape(str(w.get('reason') or w.get('ci_reason') or 'no data'))})."
    else:
        text = (f"Kendall's W (agreement of the annotators' rankings of an item; 0 = none, 1 = identical), mean over "
                f"n = {w['n']} items with 2 or more rankings ({w['n_rankings']} rankings"
                f"{'; tie-corrected' if w.get('tie_corrected') else ''}): {num(w['value'])}, 95% CI "
                f"{interval(w.get('ci95'))} (bootstrap over items, 2,000 resamples, seed 0"
                f"{'; ' + escape(str(w['ci_reason'])) if w.get('ci_reason') else ''}).")
    return f'<section id="rank-agreement"><h2>Agreement of the rankings</h2><p>{text}</p></section>'
