"""aspect_pairwise report (PerSE / Per-DOC): per-aspect agreement and majority shares, and
each automatic evaluator's accuracy against every annotator's own choices (lenient and
strict), with the reviewer_prior baseline and the average over aspects."""
from collections import Counter
from typing import Any

import numpy as np

from evaluation.bootstrap import RESAMPLES, Interval, bootstrap_method
from evaluation.perdoc import accuracy_intervals
from evaluation.vocabulary import DEFAULT_ASPECT_KEYS

from .. import figures
from ..choice import units_note
from ..common import (
    NOMINAL,
    Question,
    base_report,
    clean,
    header,
    interval_keys,
    majority,
    question_rows,
    share_detail,
)
from ..inputs import Judgments, ReportInput
from ..markup import Report, figure, interval, num, table
from ..pair_units import pair_view
from ..ppi.part import SCHEMA as PPI_SCHEMA
from ..ppi.quantities import Quantity, pairwise
from ..strengths import comparisons_of, human_part, ranking_part
from ..systems import system_codes

REVIEWER_PRIOR = "reviewer_prior"
REPORT_SCHEMA = {
    "aspects": {"type": "object", "additionalProperties": {"type": "object"},
                "description": "aspect -> krippendorff_alpha, n_units, majority_share, majority_share_detail, "
                               "too_few_votes, evaluators."},
    "evaluators_average": {"type": "object", "additionalProperties": {"type": "number", "nullable": True},
                           "description": "evaluator -> mean aspect accuracy (null unless it covers every aspect)."},
    "evaluators_average_detail": {"type": "object", "description": "evaluator -> n, interval of the average."},
    **PPI_SCHEMA,
}


def aspect_keys(inp: ReportInput) -> list[str]:
    aspects = inp.config.get("aspects") or [{"key": k} for k in DEFAULT_ASPECT_KEYS]
    return [a["key"] if isinstance(a, dict) else str(a) for a in aspects]


def majority_share(labels: dict[str, Any]) -> dict[str, float]:
    """{candidate id: share of the items with a majority whose majority is that candidate}."""
    winners = [v for v in labels.values() if v is not None]
    if not winners:
        return {}
    ids, counts = np.unique(np.array(winners, dtype=str), return_counts=True)
    return {str(i): float(c / len(winners)) for i, c in zip(ids, counts)}


def shown_ids(inp: ReportInput, item: int, shown: str) -> list[str]:
    """The candidate ids of `item` in the order this annotator saw them: the judgment's
    shown_order (ties left out), or the item's order when none was recorded."""
    ids = [str(c) for c in inp.candidates[item].tolist()]
    order = [c for c in str(shown or "").split("|") if c in ids]
    return order if sorted(order) == sorted(ids) else ids


def prior_predictions(inp: ReportInput, rows: Judgments) -> dict[tuple[str, str], str]:
    """reviewer_prior's predictions as candidate ids. The baseline predicts a position as
    shown to the annotator (first or second), i.e. the candidate shown at that position to
    the same annotator in the item being predicted (statistics.md, "Per-DOC")."""
    from evaluation.perdoc import reviewer_prior

    judged, seen = [], {}
    for item, who, value, shown, time in zip(rows.item.tolist(), rows.annotator.tolist(), rows.value.tolist(),
                                             rows.shown.tolist(), rows.time.tolist()):
        order = shown_ids(inp, item, shown)
        seen[(str(inp.item_ids[item]), str(who))] = order
        position = order.index(value) if value in order else value
        judged.append((str(inp.item_ids[item]), str(who), position, time))
    out = {}
    for key, position in reviewer_prior(judged).items():
        order = seen[key]
        out[key] = order[position] if isinstance(position, int) and position < len(order) else str(position)
    return out


