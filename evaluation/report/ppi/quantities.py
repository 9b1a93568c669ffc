"""The human quantities an evaluator's predictions can stand in for (report/ppi/part.py),
each a mean over items of one value per item, with each evaluator's prediction of that
value (docs/statistics.md, "Prediction-powered estimates in the report"):

- `win_rate` per system pair "a vs b" (pairwise kinds; `preference:<aspect>` per aspect of
  the aspect study): an item's value is the share of its human comparisons of a with b
  won by a (tie 0.5). A metric predicts its pick (1 when it scores a above b, 0 below, 0.5
  on equal scores: the report's pick rule, lower-is-better metrics negated); an LLM judge's
  choice is 1 for a, 0 for b, 0.5 for tie (any other answer predicts nothing of this pair);
- `mean_score` per system (scalar rating): an item's value is the mean of its human
  scores; a metric's score of the item, or a judge's predicted score, stands in as is
  (PPI stays unbiased whatever the scale; power tuning shrinks a badly scaled one);
- `mean_similarity` per pair id (similarity survey): the mean rating of the item's pair;
  a metric's prediction of that pair as is.

Only non-gold items that show the quantity's systems (or ask its pair id) count; several
human judgments, or several predictions (one per annotator), of an item are averaged.
"""
from dataclasses import dataclass, field

import numpy as np

from evaluation.vocabulary import LOWER_IS_BETTER, TIE

from ..inputs import Judgments, ReportInput, codes_of, objects, to_float
from ..strengths import comparisons_of

METRIC_PICK = "the metric's pick: 1 when it scores {a} above {b}, 0 below, 0.5 on equal scores"
JUDGE_CHOICE = "the evaluator's choice: 1 for {a}, 0 for {b}, 0.5 for tie (several per item averaged)"
AS_IS = "the evaluator's {what} of the item as is (several per item averaged)"
# (item indices, values, how the prediction maps onto the human quantity)
Prediction = tuple[np.ndarray, np.ndarray, str]
# Scores from outside the prediction rows: {metric: (item, candidate, value)} (ExPerT).
Extra = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Quantity:
    """One human quantity: `name` (win_rate, ...), `target` (a system pair, a system, a pair
    id), `meaning`, the eligible `items`, the human rows (h_item, h_value) and each
    evaluator's predictions on those items."""

    name: str
    target: str
    meaning: str
    items: np.ndarray
    h_item: np.ndarray
    h_value: np.ndarray
    predictions: dict[str, Prediction] = field(default_factory=dict)


def _system_table(inp: ReportInput) -> tuple[list[str], np.ndarray]:
    """(system names, (n_items, n_systems) mask of the non-gold items showing each)."""
    labels, code = codes_of(inp.c_id)
    names = sorted({str(s) for s in labels.tolist()})
    position = {s: k for k, s in enumerate(names)}
    shows = np.zeros((inp.n_items, len(names)), dtype=bool)
    shows[inp.c_item, np.array([position[str(s)] for s in labels.tolist()], dtype=np.int64)[code]] = True
    shows[inp.is_gold] = False
    return names, shows


def _score_matrices(inp: ReportInput, names: list[str], extra: Extra | None) -> dict[str, np.ndarray]:
    """{metric: (n_items, n_systems) score, NaN where none}, lower-is-better metrics negated;
    a later row wins; `extra` metrics only where no score row has the name."""
    code_of = {s: k for k, s in enumerate(names)}
    sources = {}
    metric_names, metric_code = codes_of(inp.s_metric)
    for k, metric in enumerate(metric_names.tolist()):
        mask = (metric_code == k) & np.isfinite(inp.s_value)
        sources[str(metric)] = (inp.s_item[mask], inp.s_candidate[mask], inp.s_value[mask])
    for metric, rows in (extra or {}).items():
        if metric not in sources and len(rows[0]):
            sources[metric] = rows
    out = {}
    for metric, (item, candidate, value) in sorted(sources.items()):
        labels, code = codes_of(objects(candidate))
        system = np.array([code_of.get(str(c), -1) for c in labels.tolist()], dtype=np.int64)[code]
        value = np.asarray(value, dtype=float)
        ok = (system >= 0) & np.isfinite(value)
        matrix = np.full((inp.n_items, len(names)), np.nan)
        sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
        matrix[np.asarray(item, dtype=np.int64)[ok], system[ok]] = sign * value[ok]
        out[metric] = matrix
    return out


