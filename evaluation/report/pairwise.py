"""pairwise_alignment report: majority per item, metric alignment with CIs, McNemar + Holm
comparisons between metrics, and win rates (ExPerT Table 1)."""
import numpy as np

from evaluation.alignment import TIE, compare_metrics, metric_alignment, win_rate

from .common import NOMINAL, base_report, clean, majority, question_rows
from .inputs import codes_of, to_float

CHOICE = "choice"
MISSING_PICKS = ("", "N/A")


def score_rows(inp):
    """Long-format metric scores (item, metric, candidate, value): the items' metric_scores,
    then prediction rows whose question is one of the item's candidates (these win on a
    repeat). Non-numeric values are dropped."""
    a, b = inp.candidates[inp.p_item, 0], inp.candidates[inp.p_item, 1]
    is_score = (inp.p_annotator == "") & ((inp.p_question == a) | (inp.p_question == b))
    p_value = to_float(inp.p_value[is_score])
    item = np.concatenate([inp.s_item, inp.p_item[is_score]])
    metric = np.concatenate([inp.s_metric, inp.p_evaluator[is_score]])
    candidate = np.concatenate([inp.s_candidate, inp.p_question[is_score]])
    value = np.concatenate([inp.s_value, p_value])
    keep = ~np.isnan(value)
    return item[keep], metric[keep], candidate[keep], value[keep]


def picks_from_scores(inp, item, candidate, value):
    """Per item: the candidate with the higher score, "tie" on equal scores, None where a
    candidate has no score (the rule of statistics.md; vectorized over items)."""
    first = np.full(inp.n_items, np.nan)
    second = np.full(inp.n_items, np.nan)
    on_first = candidate == inp.candidates[item, 0]
    on_second = candidate == inp.candidates[item, 1]
    first[item[on_first]] = value[on_first]  # later rows overwrite earlier ones
    second[item[on_second]] = value[on_second]
    pick = np.where(first > second, inp.candidates[:, 0], np.where(second > first, inp.candidates[:, 1], TIE))
    pick = pick.astype(object)
    pick[np.isnan(first) | np.isnan(second) | inp.is_gold] = None
    return pick


def metric_picks(inp, extra=None):
    """{metric: {item_id: pick}} for every metric present on non-gold items: picks from
    scores (item metric_scores, score predictions, and `extra` = {metric: (item, candidate,
    value)} such as ExPerT scores) and non-personalized predicted choices (`N/A` and
    unparsed predictions left out)."""
    item, metric, candidate, value = score_rows(inp)
    by_metric = {}
    names, code = codes_of(metric)
    for k, name in enumerate(names.tolist()):
        mask = code == k
        by_metric[str(name)] = picks_from_scores(inp, item[mask], candidate[mask], value[mask])
    for name, (e_item, e_candidate, e_value) in (extra or {}).items():
        if name not in by_metric and len(e_item):
            by_metric[name] = picks_from_scores(inp, e_item, e_candidate, e_value)
    out = {}
    for name, pick in by_metric.items():
        has = np.flatnonzero(pick != None)  # noqa: E711 (elementwise)
        out[name] = dict(zip(inp.item_ids[has].tolist(), pick[has].tolist()))
    chosen = ((inp.p_question == CHOICE) & (inp.p_annotator == "") & ~np.isin(inp.p_value, MISSING_PICKS)
              & ~inp.is_gold[inp.p_item])
    for name in np.unique(inp.p_evaluator[chosen]).tolist() if chosen.any() else []:
        mask = chosen & (inp.p_evaluator == name)
        out.setdefault(str(name), {}).update(zip(inp.item_ids[inp.p_item[mask]].tolist(), inp.p_value[mask].tolist()))
    return {name: out[name] for name in sorted(out)}


def choice_keys(inp, js, extra=None):
    """The pairwise keys of interfaces.md for the `choice` question."""
    labels, no_majority = majority(question_rows(js, CHOICE), inp.item_ids, inp.value_names)
    picks = metric_picks(inp, extra)
    alignment = {}
    for metric, by_item in picks.items():
        result = metric_alignment(labels, by_item)
        alignment[metric] = {
            "alignment": clean(result["alignment"]),
            "alignment_strict": clean(result["alignment_strict"]),
            "agree": int(result["agree"]),
            "ties": int(result["ties"]),
            "n": int(result["n"]),
            "ci95": [clean(x) for x in result["ci95"]] if result["ci95"] is not None else [None, None],
        }
    comparisons = [{"a": c["a"], "b": c["b"], "p_value": clean(c["p_value"]), "p_holm": clean(c["p_holm"])}
                   for c in compare_metrics(labels, picks)] if len(picks) >= 2 else []
    return {
        "majority": dict(sorted(labels.items())),
        "no_majority": int(no_majority),
        "alignment": alignment,
        "metric_comparisons": comparisons,
        "win_rate": {str(k): clean(v) for k, v in sorted(win_rate(labels).items())},
    }


def build(inp):
    report, js = base_report(inp, [(CHOICE, NOMINAL)], CHOICE)
    report.update(choice_keys(inp, js))
    return report