def evaluator_part(inp: ReportInput, js: Judgments, aspect: str) -> dict[str, dict[str, Any]]:
    """{evaluator: {"accuracy", "accuracy_strict", "n", "per_item"}} for one aspect,
    reviewer_prior included ("per_item": aspect_accuracy's, taken out by `build`)."""
    from evaluation.perdoc import aspect_accuracy

    rows = question_rows(js, aspect)
    judgments = [(str(inp.item_ids[i]), str(a), str(v)) for i, a, v in zip(rows.item, rows.annotator, rows.value)]
    pmask = (inp.p_question == aspect) & ~inp.is_gold[inp.p_item] if len(inp.p_item) else np.zeros(0, bool)
    by_evaluator: dict[str, dict[tuple[str, str], str]] = {}
    for item, evaluator, who, value in zip(inp.p_item[pmask], inp.p_evaluator[pmask], inp.p_annotator[pmask],
                                           inp.p_value[pmask]):
        by_evaluator.setdefault(str(evaluator), {})[(str(inp.item_ids[item]), str(who))] = str(value)
    by_evaluator[REVIEWER_PRIOR] = prior_predictions(inp, rows)
    out = {}
    for evaluator in sorted(by_evaluator):
        result = aspect_accuracy(judgments, by_evaluator[evaluator], per_item=True)
        out[evaluator] = {"accuracy": clean(result["accuracy"]), "accuracy_strict": clean(result["accuracy_strict"]),
                          "n": int(result["n"]), "per_item": result["per_item"]}
    return out


def accuracy_keys(aspects: dict[str, dict[str, Any]], keys: list[str]) -> dict[str, dict[str, Any]]:
    """Moves each evaluator's per-item counts out of `aspects` into interval keys of its
    accuracies (bootstrap over items) and returns evaluators_average_detail {evaluator:
    {"average", "n_aspects", "n_judgments", interval keys}}."""
    method = bootstrap_method("items", RESAMPLES)
    evaluators = sorted({e for a in aspects.values() for e in a["evaluators"]})
    detail = {}
    for e in evaluators:
        per_item = {k: aspects[k]["evaluators"][e].pop("per_item") for k in keys if e in aspects[k]["evaluators"]}
        per_aspect, average = accuracy_intervals(per_item, list(per_item))
        for k, found in per_aspect.items():
            aspects[k]["evaluators"][e].update(interval_keys(found, method))
        values = [aspects[k]["evaluators"].get(e, {}).get("accuracy") for k in keys]
        complete = keys and all(v is not None for v in values) and len(per_item) == len(keys)
        detail[e] = {"average": clean(float(np.mean(values))) if complete else None, "n_aspects": len(per_item),
                     "n_judgments": int(sum(aspects[k]["evaluators"][e]["n"] for k in per_item)),
                     **interval_keys(average if complete else Interval(None, average.n_clusters, 0, 0,
                                                                       "the evaluator misses an aspect"), method)}
    return detail


def averages(aspects: dict[str, dict[str, Any]], keys: list[str]) -> tuple[dict[str, Any], dict[str, int]]:
    """(evaluators_average, aspects_covered): the mean of an evaluator's aspect accuracies,
    None unless it has an accuracy for every aspect of the study; how many it has."""
    evaluators = sorted({e for a in aspects.values() for e in a["evaluators"]})
    average, covered = {}, {}
    for e in evaluators:
        values = [aspects[k]["evaluators"].get(e, {}).get("accuracy") for k in keys]
        present = [v for v in values if v is not None]
        covered[e] = len(present)
        average[e] = clean(float(np.mean(present))) if len(present) == len(keys) and keys else None
    return average, covered


def aspect_ranking(inp: ReportInput, rows: Judgments, systems: list[str]) -> dict[str, Any]:
    """One aspect's ranking keys (statistics.md, "System ranking"): `systems` ({id: {"human":
    ...}}), `pairwise_wins`, `ranking` (or null and `reason`), `ranking_detail`,
    `intransitivity`."""
    compared, n_unpaired = comparisons_of(inp, rows, systems)
    return {"systems": {s: {"human": row} for s, row in human_part(compared).items()},
            **ranking_part(compared, n_unpaired)}


def ppi_quantities(inp: ReportInput) -> list[Quantity]:
    """Per aspect, the Per-DOC preference of every system pair (`preference:<aspect>`: the
    share of the human choices of a over b, report/ppi/quantities.py); predictions are the
    evaluators' choices of the aspect (per annotator, averaged per item)."""
    return [q for key in aspect_keys(inp) for q in pairwise(inp, key, f"preference:{key}", metrics=False)]


PAIR_UNITS = True  # the CSV's per-item table reads (item, shown pair) units (report/pair_units.py)


