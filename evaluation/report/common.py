"""Report parts every kind shares: counts, agreement, majority, annotators, position bias.

The statistics come from evaluation/ (agreement, alpha_ci, majority, position_bias); this
module selects the judgment rows (gold items left out), hands them over as integer codes
or numbers, and shapes the results into the report keys of interfaces.md.

An agreement *question* is a name, a level and the question ids it pools: one id for a
choice or a rating question, every pair id for the similarity survey, whose units are
then (item, pair).
"""
import math
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from evaluation.agreement import (
    fleiss_kappa,
    krippendorff_alpha,
    leave_one_out_agreement,
    leave_one_out_rating_difference,
    pairwise_cohen_kappa,
    percent_agreement,
)
from evaluation.alignment import holm
from evaluation.alpha_ci import krippendorff_alpha_ci95
from evaluation.annotator_quality import expected_answer, same_answer
from evaluation.majority import Majority, majority_codes
from evaluation.position_bias import binomial_p_half, position_bias, screen_votes
from evaluation.tabulate import Counts, distinct_sorted, is_missing, tabulate
from evaluation.vocabulary import TIE

from .inputs import Judgments, ReportInput, codes_of, objects, to_float

NOMINAL = "nominal"
INTERVAL = "interval"
ORDINAL = "ordinal"


@dataclass(frozen=True)
class Question:
    """An agreement entry: `name` in the report, `level`, and the question ids it pools."""

    name: str
    level: str
    ids: tuple[str, ...]

    @classmethod
    def single(cls, question_id: str, level: str) -> "Question":
        return cls(question_id, level, (question_id,))


@dataclass(frozen=True)
class Coded:
    """One agreement question's rows as long format: units, coders, values (value codes
    at the nominal level, numbers otherwise: `numeric`); missing values already dropped."""

    units: np.ndarray
    coders: np.ndarray
    values: np.ndarray
    numeric: bool = False

    @cached_property
    def counts(self) -> Counts:
        """The rows tabulated once, for every statistic of the question."""
        return tabulate(self.units, self.coders, self.values, numeric=self.numeric)


def clean(x: Any) -> Any:
    """A JSON-safe number: NaN/inf become None, NumPy scalars become Python ones.

    >>> clean(float("nan")), clean(np.int64(3)), clean(np.float64(0.5))
    (None, 3, 0.5)
    """
    if x is None:
        return None
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        x = float(x)
        return None if math.isnan(x) or math.isinf(x) else x
    return x


def clean_list(values: list[float] | None) -> list[float | None] | None:
    return None if values is None else [clean(v) for v in values]


