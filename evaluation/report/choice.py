"""The report of a choice between candidates (ExPerT Table 1), which the pairwise kinds'
report modules build on: majority per item, metric alignment with Wilson intervals, McNemar
+ Holm comparisons between metrics, win rates, the systems table and strengths, and
metric-vs-human correlations at item and system level. The alignment study's report is
`build` on its `choice` question; the explanation and aspect studies add their own parts."""
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from evaluation.alignment import TIE, alignment_of, compare_marks, decided, marks, win_rate_of
from evaluation.vocabulary import CHOICE_QUESTION as CHOICE
from evaluation.vocabulary import LOWER_IS_BETTER, RANKED

from .allocation import allocation_part
from .common import (
    NOMINAL,
    Question,
    base_report,
    clean,
    clean_list,
    header,
    item_majority,
    majority_keys,
    question_rows,
    share_detail,
)
from .correlations import item_correlations, system_correlations_of_slots, system_correlations_part
from .coverage import item_picks, metric_coverage, report_warnings
from .inputs import Judgments, ReportInput, codes_of
from .ip_probe import ip_probe_keys
from .merged import credit_merged, identical_outputs, merged_wins, with_merged
from .pair_units import pair_view
from .ppi.part import SCHEMA as PPI_SCHEMA
from .ppi.quantities import Quantity, pairwise
from .strengths import compared_slots, comparisons_and_rows, correlations_ranking, human_part, ranking_part
from .systems import system_codes, system_wins, systems_table

MISSING_PICKS = ("", "N/A")
MCNEMAR = ("exact McNemar test over the items both metrics pick on (discordant items a_only, b_only); p_holm: Holm "
           "over all metric pairs")
# {metric: (item index, candidate id, value)}: scores from outside the item (ExPerT).
Extra = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
# The Extra of an input (its units or its items).
ExtraOf = Callable[[ReportInput], Extra]
# {metric: (score of each item's first candidate, of its second)}; NaN = no score.
Scores = dict[str, tuple[np.ndarray, np.ndarray]]
# The report keys of the pairwise kinds (the API schema; interfaces.md).
REPORT_SCHEMA = {
    "majority": {"type": "object", "additionalProperties": {"type": "string", "nullable": True},
                 "description": "item id -> majority candidate id (null: none)."},
    "alignment": {"type": "object", "additionalProperties": {"type": "object"},
                  "description": "per metric/evaluator: alignment, alignment_strict, agree, ties, n, ci95, "
                                 "ci95_strict."},
    "win_rate": {"type": "object", "additionalProperties": {"type": "number"},
                 "description": "candidate id -> share of the items with a majority won by it."},
    "win_rate_detail": {"type": "object", "description": "candidate id -> wins, n, Wilson interval."},
    "systems": {"type": "object", "additionalProperties": {"type": "object"},
                "description": "system id -> n_items, metrics (mean, ci95 on the items of its human row), wins, "
                               "decided, win_rate, human (n, wins, ties, win_rate, ci95: judgment level)."},
    "pairwise_wins": {"type": "object", "additionalProperties": {"type": "object"},
                      "description": "a -> b -> times a beat b (ties 0.5); n per pair in pairwise_n."},
    "pairwise_n": {"type": "object", "additionalProperties": {"type": "object"},
                   "description": "a -> b -> comparisons of a with b."},
    RANKED: {"type": "object", "nullable": True, "additionalProperties": {"type": "object"},
                "description": "system id -> strength (Bradley-Terry, log, mean 0), ci95, rank, rank_ci95 "
                               "(bootstrap over items); null with `reason` when the strengths are not defined."},
    "reason": {"type": "string", "description": "why the strengths are null."},
    "ranking_detail": {"type": "object", "description": "model, n_comparisons, n_clusters, resamples, seed, "
                                                        "dropped_resamples, ci_method, n_unpaired."},
    "intransitivity": {"type": "object", "description": "circular_triads, zeta (Kendall-Babington Smith), "
                                                        "n_systems, cycles, undecided_pairs."},
    "correlations_ranking": {"type": "object", "description": "metric -> Kendall tau-b (and Pearson, Spearman) "
                                                              "of its system means against the strengths."},
    "units": {"type": "object", "description": "present when items hold more than two candidates: the "
                                               "(item, shown pair) units of the unit-level sections."},
    "identical_outputs": {"type": "object", "description": "present when a candidate stands for several systems "
                                                           "(identical outputs merged): n_items, pairs, per_pair "
                                                           "('a|b' -> items), note."},
    "allocation": {"type": "object", "description": "pair allocation (docs/adaptive-allocation.md): policy, "
                                                    "min_per_pair, pairs [{a, b, shown, n}], n_shown, n, win_rates "
                                                    "(inverse-probability weighted in an adaptive study), "
                                                    "weighting_reason?, stop? {target, met, detail}."},
    **PPI_SCHEMA,
}