def build(inp: ReportInput) -> dict[str, Any]:
    """The report; with more than two candidates per item, the aspect statistics read
    (item, shown pair) units (report/pair_units.py) and the rankings the real items."""
    real = inp
    inp = pair_view(real)
    keys = aspect_keys(inp)
    report, js = base_report(inp, [Question.single(k, NOMINAL) for k in keys], None)
    real_js = js if real is inp else Judgments.of(real, real.counted())
    if real is not inp:
        report.update(header(real))
        report["units"] = units_note(real, inp)
    aspects = {}
    names = [str(s) for s in system_codes(real)[0].tolist()]
    for key in keys:
        result = majority(question_rows(js, key), inp.item_ids, inp.value_names, inp.min_votes)
        winners = [v for v in result.labels.values() if v is not None]
        aspects[key] = {"krippendorff_alpha": report["agreement"].get(key, {}).get("krippendorff_alpha"),
                        "n_units": report["agreement"].get(key, {}).get("n_units", 0),
                        "majority_share": majority_share(result.labels),
                        "majority_share_detail": share_detail(dict(Counter(map(str, winners))), len(winners)),
                        "too_few_votes": int(result.too_few_votes),
                        "evaluators": evaluator_part(inp, js, key)}
        aspects[key].update(aspect_ranking(real, question_rows(real_js, key), names))
    detail = accuracy_keys(aspects, keys)
    report["aspects"] = aspects
    report["evaluators_average"], report["aspects_covered"] = averages(aspects, keys)
    report["evaluators_average_detail"] = detail
    report["correlations"] = {}
    return report


def html_section(r: Report, inp: ReportInput | None = None) -> str:
    """The Aspects section: agreement and majority shares per aspect, evaluator accuracies."""
    aspects = r.get("aspects", {})
    rows = []
    for key, a in aspects.items():
        detail = a.get("majority_share_detail") or {}
        shares = ", ".join(f"{c}: {num(s)} {interval(detail.get(c, {}).get('ci95'))}"
                           for c, s in a["majority_share"].items())
        first: dict[str, Any] = next(iter(detail.values()), {})
        n_major = first.get("n", 0)
        rows.append((key, a["krippendorff_alpha"], a.get("n_units"), shares, n_major))
    evaluators = sorted({e for a in aspects.values() for e in a["evaluators"]})
    average, covered = r.get("evaluators_average", {}), r.get("aspects_covered", {})
    avg_detail = r.get("evaluators_average_detail") or {}
    acc = [[e] + [aspects[k]["evaluators"].get(e, {}).get("accuracy") for k in aspects]
           + [average.get(e), interval(avg_detail.get(e, {}).get("ci95")), avg_detail.get(e, {}).get("n_judgments"),
              covered.get(e)] for e in evaluators]
    strict = [[e] + [aspects[k]["evaluators"].get(e, {}).get("accuracy_strict") for k in aspects] for e in evaluators]
    shown = [e for e in average if average[e] is not None]
    svg = figures.bars("fig-evaluators", shown, [average[e] for e in shown], "mean aspect accuracy", ylim=(0, 1),
                       reference=0.5) if shown else None
    n_judged = max((a["evaluators"].get(e, {}).get("n", 0) for a in aspects.values() for e in a["evaluators"]),
                   default=0)
    caption = (f"Mean over the {len(aspects)} aspects of each evaluator's lenient accuracy (unit = human judgment "
               f"(item, annotator, aspect), up to n = {n_judged} per aspect; its 95% interval, bootstrap over items, "
               "is in the table above). Evaluators without an "
               "accuracy for every aspect are not drawn. reviewer_prior predicts, for each annotator, the position "
               "(as shown to that annotator) of the candidate chosen in their earliest other judgment of the aspect.")
    return ('<section id="aspects"><h2>Aspects</h2>'
            + table(["aspect", "alpha", "units", "majority share [95% CI]", "items with a majority"], rows,
                    "Krippendorff's alpha (nominal) per aspect over its units, and the share of the items with a "
                    "majority won by each candidate with its Wilson interval over those items (none below 5).")
            + "<h3>Evaluator accuracy (lenient)</h3>"
            + table(["evaluator"] + list(aspects) + ["average", "average 95% CI", "judgments", "aspects covered"],
                    acc,
                    "Lenient accuracy: share of the human judgments (item, annotator, aspect) where the evaluator's "
                    "prediction for that annotator (or its prediction for everyone) equals the annotator's choice; "
                    "unparsed predictions are left out, N/A counts wrong. average: mean over the aspects, shown only "
                    "when the evaluator covers every aspect; its 95% CI: bootstrap over items (every aspect's accuracy "
                    "recomputed on the same resampled items). judgments: over all aspects.")
            + "<h3>Evaluator accuracy (strict)</h3>"
            + table(["evaluator"] + list(aspects), strict,
                    "Strict accuracy: unparsed (or missing) predictions count as wrong.")
            + figure("fig-evaluators", svg, caption) + "</section>")
