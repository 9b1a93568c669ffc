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
from evaluation.alignment import WILSON, holm, wilson_ci
from evaluation.alpha_ci import RESAMPLES as ALPHA_RESAMPLES
from evaluation.alpha_ci import krippendorff_alpha_ci95
from evaluation.annotator_quality import expected_answer, same_answer
from evaluation.bootstrap import Interval, bootstrap_method, interval_refusal
from evaluation.majority import Majority, majority_codes
from evaluation.position_bias import MIN_SCREENS, annotator_test, per_annotator, position_bias, screen_votes
from evaluation.tabulate import Counts, distinct_sorted, is_missing, tabulate
from evaluation.vocabulary import TIE

from .inputs import Judgments, ReportInput, codes_of, objects, to_float

NOMINAL = "nominal"
INTERVAL = "interval"
ORDINAL = "ordinal"
ALPHA_CI_METHOD = bootstrap_method("items", ALPHA_RESAMPLES)
T_OVER_ANNOTATORS = "t interval over annotators"
POSITION_TEST = (f"one-sample t-test over annotators (those with >= {MIN_SCREENS} votes) of each annotator's share "
                 "of votes for the option shown first, against 0.5, two-sided")


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
    at the nominal level, numbers otherwise: `numeric`); missing values already dropped.
    `clusters`: each row's item when units are (item, question id), else None (units are
    items)."""

    units: np.ndarray
    coders: np.ndarray
    values: np.ndarray
    numeric: bool = False
    clusters: np.ndarray | None = None

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


def interval_keys(interval: Interval, method: str) -> dict[str, Any]:
    """A bootstrap interval as the keys beside its figure: ci95, ci_method, n_clusters,
    dropped_resamples, and ci_reason when there is no interval."""
    out = {"ci95": clean_list(interval.ci95), "ci_method": method, "n_clusters": int(interval.n_clusters),
           "dropped_resamples": int(interval.dropped)}
    if interval.ci95 is None and interval.reason:
        out["ci_reason"] = interval.reason
    return out


def wilson_keys(successes: float, n: int) -> dict[str, Any]:
    """A share's Wilson interval over n items (none below 5 items) as report keys."""
    refusal = interval_refusal(n)
    out = {"ci95": clean_list(wilson_ci(successes, n)) if refusal is None else None, "ci_method": WILSON,
           "n_clusters": int(n)}
    if refusal is not None:
        out["ci_reason"] = refusal
    return out


def share_detail(counts: dict[str, int], n: int, name: str = "share") -> dict[str, dict[str, Any]]:
    """{label: {name: count / n, "wins": count, "n": n, Wilson keys}}: shares of n items."""
    return {str(k): {name: clean(c / n) if n else None, "wins": int(c), "n": int(n), **wilson_keys(c, n)}
            for k, c in counts.items()}


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
    pooled = len(question.ids) > 1
    units = rows.item * max(len(js.question_names), 1) + rows.qcode if pooled else rows.item
    if question.level == NOMINAL:
        return Coded(units[keep], rows.coder[keep], rows.vcode[keep], clusters=rows.item[keep] if pooled else None)
    numbers = to_float(value_names)[rows.vcode] if len(rows) else np.zeros(0)
    keep &= ~np.isnan(numbers)
    return Coded(units[keep], rows.coder[keep], numbers[keep], numeric=True,
                 clusters=rows.item[keep] if pooled else None)


