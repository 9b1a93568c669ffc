"""Report parts every kind shares: counts, agreement, majority, annotators, position bias.

The statistics come from evaluation/ (agreement, majority, position_bias); this module
selects the judgment rows (gold items left out), hands them over as integer codes, and
shapes the results into the report keys of interfaces.md.
"""
import math
from collections import Counter

import numpy as np

from evaluation.agreement import (fleiss_kappa, krippendorff_alpha, leave_one_out_agreement,
                                  pairwise_cohen_kappa, percent_agreement)
from evaluation.majority import majority_labels
from evaluation.position_bias import position_bias
from evaluation.tabulate import distinct_sorted

from .inputs import Judgments, to_float

TIE = "tie"
NOMINAL = "nominal"
INTERVAL = "interval"
ORDINAL = "ordinal"


def clean(x):
    """A JSON-safe number: NaN/inf become None, NumPy scalars become Python ones."""
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return None if math.isnan(x) or math.isinf(x) else x
    return x


def header(inp):
    """The counts at the top of every report. complete_items: items (gold included) judged
    by at least `annotations_per_item` different annotators."""
    n_coders = len(inp.annotator_names)
    complete = 0
    if len(inp.j_item):
        pairs = distinct_sorted(inp.j_item * n_coders + inp.j_coder)
        per_item = np.bincount(pairs // n_coders, minlength=inp.n_items)
        complete = int(np.sum(per_item >= inp.annotations_per_item))
    return {
        "study": inp.slug,
        "kind": inp.kind,
        "n_items": int(inp.n_items),
        "n_gold_items": int(inp.is_gold.sum()),
        "n_judgments": int(len(inp.j_item)),
        "n_annotators": int(n_coders),
        "complete_items": complete,
    }


def question_rows(js, question):
    return js.of_question(question)


def agreement(js, level, value_names):
    """Agreement of one question's judgments: alpha at `level`, Fleiss, percent, n_units.
    Rating questions (interval) also get alpha at the ordinal level (statistics.md)."""
    units, coders, codes = js.item, js.coder, js.vcode
    if level == NOMINAL:
        values = codes
    else:
        numbers = to_float(value_names)[codes] if len(codes) else np.zeros(0)
        keep = ~np.isnan(numbers)
        units, coders, codes, values = units[keep], coders[keep], codes[keep], numbers[keep]
    alpha = krippendorff_alpha(units, coders, values, level)
    kappa, kappa_units = fleiss_kappa(units, coders, codes)
    result = {
        "krippendorff_alpha": clean(alpha.value),
        "level": level,
        "fleiss_kappa": clean(kappa),
        "fleiss_n_units": int(kappa_units),
        "percent_agreement": clean(percent_agreement(units, coders, codes)),
        "n_units": int(alpha.n_units),
        "n_values": int(alpha.n_values),
    }
    if alpha.value is None and alpha.reason:
        result["alpha_reason"] = alpha.reason
    if level == INTERVAL:
        result["krippendorff_alpha_ordinal"] = clean(krippendorff_alpha(units, coders, values, ORDINAL).value)
    return result


def majority(js, item_ids, value_names):
    """({item_id: majority value or None} over the items with judgments, items without one)."""
    labels = majority_labels(js.item, js.vcode)
    out = {str(item_ids[unit]): (None if code is None else str(value_names[code])) for unit, code in labels.items()}
    return out, sum(1 for v in out.values() if v is None)


def chose_first(js):
    """(mask of two-option choices with a recorded order and no tie, chose-first flags)."""
    first = np.array([s.split("|", 1)[0] for s in js.shown.tolist()], dtype=object)
    ok = (first != "") & (js.value != TIE)
    return ok, (js.value == first) & ok


def position_bias_part(js, n_coders):
    """Overall position bias (exact binomial test), and the first-shown rate per coder code."""
    ok, first = chose_first(js)
    overall = position_bias(first[ok].tolist())
    n = np.bincount(js.coder[ok], minlength=n_coders)
    k = np.bincount(js.coder[ok], weights=first[ok].astype(float), minlength=n_coders)
    rates = {c: k[c] / n[c] for c in np.flatnonzero(n).tolist()}
    return {"first_shown_rate": clean(overall["first_shown_rate"]), "n": int(overall["n"]),
            "p_value": clean(overall["p_value"])}, rates


def empty_bias():
    return {"first_shown_rate": None, "n": 0, "p_value": None}


def _same(value, expected):
    if str(value) == str(expected):
        return True
    try:
        return float(value) == float(expected)
    except (TypeError, ValueError):
        return False


def gold_accuracy(inp, primary_question):
    """{coder code: share of their gold answers equal to the item's gold}. An item's gold is
    {question: value} or one value; one value applies to `primary_question` (None: to every
    question of the item)."""
    hits, totals = Counter(), Counter()
    for row in np.flatnonzero(inp.is_gold[inp.j_item]).tolist():
        gold = inp.gold[inp.j_item[row]]
        question = inp.j_question[row]
        if isinstance(gold, dict):
            if question not in gold:
                continue
            expected = gold[question]
        elif gold is None or (primary_question is not None and question != primary_question):
            continue
        else:
            expected = gold
        coder = int(inp.j_coder[row])
        totals[coder] += 1
        hits[coder] += _same(inp.j_value[row], expected)
    return {c: hits[c] / totals[c] for c in totals}


def loo_agreement(js, n_questions):
    """{coder code: agreement with the leave-one-out majority}; units = (item, question)."""
    if not len(js):
        return {}
    units = js.item * max(len(js.question_names), 1) + js.qcode
    return leave_one_out_agreement(units, js.coder, js.vcode)


def median_seconds(inp):
    """{coder code: median seconds per judged item}; every question of an item carries the
    item's time, so each (item, annotator) counts once."""
    keep = ~np.isnan(inp.j_seconds)
    if not keep.any():
        return {}
    n_coders = len(inp.annotator_names)
    key = inp.j_item[keep] * n_coders + inp.j_coder[keep]
    _, first = np.unique(key, return_index=True)
    coder, secs = inp.j_coder[keep][first], inp.j_seconds[keep][first]
    order = np.lexsort((secs, coder))
    coder, secs = coder[order], secs[order]
    starts = np.r_[0, np.flatnonzero(np.diff(coder)) + 1]
    ends = np.r_[starts[1:], len(coder)]
    return {int(coder[s]): float(np.median(secs[s:e])) for s, e in zip(starts, ends)}


def annotators_part(inp, js, primary_question, first_rates, n_questions):
    """Per-annotator table: judgments (all, gold included), median seconds per item, gold
    accuracy, first-shown rate, agreement with the leave-one-out majority."""
    gold = gold_accuracy(inp, primary_question)
    loo = loo_agreement(js, n_questions)
    counts = np.bincount(inp.j_coder, minlength=len(inp.annotator_names))
    seconds = median_seconds(inp)
    return {
        str(name): {
            "judgments": int(counts[c]),
            "median_seconds": clean(seconds.get(c)),
            "gold_accuracy": clean(gold.get(c)),
            "first_shown_rate": clean(first_rates.get(c)),
            "loo_agreement": clean(loo.get(c)),
        }
        for c, name in enumerate(inp.annotator_names.tolist())
    }


def pairwise_kappa_part(js, annotator_names, min_shared=10):
    """[{"a", "b", "kappa"}] for annotator pairs sharing >= min_shared units of one question,
    lowest kappa first so that outliers top the list (statistics.md: to spot outliers)."""
    if not len(js):
        return []
    kappas = pairwise_cohen_kappa(js.item, js.coder, js.vcode, min_shared)
    rows = [{"a": str(annotator_names[a]), "b": str(annotator_names[b]), "kappa": clean(k)}
            for (a, b), k in kappas.items()]
    return sorted(rows, key=lambda r: (r["kappa"] is None, r["kappa"] if r["kappa"] is not None else 0.0,
                                       r["a"], r["b"]))


def value_counts(js):
    """{question: {value: count}} of counted judgments (for the histograms)."""
    out = {}
    for (q, v), n in sorted(Counter(zip(js.question.tolist(), js.value.tolist())).items()):
        out.setdefault(str(q), {})[str(v)] = int(n)
    return out


def base_report(inp, questions, primary_question):
    """(report with the keys every kind has, counted judgment rows). questions = [(id, level)]."""
    report = header(inp)
    js = Judgments.of(inp, inp.counted())
    rows = {q: question_rows(js, q) for q, _ in questions}
    report["agreement"] = {q: agreement(rows[q], level, inp.value_names) for q, level in questions}
    report["pairwise_kappa"] = {q: pairwise_kappa_part(rows[q], inp.annotator_names) for q in rows}
    choices = [q for q, level in questions if level == NOMINAL]
    if choices:
        codes = [k for k, q in enumerate(js.question_names.tolist()) if q in choices]
        report["position_bias"], first_rates = position_bias_part(js.where(np.isin(js.qcode, codes)),
                                                                  len(inp.annotator_names))
    else:
        report["position_bias"], first_rates = empty_bias(), {}
    report["annotators"] = annotators_part(inp, js, primary_question, first_rates, len(questions))
    report["value_counts"] = value_counts(js)
    return report, js
