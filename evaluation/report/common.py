"""Report parts every kind shares: counts, agreement, majority, annotators, position bias.

All statistics come from evaluation/ (agreement, majority, position_bias); this module only
selects the right judgment rows and shapes the results into the report keys of
interfaces.md.
"""
import math

import numpy as np

from evaluation.agreement import (fleiss_kappa, krippendorff_alpha, leave_one_out_agreement,
                                  percent_agreement)
from evaluation.majority import majority_labels
from evaluation.position_bias import position_bias

from .inputs import Judgments

TIE = "tie"
NOMINAL = "nominal"
INTERVAL = "interval"
ORDINAL = "ordinal"


def clean(x):
    """A JSON-safe number: NaN/inf become None, NumPy scalars become Python ones."""
    if x is None:
        return None
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return None if math.isnan(x) or math.isinf(x) else x
    return x


def counted_items(inp, stats):
    """Header counts of the report."""
    judged = np.unique(inp.j_item)
    if inp.complete_items is not None:
        complete = int(inp.complete_items)
    else:
        pairs = np.unique(np.stack([inp.j_item, _codes(inp.j_annotator)]), axis=1) if len(judged) else np.zeros((2, 0))
        per_item = np.bincount(pairs[0].astype(np.int64), minlength=inp.n_items) if pairs.size else np.zeros(inp.n_items)
        complete = int(np.sum(per_item >= inp.annotations_per_item))
    return {
        "study": inp.slug,
        "kind": inp.kind,
        "n_items": int(inp.n_items),
        "n_gold_items": int(inp.is_gold.sum()),
        "n_judgments": int(len(inp.j_item)),
        "n_annotators": int(len(np.unique(inp.j_annotator))) if len(inp.j_annotator) else 0,
        "complete_items": complete,
    }