def score_rows(inp: ReportInput) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Long-format metric scores (item, metric, candidate, value): ReportInput's score table
    (the score rows of the predictions; a later row wins a repeat). Non-finite (+-inf)
    values are dropped: a score that is not a finite number is no score, for picks,
    correlations and system means alike (coverage counts them in `n_nonfinite`)."""
    keep = np.isfinite(inp.s_value)
    if keep.all():  # else no copy of the score rows
        return inp.s_item, inp.s_metric, inp.s_candidate, inp.s_value
    return inp.s_item[keep], inp.s_metric[keep], inp.s_candidate[keep], inp.s_value[keep]


def candidate_scores(inp: ReportInput, item: np.ndarray, candidate: np.ndarray,
                     value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(score of each item's first candidate, of its second): NaN where missing, not finite
    and on gold items; later rows overwrite earlier ones."""
    value = np.where(np.isfinite(value), value, np.nan)
    first = np.full(inp.n_items, np.nan)
    second = np.full(inp.n_items, np.nan)
    on_first = candidate == inp.candidates[item, 0]
    on_second = candidate == inp.candidates[item, 1]
    first[item[on_first]] = value[on_first]
    second[item[on_second]] = value[on_second]
    first[inp.is_gold] = np.nan
    second[inp.is_gold] = np.nan
    return first, second


def slot_scores(inp: ReportInput, scores: Scores, extra: Extra | None = None) -> dict[str, np.ndarray]:
    """{metric: (n_items, width) score of each candidate slot}, NaN where missing, not finite
    and on gold items (later rows win): columns 0 and 1 are `scores` (metric_scores'
    first and second), the others (items with more than two candidates) are read the same
    way from the score rows."""
    width = inp.candidates.shape[1]
    result = {name: np.stack([first, second], axis=1) for name, (first, second) in scores.items()}
    if width <= 2:
        return result
    rows = {name: (item[mask], candidate[mask], value[mask]) for name, item, candidate, value, mask in
            _by_metric(*score_rows(inp))}
    for name, source in (extra or {}).items():
        rows.setdefault(name, source)
    for name in result:
        item, candidate, value = rows[name]
        value = np.where(np.isfinite(value), value, np.nan)
        more = np.full((inp.n_items, width - 2), np.nan)
        for k in range(2, width):
            on = candidate == inp.candidates[item, k]
            more[item[on], k - 2] = value[on]
        more[inp.is_gold] = np.nan
        result[name] = np.concatenate([result[name], more], axis=1)
    return result


def _by_metric(item: np.ndarray, metric: np.ndarray, candidate: np.ndarray, value: np.ndarray
               ) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    names, code = codes_of(metric)
    return [(str(name), item, candidate, value, code == k) for k, name in enumerate(names.tolist())]