def pairwise(inp: ReportInput, question: str, name: str = "win_rate", metrics: bool = True,
             extra: Extra | None = None) -> list[Quantity]:
    """The win rate of a over b (a before b in name order) for every system pair shown
    together on an item, from the counted judgments of the choice `question`."""
    names, shows = _system_table(inp)
    rows = Judgments.of(inp, inp.counted()).of_question(question)
    compared, _ = comparisons_of(inp, rows, names)
    scores = _score_matrices(inp, names, extra) if metrics else {}
    chosen = np.flatnonzero((inp.p_question == question) & ~inp.p_is_score & ~inp.is_gold[inp.p_item]) \
        if len(inp.p_item) else np.zeros(0, dtype=np.int64)
    value_labels, value_code = codes_of(inp.p_value[chosen])
    code_of = {s: k for k, s in enumerate(names)}
    value_system = np.array([code_of.get(str(v), -1) for v in value_labels.tolist()], dtype=np.int64)[value_code]
    value_tie = np.array([str(v) == TIE for v in value_labels.tolist()], dtype=bool)[value_code]
    judge_labels, judge_code = codes_of(inp.p_evaluator[chosen])
    p_item = inp.p_item[chosen]
    out = []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            items = np.flatnonzero(shows[:, a] & shows[:, b])
            if not len(items):
                continue
            pair = ((compared.first == a) & (compared.second == b)) | ((compared.first == b) & (compared.second == a))
            pair &= shows[compared.item, a] & shows[compared.item, b]
            credit = np.where(compared.first[pair] == a, compared.credit[pair], 1.0 - compared.credit[pair])
            q = Quantity(name, f"{names[a]} vs {names[b]}",
                         f"share of the human comparisons of {names[a]} with {names[b]} won by {names[a]} (tie "
                         "0.5), per item, mean over the items showing both", items, compared.item[pair], credit)
            for metric, matrix in scores.items():
                sa, sb = matrix[items, a], matrix[items, b]
                has = ~np.isnan(sa) & ~np.isnan(sb)
                if has.any():
                    pick = np.where(sa > sb, 1.0, np.where(sa < sb, 0.0, 0.5))
                    q.predictions[metric] = (items[has], pick[has], METRIC_PICK.format(a=names[a], b=names[b]))
            vote = np.where(value_system == a, 1.0, np.where(value_system == b, 0.0,
                                                              np.where(value_tie, 0.5, np.nan)))
            voted = shows[p_item, a] & shows[p_item, b] & ~np.isnan(vote)
            for k, judge in enumerate(str(j) for j in judge_labels.tolist()):
                mask = voted & (judge_code == k)
                if judge not in q.predictions and mask.any():
                    q.predictions[judge] = (p_item[mask], vote[mask], JUDGE_CHOICE.format(a=names[a], b=names[b]))
            out.append(q)
    return out


def scalar(inp: ReportInput, question: str, h_item: np.ndarray, h_value: np.ndarray) -> list[Quantity]:
    """The mean human score of each system (the item's candidate; `all` for items without
    one) from the human rows (h_item, h_value), with the metrics' scores of the item and
    the `question` predictions (a per-annotator one averaged into its item)."""
    first = inp.candidates[:, 0] if inp.candidates.shape[1] else np.full(inp.n_items, None, dtype=object)
    system = objects(["all" if c is None else str(c) for c in first.tolist()])
    counted = ~inp.is_gold
    sources: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    metric_names, metric_code = codes_of(inp.s_metric)
    for k, metric in enumerate(metric_names.tolist()):
        mask = (metric_code == k) & np.isfinite(inp.s_value) & counted[inp.s_item]
        sources[str(metric)] = (inp.s_item[mask], inp.s_value[mask])
    rows = (inp.p_question == question) & ~inp.p_is_score & counted[inp.p_item] if len(inp.p_item) \
        else np.zeros(0, dtype=bool)
    values = to_float(inp.p_value[rows])
    for judge in sorted({str(e) for e in inp.p_evaluator[rows].tolist()}):
        mask = (inp.p_evaluator[rows] == judge) & np.isfinite(values)
        if judge not in sources and mask.any():
            sources[judge] = (inp.p_item[rows][mask], values[mask])
    out = []
    for target in sorted({s for s, c in zip(system.tolist(), counted.tolist()) if c}):
        on = counted & (system == target)
        items = np.flatnonzero(on)
        keep = on[h_item]
        q = Quantity("mean_score", target, f"mean human {question} of {target}'s items (per item, mean over items)",
                     items, h_item[keep], h_value[keep])
        for evaluator, (p_item, p_value) in sources.items():
            mask = on[p_item]
            if mask.any():
                q.predictions[evaluator] = (p_item[mask], p_value[mask], AS_IS.format(what=question))
        out.append(q)
    return out


def similarity(inp: ReportInput, js: Judgments) -> list[Quantity]:
    """The mean rating of each pair id over the non-gold items that ask it (item_data's
    `pairs`), with each metric's prediction of the pair (annotator empty)."""
    asks: dict[str, list[int]] = {}
    for index, data in enumerate(inp.item_data):
        if not inp.is_gold[index]:
            for pair in (data or {}).get("pairs") or []:
                if isinstance(pair, dict) and pair.get("id") is not None:
                    asks.setdefault(str(pair["id"]), []).append(index)
    ratings = to_float(js.value) if len(js) else np.zeros(0)
    rows = (inp.p_annotator == "") & ~inp.is_gold[inp.p_item] if len(inp.p_item) else np.zeros(0, dtype=bool)
    p_values = to_float(inp.p_value[rows])
    out = []
    for pair_id, listed in sorted(asks.items()):
        items = np.unique(np.asarray(listed, dtype=np.int64))
        on = np.zeros(inp.n_items, dtype=bool)
        on[items] = True
        keep = (js.question == pair_id) & ~np.isnan(ratings) & on[js.item] if len(js) else np.zeros(0, dtype=bool)
        q = Quantity("mean_similarity", pair_id, f"mean similarity rating of pair {pair_id} (per item, mean over "
                     "the items that ask it)", items, js.item[keep], ratings[keep])
        mine = (inp.p_question[rows] == pair_id) & on[inp.p_item[rows]] & np.isfinite(p_values)
        for metric in sorted({str(e) for e in inp.p_evaluator[rows][mine].tolist()}):
            mask = mine & (inp.p_evaluator[rows] == metric)
            q.predictions[metric] = (inp.p_item[rows][mask], p_values[mask], AS_IS.format(what="prediction"))
        out.append(q)
    return out