def _codes(values):
    """Integer codes for an object array (same value, same code)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(values.astype(str), return_inverse=True)[1].astype(np.int64)


def numeric(values):
    """Float array of rating strings; unparseable values become NaN."""
    out = np.empty(len(values), dtype=float)
    for i, v in enumerate(values):
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            out[i] = np.nan
    return out


def question_rows(js, question):
    return js.where(js.question == question)


def agreement(js, level):
    """Agreement of one question's judgments: alpha at `level`, Fleiss, percent, n_units.

    For rating questions (interval) alpha is also given at the ordinal level, as
    statistics.md asks."""
    units = js.item
    coders = _codes(js.annotator)
    if level == NOMINAL:
        values = js.value.astype(str) if len(js) else js.value
        nominal = values
    else:
        values = numeric(js.value)
        keep = ~np.isnan(values)
        units, coders, values = units[keep], coders[keep], values[keep]
        nominal = values
    alpha = krippendorff_alpha(units, coders, values, level)
    kappa, kappa_units = fleiss_kappa(units, coders, nominal)
    result = {
        "krippendorff_alpha": clean(alpha.value),
        "level": level,
        "fleiss_kappa": clean(kappa),
        "fleiss_n_units": int(kappa_units),
        "percent_agreement": clean(percent_agreement(units, coders, nominal)),
        "n_units": int(alpha.n_units),
        "n_values": int(alpha.n_values),
    }
    if alpha.value is None and alpha.reason:
        result["alpha_reason"] = alpha.reason
    if level == INTERVAL:
        result["krippendorff_alpha_ordinal"] = clean(krippendorff_alpha(units, coders, values, ORDINAL).value)
    return result


def majority(js, item_ids):
    """{item_id: majority value or None} over the items that have judgments, and the
    number of items without a strict majority."""
    labels = majority_labels(js.item, js.value.astype(str) if len(js) else js.value)
    out = {str(item_ids[int(unit)]): (None if value is None else str(value)) for unit, value in labels.items()}
    return dict(sorted(out.items())), sum(1 for v in out.values() if v is None)


def chose_first(js):
    """(mask of two-option choices with a recorded order and no tie, chose-first flags)."""
    first = np.array([s.split("|", 1)[0] if s else "" for s in js.shown], dtype=object)
    ok = (first != "") & (js.value != TIE)
    return ok, (js.value == first) & ok


def position_bias_part(js):
    """Overall position bias, and per annotator {username: first_shown_rate}."""
    ok, first = chose_first(js)
    overall = position_bias(first[ok])
    per = {}
    for name in np.unique(js.annotator[ok]) if ok.any() else []:
        per[str(name)] = clean(position_bias(first[ok & (js.annotator == name)])["first_shown_rate"])
    return _bias(overall), per


def _bias(result):
    return {"first_shown_rate": clean(result["first_shown_rate"]), "n": int(result["n"]),
            "p_value": clean(result["p_value"])}


def empty_bias():
    return {"first_shown_rate": None, "n": 0, "p_value": None}


def _same(value, expected):
    if expected is None:
        return None
    if str(value) == str(expected):
        return True
    try:
        return float(value) == float(expected)
    except (TypeError, ValueError):
        return False


def gold_accuracy(inp, primary_question):
    """{annotator: share of their gold answers equal to the item's gold}.

    An item's gold is {question: value} or one value; one value applies to
    `primary_question` (or, when that is None, to every question of the item)."""
    mask = inp.is_gold[inp.j_item] if len(inp.j_item) else np.zeros(0, dtype=bool)
    hits, totals = {}, {}
    for row in np.flatnonzero(mask):
        gold = inp.gold[inp.j_item[row]]
        question = inp.j_question[row]
        if isinstance(gold, dict):
            expected = gold.get(question)
        elif primary_question is None or question == primary_question:
            expected = gold
        else:
            expected = None
        same = _same(inp.j_value[row], expected)
        if same is None:
            continue
        name = inp.j_annotator[row]
        totals[name] = totals.get(name, 0) + 1
        hits[name] = hits.get(name, 0) + int(same)
    return {name: hits[name] / totals[name] for name in totals}


def loo_agreement(js):
    """{annotator: agreement with the leave-one-out majority}, units = (item, question)."""
    if not len(js):
        return {}
    units = js.item * 10_000 + _codes(js.question)
    result = leave_one_out_agreement(units, js.annotator.astype(str), js.value.astype(str))
    return {str(k): clean(v) for k, v in result.items()}


def annotators_part(inp, stats_rows, primary_question, first_rates):
    """Per-annotator table: judgments (all, gold included), median seconds per item,
    gold accuracy, first-shown rate, agreement with the leave-one-out majority."""
    gold = gold_accuracy(inp, primary_question)
    loo = loo_agreement(stats_rows)
    names = np.unique(inp.j_annotator) if len(inp.j_annotator) else []
    counts = {}
    if len(inp.j_annotator):
        uniq, n = np.unique(inp.j_annotator.astype(str), return_counts=True)
        counts = dict(zip(uniq.tolist(), n.tolist()))
    seconds = _median_seconds(inp)
    out = {}
    for name in names:
        name = str(name)
        out[name] = {
            "judgments": int(counts.get(name, 0)),
            "median_seconds": clean(seconds.get(name)),
            "gold_accuracy": clean(gold.get(name)),
            "first_shown_rate": clean(first_rates.get(name)),
            "loo_agreement": clean(loo.get(name)),
        }
    return out


def _median_seconds(inp):
    """Median seconds per judged item: every question of an item carries the item's time,
    so each (item, annotator) counts once."""
    keep = ~np.isnan(inp.j_seconds)
    if not keep.any():
        return {}
    item, who, secs = inp.j_item[keep], inp.j_annotator[keep].astype(str), inp.j_seconds[keep]
    codes = _codes(who)
    key = item * (codes.max() + 1) + codes
    _, first = np.unique(key, return_index=True)
    who, secs = who[first], secs[first]
    order = np.argsort(who, kind="stable")
    who, secs = who[order], secs[order]
    names, starts = np.unique(who, return_index=True)
    bounds = list(starts[1:]) + [len(who)]
    return {str(n): float(np.median(secs[s:e])) for n, s, e in zip(names, starts, bounds)}


def value_counts(js):
    """{question: {value: count}} of non-gold judgments (for histograms)."""
    out = {}
    if not len(js):
        return out
    keys = np.char.add(np.char.add(js.question.astype(str), "\x00"), js.value.astype(str))
    uniq, counts = np.unique(keys, return_counts=True)
    for key, n in zip(uniq.tolist(), counts.tolist()):
        q, v = key.split("\x00", 1)
        out.setdefault(q, {})[v] = int(n)
    return out


def base_report(inp, questions, primary_question):
    """The keys every kind has. `questions` = [(question id, level)]."""
    report = counted_items(inp, None)
    js = Judgments.of(inp, inp.judged_non_gold())
    report["agreement"] = {q: agreement(question_rows(js, q), level) for q, level in questions}
    choice_questions = [q for q, level in questions if level == NOMINAL]
    choice_rows = js.where(np.isin(js.question, choice_questions)) if choice_questions else js.where(np.zeros(len(js), bool))
    if choice_questions:
        report["position_bias"], first_rates = position_bias_part(choice_rows)
    else:
        report["position_bias"], first_rates = empty_bias(), {}
    report["annotators"] = annotators_part(inp, js, primary_question, first_rates)
    report["value_counts"] = value_counts(js)
    return report, js