def header(inp: ReportInput) -> dict[str, Any]:
    """The counts at the top of every report. complete_items: real (non-gold) items with
    `annotations_per_item` completed assignments: given by the caller, or else counted as
    real items judged by at least that many different annotators."""
    n_coders = len(inp.annotator_names)
    complete = inp.complete_items
    if complete is None:
        complete = 0
        if len(inp.j_item):
            pairs = distinct_sorted(inp.j_item * n_coders + inp.j_coder)
            per_item = np.bincount(pairs // n_coders, minlength=inp.n_items)
            complete = int(np.sum((per_item >= inp.annotations_per_item) & ~inp.is_gold))
    return {
        "study": inp.slug,
        "kind": inp.kind,
        "n_items": int(inp.n_items),
        "n_gold_items": int(inp.is_gold.sum()),
        "n_judgments": int(len(inp.j_item)),
        "n_annotators": int(n_coders),
        "complete_items": complete,
        "min_votes": int(inp.min_votes),
        "skipped": inp.skipped,
        "excluded_annotators": dict(inp.excluded_annotators or {}),
    }


def question_rows(js: Judgments, question: str) -> Judgments:
    return js.of_question(question)


def missing_codes(value_names: np.ndarray) -> np.ndarray:
    """Mask over value codes: True where the value is a missing value (statistics.md)."""
    return np.array([is_missing(v) for v in value_names.tolist()], dtype=bool)


def coded(js: Judgments, question: Question, value_names: np.ndarray) -> Coded:
    """The long format of one agreement question: units are items, or (item, question id)
    when the question pools several ids."""
    rows = js.where(np.isin(js.qcode, [k for k, q in enumerate(js.question_names.tolist()) if q in question.ids]))
    keep = ~missing_codes(value_names)[rows.vcode] if len(rows) else np.zeros(0, bool)
    units = rows.item if len(question.ids) == 1 else rows.item * max(len(js.question_names), 1) + rows.qcode
    if question.level == NOMINAL:
        return Coded(units[keep], rows.coder[keep], rows.vcode[keep])
    numbers = to_float(value_names)[rows.vcode] if len(rows) else np.zeros(0)
    keep &= ~np.isnan(numbers)
    return Coded(units[keep], rows.coder[keep], numbers[keep], numeric=True)


def agreement(data: Coded, level: str) -> dict[str, Any] | None:
    """Agreement of one question (statistics.md, "Agreement"), None for fewer than 2
    pairable units. Every statistic compares numbers at numeric levels. Rating questions
    (interval) also get alpha at the ordinal level."""
    units, coders, values, counts = data.units, data.coders, data.values, data.counts
    alpha = krippendorff_alpha(units, coders, values, level, counts=counts)
    if alpha.n_units < 2:
        return None
    ci = krippendorff_alpha_ci95(units, coders, values, level, counts=counts)
    kappa, kappa_units = fleiss_kappa(units, coders, values, level, counts=counts)
    result = {
        "krippendorff_alpha": clean(alpha.value),
        "level": level,
        "krippendorff_alpha_ci95": clean_list(ci.ci95),
        "krippendorff_alpha_ci95_undefined": int(ci.undefined),
        "fleiss_kappa": clean(kappa),
        "fleiss_n_units": int(kappa_units),
        "percent_agreement": clean(percent_agreement(units, coders, values, level, counts=counts)),
        "n_units": int(alpha.n_units),
        "n_values": int(alpha.n_values),
    }
    if alpha.value is None and alpha.reason:
        result["alpha_reason"] = alpha.reason
    if level == INTERVAL:
        result["krippendorff_alpha_ordinal"] = clean(krippendorff_alpha(units, coders, values, ORDINAL,
                                                                        counts=counts).value)
    return result


@dataclass(frozen=True)
class ItemMajority:
    """A question's majority per item index: `label` (object array over the items, None
    where there is none) and `voted` (items with a vote). Statistics compare these arrays
    instead of rebuilding arrays from {item id: label} dicts."""

    label: np.ndarray
    voted: np.ndarray
    no_majority: int
    too_few_votes: int
    votes: dict[int, int]

    def by_id(self, item_ids: np.ndarray, sort: bool = False) -> dict[str, Any]:
        """{item id: label} of the voted items, in item order, or in id order with `sort`
        (no sort when item order is id order already, as it is for imported numbered ids)."""
        has = np.flatnonzero(self.voted)
        ids = objects(list(map(str, item_ids[has].tolist())))
        out = dict(zip(ids.tolist(), self.label[has].tolist()))
        if sort and not (ids[1:] > ids[:-1]).all():
            out = dict(sorted(out.items()))
        return out


def item_majority(js: Judgments, n_items: int, value_names: np.ndarray, min_votes: int) -> ItemMajority:
    """Majority of one question's rows per item index (statistics.md, "Majority label")."""
    keep = ~missing_codes(value_names)[js.vcode] if len(js) else np.zeros(0, bool)
    result = majority_codes(js.item[keep], js.vcode[keep], min_votes)
    names = objects([str(v) for v in value_names.tolist()] + [None])  # code -1: None
    label = np.full(n_items, None, dtype=object)
    voted = np.zeros(n_items, dtype=bool)
    label[result.units] = names[np.where(result.value >= 0, result.value_labels[result.value], -1).astype(np.int64)]
    voted[result.units] = True
    return ItemMajority(label, voted, result.no_majority, result.too_few_votes, result.votes)


def majority(js: Judgments, item_ids: np.ndarray, value_names: np.ndarray, min_votes: int) -> Majority:
    """Majority of one question's rows, keyed by item id (statistics.md, "Majority label")."""
    result = item_majority(js, len(item_ids), value_names, min_votes)
    return Majority(result.by_id(item_ids), result.no_majority, result.too_few_votes, result.votes)


def majority_keys(result: ItemMajority, item_ids: np.ndarray) -> dict[str, Any]:
    """The majority keys of a choice question."""
    return {"majority": result.by_id(item_ids, sort=True), "no_majority": int(result.no_majority),
            "too_few_votes": int(result.too_few_votes),
            "majority_votes": {str(k): int(v) for k, v in result.votes.items()}}


def chose_first(js: Judgments) -> tuple[np.ndarray, np.ndarray]:
    """(mask of choices with a recorded order and no tie, chose-first flags). Values are
    compared by value code: equal strings have one code."""
    orders, code = codes_of(js.shown)  # a handful of distinct orders: split each once
    value_code = {v: k for k, v in enumerate(js.value_names.tolist())}
    first = [str(s).split("|", 1)[0] for s in orders.tolist()]
    first_code = np.array([value_code.get(f, -1) for f in first], dtype=np.int64)[code]
    recorded = np.array([f != "" for f in first], dtype=bool)[code]
    ok = recorded & (js.vcode != value_code.get(TIE, -1))
    return ok, (js.vcode == first_code) & ok


def position_bias_part(js: Judgments, choice_questions: list[str], n_coders: int
                       ) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    """(position_bias, {coder code: {"first_shown_rate", "first_shown_p"}}): one vote per
    screen (item, annotator) over its choice questions, an exact binomial test overall and
    per annotator; each question on its own with Holm-corrected p-values."""
    codes = [k for k, q in enumerate(js.question_names.tolist()) if q in choice_questions]
    rows = js.where(np.isin(js.qcode, codes))
    ok, first = chose_first(rows)
    screens = rows.item[ok].astype(np.int64) * max(n_coders, 1) + rows.coder[ok]
    voted, vote_first = screen_votes(screens, first[ok])
    overall = position_bias(vote_first)
    voter = voted % max(n_coders, 1)
    votes = np.bincount(voter, minlength=max(n_coders, 1))
    firsts = np.bincount(voter, weights=vote_first.astype(float), minlength=max(n_coders, 1)).astype(np.int64)
    has = np.flatnonzero(votes)
    p_first = binomial_p_half(firsts[has], votes[has])
    per_coder = {int(c): {"first_shown_rate": clean(firsts[c] / votes[c]), "first_shown_p": clean(p)}
                 for c, p in zip(has.tolist(), p_first.tolist())}
    per_question = {}
    for q in choice_questions:
        mask = ok & (rows.question == q)
        if mask.any():
            per_question[q] = position_bias(first[mask])
    adjusted = holm([r["p_value"] for r in per_question.values()]) if per_question else []
    for r, p in zip(per_question.values(), adjusted):
        r["p_holm"] = p
    part = {"first_shown_rate": clean(overall["first_shown_rate"]), "n": int(overall["n"]),
            "p_value": clean(overall["p_value"]), "unit": "screen",
            "per_question": {q: {k: clean(v) for k, v in r.items()} for q, r in per_question.items()}}
    return part, per_coder


def empty_bias() -> dict[str, Any]:
    return {"first_shown_rate": None, "n": 0, "p_value": None, "unit": "screen", "per_question": {}}


def gold_accuracy(inp: ReportInput, primary_question: str | None) -> dict[int, float]:
    """{coder code: share of their gold answers equal to the item's gold}. An item's gold is
    {question: value} or one value; one value applies to `primary_question` (None: to every
    question of the item). The rule is evaluation.annotator_quality's (the quality flags')."""
    hits: Counter[int] = Counter()
    totals: Counter[int] = Counter()
    rows = np.flatnonzero(inp.is_gold[inp.j_item])
    for item, question, value, coder in zip(inp.j_item[rows].tolist(), inp.j_question[rows].tolist(),
                                            inp.j_value[rows].tolist(), inp.j_coder[rows].tolist()):
        expected = expected_answer(inp.gold[item], question, primary_question)
        if expected is None:
            continue
        totals[coder] += 1
        hits[coder] += same_answer(value, expected)
    return {c: hits[c] / totals[c] for c in totals}


def loo_part(data: dict[str, Coded], levels: dict[str, str]) -> dict[int, dict[str, float | None]]:
    """{coder code: {question: agreement with the others}} per question, never pooled:
    choices, the share equal to the others' strict majority; ratings, the mean absolute
    difference from the others' median (statistics.md)."""
    out: dict[int, dict[str, float | None]] = {}
    for name, d in data.items():
        if not len(d.units):
            continue
        if levels[name] == NOMINAL:
            values = leave_one_out_agreement(d.units, d.coders, d.values, counts=d.counts)
        else:
            values = leave_one_out_rating_difference(d.units, d.coders, d.values, counts=d.counts)
        for coder, v in values.items():
            out.setdefault(int(coder), {})[name] = clean(v)
    return out


def small_ints(codes: np.ndarray) -> np.ndarray:
    """Non-negative codes as int16 where they fit: NumPy's stable sort is a radix sort there."""
    return codes.astype(np.int16) if len(codes) and codes.max() < 2**15 else codes


def median_seconds(inp: ReportInput) -> dict[int, float]:
    """{coder code: median seconds per judged item}; every question of an item carries the
    item's time, so each (item, annotator) counts once."""
    keep = ~np.isnan(inp.j_seconds)
    if not keep.any():
        return {}
    n_coders = len(inp.annotator_names)
    key = inp.j_item[keep] * n_coders + inp.j_coder[keep]
    _, first = np.unique(key, return_index=True)
    coder, secs = inp.j_coder[keep][first], inp.j_seconds[keep][first]
    order = np.argsort(small_ints(coder), kind="stable")  # a median needs groups, not sorted seconds
    coder, secs = coder[order], secs[order]
    starts = np.r_[0, np.flatnonzero(np.diff(coder)) + 1]
    ends = np.r_[starts[1:], len(coder)]
    return {int(coder[s]): float(np.median(secs[s:e])) for s, e in zip(starts, ends)}


def annotators_part(inp: ReportInput, primary_question: str | None, bias: dict[int, dict[str, Any]],
                    loo: dict[int, dict[str, float | None]], questions: list[str]) -> dict[str, Any]:
    """Per-annotator table: judgments (all, gold included), median seconds per item, gold
    accuracy, first-shown rate and its exact p (screen votes), agreement with the others
    per question (`loo`)."""
    gold = gold_accuracy(inp, primary_question)
    counts = np.bincount(inp.j_coder, minlength=len(inp.annotator_names))
    seconds = median_seconds(inp)
    no_bias = {"first_shown_rate": None, "first_shown_p": None}
    return {
        str(name): {
            "judgments": int(counts[c]),
            "median_seconds": clean(seconds.get(c)),
            "gold_accuracy": clean(gold.get(c)),
            **bias.get(c, no_bias),
            "loo": {q: loo.get(c, {}).get(q) for q in questions},
        }
        for c, name in enumerate(inp.annotator_names.tolist())
    }


def pairwise_kappa_part(data: Coded, level: str, annotator_names: np.ndarray,
                        min_shared: int = 10) -> list[dict[str, Any]]:
    """[{"a", "b", "kappa"}] for annotator pairs sharing >= min_shared units of one question,
    lowest kappa first so that outliers top the list (statistics.md: to spot outliers):
    unweighted for choices, quadratic-weighted for rating scales."""
    if not len(data.units):
        return []
    kappas = pairwise_cohen_kappa(data.units, data.coders, data.values, min_shared,
                                  weights=None if level == NOMINAL else "quadratic", counts=data.counts)
    rows = [{"a": str(annotator_names[a]), "b": str(annotator_names[b]), "kappa": clean(k)}
            for (a, b), k in kappas.items()]
    return sorted(rows, key=lambda r: (r["kappa"] is None, r["kappa"] if r["kappa"] is not None else 0.0,
                                       r["a"], r["b"]))


def value_counts(js: Judgments) -> dict[str, dict[str, int]]:
    """{question: {value: count}} of counted judgments (for the histograms)."""
    out: dict[str, dict[str, int]] = {}
    pairs, counts = np.unique(js.qcode.astype(np.int64) * max(len(js.value_names), 1) + js.vcode, return_counts=True)
    q_of, v_of = divmod(pairs, max(len(js.value_names), 1))
    rows = sorted(zip(js.question_names[q_of].tolist(), js.value_names[v_of].tolist(), counts.tolist()))
    for q, v, n in rows:
        out.setdefault(str(q), {})[str(v)] = int(n)
    return out


def base_report(inp: ReportInput, questions: list[Question], primary_question: str | None,
                js: Judgments | None = None) -> tuple[dict[str, Any], Judgments]:
    """(report with the keys every kind has, counted judgment rows; `js` if given)."""
    report = header(inp)
    js = Judgments.of(inp, inp.counted()) if js is None else js
    data = {q.name: coded(js, q, inp.value_names) for q in questions}
    levels = {q.name: q.level for q in questions}
    entries = {q.name: agreement(data[q.name], q.level) for q in questions}
    report["agreement"] = {name: e for name, e in entries.items() if e is not None}
    report["pairwise_kappa"] = {name: pairwise_kappa_part(data[name], levels[name], inp.annotator_names)
                                for name in data}
    choices = [i for q in questions if q.level == NOMINAL for i in q.ids]
    if choices:
        report["position_bias"], bias = position_bias_part(js, choices, len(inp.annotator_names))
    else:
        report["position_bias"], bias = empty_bias(), {}
    report["annotators"] = annotators_part(inp, primary_question, bias, loo_part(data, levels), list(data))
    report["value_counts"] = value_counts(js)
    return report, js