def picks_of(inp: ReportInput, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Per item: the candidate with the higher score, "tie" on equal scores, None where a
    candidate has no score (the rule of statistics.md; vectorized over items)."""
    pick = np.where(first > second, inp.candidates[:, 0], np.where(second > first, inp.candidates[:, 1], TIE))
    pick = pick.astype(object)
    pick[np.isnan(first) | np.isnan(second)] = None
    return pick


def picks_from_scores(inp: ReportInput, item: np.ndarray, candidate: np.ndarray, value: np.ndarray) -> np.ndarray:
    return picks_of(inp, *candidate_scores(inp, item, candidate, value))


def metric_scores(inp: ReportInput, extra: Extra | None = None) -> Scores:
    """Scores of every metric present: items' metric_scores, score predictions, and `extra`
    (a metric there is used only if no score row has its name)."""
    item, metric, candidate, value = score_rows(inp)
    out: Scores = {}
    names, code = codes_of(metric)
    for k, name in enumerate(names.tolist()):
        mask = code == k
        out[str(name)] = candidate_scores(inp, item[mask], candidate[mask], value[mask])
    for name, (e_item, e_candidate, e_value) in (extra or {}).items():
        if name not in out and len(e_item):
            out[name] = candidate_scores(inp, e_item, e_candidate, e_value)
    return out


def oriented(scores: Scores) -> Scores:
    """`scores` with the lower-is-better metrics (LaMP-3's errors) negated, so that every
    pick, alignment and correlation reads a higher score as the better output."""
    return {name: ((-first, -second) if name in LOWER_IS_BETTER else (first, second))
            for name, (first, second) in scores.items()}


def pick_arrays(inp: ReportInput, extra: Extra | None = None,
                scores: Scores | None = None) -> dict[str, np.ndarray]:
    """{metric: pick per item index, None where there is none} for every metric with a pick
    on a non-gold item: picks from scores, then non-personalized predicted choices (`N/A`
    and unparsed left out; a later row wins). Arrays, so the statistics need no dicts."""
    out: dict[str, np.ndarray] = {}
    for name, (first, second) in oriented(scores if scores is not None else metric_scores(inp, extra)).items():
        pick = picks_of(inp, first, second)
        if (pick != None).any():  # noqa: E711 (elementwise)
            out[name] = pick
    chosen = ((inp.p_question == CHOICE) & (inp.p_annotator == "") & ~np.isin(inp.p_value, MISSING_PICKS)
              & ~inp.is_gold[inp.p_item])
    for name in sorted(set(inp.p_evaluator[chosen].tolist())):  # not np.unique: it sorts every row
        mask = chosen & (inp.p_evaluator == name)
        out.setdefault(str(name), np.full(inp.n_items, None, dtype=object))[inp.p_item[mask]] = inp.p_value[mask]
    return {name: out[name] for name in sorted(out)}


def metric_picks(inp: ReportInput, extra: Extra | None = None,
                 scores: Scores | None = None) -> dict[str, dict[str, Any]]:
    """{metric: {item_id: pick}}: `pick_arrays` keyed by item id (the CSV table)."""
    out = {}
    for name, pick in pick_arrays(inp, extra, scores).items():
        has = np.flatnonzero(pick != None)  # noqa: E711 (elementwise)
        out[name] = dict(zip(inp.item_ids[has].tolist(), pick[has].tolist()))
    return out


def alignment_entry(result: dict[str, Any]) -> dict[str, Any]:
    return {"alignment": clean(result["alignment"]), "alignment_strict": clean(result["alignment_strict"]),
            "agree": int(result["agree"]), "ties": int(result["ties"]), "n": int(result["n"]),
            "ci95": clean_list(result["ci95"]), "ci95_strict": clean_list(result["ci95_strict"]),
            **{k: result[k] for k in ("ci_method", "n_clusters", "ci_reason") if k in result}}


def choice_report(inp: ReportInput, questions: list[Question], extra_of: ExtraOf | None = None
                  ) -> tuple[dict[str, Any], Judgments, ReportInput]:
    """(base_report plus the pairwise keys of `choice`, counted judgment rows, the input they
    index: `inp`, or its (item, shown pair) units when an item has more than two candidates
    (report/pair_units.py; the header, the per-system table and the strengths stay on the
    real items)). `extra_of`: the metrics from outside the items (ExPerT) of an input. The
    item correlations' bootstraps (compiled, without the GIL) start first, on a thread, and
    run beside everything else."""
    view = pair_view(inp)
    js = Judgments.of(view, view.counted())
    scores = metric_scores(view, extra_of(view) if extra_of else None)
    with ThreadPoolExecutor(max_workers=1) as pool:
        correlations = pool.submit(item_correlations, view, question_rows(js, CHOICE), oriented(scores))
        report, _ = base_report(view, questions, CHOICE, js)
        report.update(choice_keys(view, js, scores, correlations, inp, extra_of))
    if view is not inp:
        report.update(header(inp))
        report["units"] = units_note(inp, view)
    return report, js, view


def units_note(inp: ReportInput, view: ReportInput) -> dict[str, Any]:
    """What the unit-level sections count when items hold more than two candidates."""
    return {"unit": "(item, shown pair)", "n_units": int(view.n_items), "n_items": int(inp.n_items),
            "n_unpaired_judgments": int(getattr(view, "n_unpaired_rows", 0)),
            "note": ("items hold more than two candidates: majority, alignment, metric picks, item-level "
                     "correlations, agreement and annotator statistics read each (item, shown pair) as a unit; "
                     "the per-system table and the strengths read the judgments and resample the items; coverage "
                     "counts items (every candidate scored), as the score job does")}


def choice_keys(inp: ReportInput, js: Judgments, scores: Scores, correlations: Future[dict[str, Any]],
                real: ReportInput | None = None, extra_of: ExtraOf | None = None) -> dict[str, Any]:
    """The pairwise keys of interfaces.md for the `choice` question; the item correlations
    come from `correlations`. `inp`/`js`/`scores`: the units (pair_view); `real`: the
    study's items when they differ (the per-system table and the strengths)."""
    real = inp if real is None else real
    rows = question_rows(js, CHOICE)
    result = item_majority(rows, inp.n_items, inp.value_names, inp.min_votes)
    labels = result.label
    picks = pick_arrays(inp, scores=scores)
    has_majority = decided(labels)
    by_metric = {metric: marks(labels, pick, has_majority) for metric, pick in picks.items()}
    alignment = {metric: alignment_entry(alignment_of(m)) for metric, m in by_metric.items()}
    comparisons = [{"a": c["a"], "b": c["b"], "p_value": clean(c["p_value"]), "p_holm": clean(c["p_holm"]),
                    "n": c["n"], "a_only": c["a_only"], "b_only": c["b_only"], "test": MCNEMAR, "n_clusters": c["n"]}
                   for c in compare_marks(by_metric)] if len(picks) >= 2 else []
    coverage = metric_coverage(inp, picks) if real is inp else metric_coverage(real, item_picks(real, inp, picks))
    wins = merged_wins(inp, labels, system_wins(inp, labels), real)
    every = with_merged(real)  # merged candidates: each system they stand for as its own (report/merged.py)
    names = [str(s) for s in system_codes(every)[0].tolist()]
    real_rows = rows if real is inp else question_rows(Judgments.of(real, real.counted()), CHOICE)
    raw, n_unpaired, kept = comparisons_and_rows(real, real_rows, names)
    compared = credit_merged(raw, real)
    same_items = compared_slots(every, compared) if len(compared) else None
    real_extra = extra_of(every) if extra_of else None
    real_scores = scores if every is inp else metric_scores(every, real_extra)
    slots = slot_scores(every, real_scores, real_extra)
    systems_keys = systems_table(every, wins, slots, same_items)
    for system, human in human_part(compared).items():
        systems_keys[system]["human"] = human
    ranked = ranking_part(compared, n_unpaired)
    allocation = (allocation_part(real, real_rows, kept, raw, compared, systems_keys, ranked[RANKED])
                  if real.allocation else None)
    if every is inp:
        systems = system_correlations_part(inp, list(systems_keys), wins, oriented(scores))
    else:  # items of more than two candidates: every slot of the real items, vectorized
        signed = {m: -v if m in LOWER_IS_BETTER else v for m, v in slots.items()}
        systems = system_correlations_of_slots(every, list(systems_keys), wins, signed)
    keys = {
        **majority_keys(result, inp.item_ids),
        "tie_majority": int(np.count_nonzero(labels == TIE)),
        "alignment": alignment,
        "metric_comparisons": comparisons,
        "win_rate": {str(k): clean(v) for k, v in sorted(win_rate_of(labels).items())},
        "win_rate_detail": share_detail(wins[0], int(np.count_nonzero(has_majority)), "win_rate"),
        "correlations": correlations.result(),
        "coverage": coverage,
        "warnings": report_warnings(alignment, coverage),
        "systems": systems_keys,
        **ranked,
        "correlations_ranking": correlations_ranking(
            ranked[RANKED], {m: {s: v["metrics"][m]["mean"] for s, v in systems_keys.items() if m in v["metrics"]}
                                for m in slots}),
    }
    if allocation is not None:
        keys["allocation"] = allocation
    if systems is not None:
        keys["correlations_system"] = systems
    if real.merged:
        keys["identical_outputs"] = identical_outputs(real)
    keys.update(ip_probe_keys(inp, labels))  # a study of implicit-personalization probe answers
    return keys


def build(inp: ReportInput) -> dict[str, Any]:
    """The report of one `choice` question (the alignment study's)."""
    return choice_report(inp, [Question.single(CHOICE, NOMINAL)])[0]


def choice_picks(inp: ReportInput, extra: Extra | None = None) -> dict[str, dict[tuple[str, str], Any]]:
    """The per-item CSV table's picks: each metric's pick of the `choice` question."""
    return {m: {(item_id, CHOICE): p for item_id, p in by.items()} for m, by in metric_picks(inp, extra).items()}


def table_picks(inp: ReportInput) -> dict[str, dict[tuple[str, str], Any]]:
    return choice_picks(inp)


def ppi_quantities(inp: ReportInput) -> list[Quantity]:
    """The win rate of every system pair (report/ppi/quantities.py)."""
    return pairwise(inp, CHOICE)