def agreement(data: Coded, level: str) -> dict[str, Any] | None:
    """Agreement of one question (statistics.md, "Agreement"), None for fewer than 2
    pairable units. Every statistic compares numbers at numeric levels. Rating questions
    (interval) also get alpha at the ordinal level."""
    units, coders, values, counts = data.units, data.coders, data.values, data.counts
    alpha = krippendorff_alpha(units, coders, values, level, counts=counts)
    if alpha.n_units < 2:
        return None
    ci = krippendorff_alpha_ci95(units, coders, values, level, counts=counts, clusters=data.clusters)
    kappa, kappa_units = fleiss_kappa(units, coders, values, level, counts=counts)
    result = {
        "krippendorff_alpha": clean(alpha.value),
        "level": level,
        "krippendorff_alpha_ci95": clean_list(ci.ci95),
        "ci_method": ALPHA_CI_METHOD,
        "n_clusters": int(ci.n_clusters),
        "dropped_resamples": int(ci.undefined),
        **({"ci_reason": ci.reason} if ci.ci95 is None and ci.reason else {}),
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
    """(position_bias, {coder code: {"first_shown_rate", "first_shown_p", "first_shown_p_raw",
    "n_screens"}}): one vote per screen (item, annotator) over its choice questions; the
    study-level test over annotators (statistics.md, "Clustered data"); each annotator's
    exact binomial p, Holm-adjusted over the annotators; each question on its own (its
    choices are the votes), Holm-corrected over the questions."""
    codes = [k for k, q in enumerate(js.question_names.tolist()) if q in choice_questions]
    rows = js.where(np.isin(js.qcode, codes))
    ok, first = chose_first(rows)
    width = max(n_coders, 1)
    screens = rows.item[ok].astype(np.int64) * width + rows.coder[ok]
    voted, vote_first = screen_votes(screens, first[ok])
    pooled = position_bias(vote_first)
    votes, firsts = _votes_by_coder(voted % width, vote_first, width)
    has = np.flatnonzero(votes)
    raw, adjusted = per_annotator(firsts[has], votes[has])
    per_coder = {int(c): {"first_shown_rate": clean(firsts[c] / votes[c]), "first_shown_p": clean(p_adj),
                          "first_shown_p_raw": clean(p), "n_screens": int(votes[c])}
                 for c, p, p_adj in zip(has.tolist(), raw.tolist(), adjusted.tolist())}
    per_question = {}
    for q in choice_questions:
        mask = ok & (rows.question == q)
        if mask.any():
            q_votes, q_firsts = _votes_by_coder(rows.coder[mask], first[mask], width)
            per_question[q] = {**_bias_entry(annotator_test(q_firsts, q_votes), q_firsts.sum(), q_votes.sum()),
                               "n_judgments": int(mask.sum())}
    tested = [q for q, r in per_question.items() if r["p_value"] is not None]
    for q, p in zip(tested, holm([per_question[q]["p_value"] for q in tested]) if tested else []):
        per_question[q]["p_holm"] = clean(p)
    for q in per_question:
        per_question[q].setdefault("p_holm", None)
    part = {**_bias_entry(annotator_test(firsts, votes), firsts.sum(), votes.sum()), "unit": "screen",
            "test_unit": "annotator", "min_screens": MIN_SCREENS, "n_screens_all": int(pooled["n"]),
            "per_question": per_question}
    return part, per_coder


def _votes_by_coder(coder: np.ndarray, first: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(votes, "first" votes) per coder code."""
    votes = np.bincount(coder, minlength=width)
    return votes, np.bincount(coder, weights=first.astype(float), minlength=width).astype(np.int64)


def _bias_entry(test: dict[str, Any], firsts: float, votes: float) -> dict[str, Any]:
    """A position-bias test (position_bias.annotator_test) as report keys, beside the pooled
    `first_shown_rate` (share of all `votes` that went to the option shown first; the vote
    unit is the screen, interfaces.md `unit`). `annotator_mean_rate` with `ci95` is what the
    t-test over the `n` annotators tests."""
    entry = {"first_shown_rate": clean(firsts / votes) if votes else None,
             "annotator_mean_rate": clean(test["first_shown_rate"]), "n": int(test["n"]),
             "p_value": clean(test["p_value"]), "ci95": clean_list(test["ci95"]), "ci_method": T_OVER_ANNOTATORS,
             "n_clusters": int(test["n"]), "test": POSITION_TEST, "n_screens": int(test["n_screens"])}
    if test.get("reason"):
        entry["reason"] = test["reason"]
    return entry


def empty_bias() -> dict[str, Any]:
    return {**_bias_entry(annotator_test(np.zeros(0), np.zeros(0)), 0, 0), "unit": "screen", "test_unit": "annotator",
            "min_screens": MIN_SCREENS, "n_screens_all": 0, "per_question": {}}


def gold_accuracy(inp: ReportInput, primary_question: str | None) -> dict[int, tuple[float, int]]:
    """{coder code: (share of their gold answers equal to the item's gold, gold answers
    checked)}. An item's gold is
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
    return {c: (hits[c] / totals[c], totals[c]) for c in totals}


def loo_part(data: dict[str, Coded], levels: dict[str, str]) -> dict[int, dict[str, tuple[float | None, int]]]:
    """{coder code: {question: (agreement with the others, units it rests on)}} per
    question, never pooled: choices, the share equal to the others' strict majority;
    ratings, the mean absolute difference from the others' median (statistics.md)."""
    out: dict[int, dict[str, tuple[float | None, int]]] = {}
    for name, d in data.items():
        if not len(d.units):
            continue
        if levels[name] == NOMINAL:
            values = leave_one_out_agreement(d.units, d.coders, d.values, counts=d.counts, with_n=True)
        else:
            values = leave_one_out_rating_difference(d.units, d.coders, d.values, counts=d.counts, with_n=True)
        for coder, (v, n) in values.items():
            out.setdefault(int(coder), {})[name] = (clean(v), n)
    return out


def small_ints(codes: np.ndarray) -> np.ndarray:
    """Non-negative codes as int16 where they fit: NumPy's stable sort is a radix sort there."""
    return codes.astype(np.int16) if len(codes) and codes.max() < 2**15 else codes


def median_seconds(inp: ReportInput) -> dict[int, tuple[float, int]]:
    """{coder code: (median seconds per judged item, timed items)}; every question of an
    item carries the item's time, so each (item, annotator) counts once."""
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
    return {int(coder[s]): (float(np.median(secs[s:e])), int(e - s)) for s, e in zip(starts, ends)}


def annotators_part(inp: ReportInput, primary_question: str | None, bias: dict[int, dict[str, Any]],
                    loo: dict[int, dict[str, tuple[float | None, int]]], questions: list[str]) -> dict[str, Any]:
    """Per-annotator table: judgments (all, gold included), median seconds per item (over
    `n_timed_items`), gold accuracy (over `n_gold_answers`), first-shown rate and its exact
    p, Holm-adjusted over the annotators (over `n_screens` voting screens), agreement with
    the others per question (`loo`, over `loo_n` units)."""
    gold = gold_accuracy(inp, primary_question)
    counts = np.bincount(inp.j_coder, minlength=len(inp.annotator_names))
    seconds = median_seconds(inp)
    no_bias = {"first_shown_rate": None, "first_shown_p": None, "first_shown_p_raw": None, "n_screens": 0}
    out = {}
    for c, name in enumerate(inp.annotator_names.tolist()):
        median, n_timed = seconds.get(c, (None, 0))
        accuracy, n_gold = gold.get(c, (None, 0))
        mine = loo.get(c, {})
        out[str(name)] = {
            "judgments": int(counts[c]),
            "median_seconds": clean(median), "n_timed_items": n_timed,
            "gold_accuracy": clean(accuracy), "n_gold_answers": n_gold,
            **bias.get(c, no_bias),
            "loo": {q: mine.get(q, (None, 0))[0] for q in questions},
            "loo_n": {q: mine.get(q, (None, 0))[1] for q in questions},
        }
    return out


def pairwise_kappa_part(data: Coded, level: str, annotator_names: np.ndarray,
                        min_shared: int = 10) -> list[dict[str, Any]]:
    """[{"a", "b", "kappa"}] for annotator pairs sharing >= min_shared units of one question,
    lowest kappa first so that outliers top the list (statistics.md: to spot outliers):
    unweighted for choices, quadratic-weighted for rating scales."""
    if not len(data.units):
        return []
    kappas = pairwise_cohen_kappa(data.units, data.coders, data.values, min_shared,
                                  weights=None if level == NOMINAL else "quadratic", counts=data.counts, with_n=True)
    rows = [{"a": str(annotator_names[a]), "b": str(annotator_names[b]), "kappa": clean(k), "n": n}
            for (a, b), (k, n) in kappas.items()]
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

