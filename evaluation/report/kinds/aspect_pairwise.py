"""aspect_pairwise report (PerSE / Per-DOC): per-aspect agreement and majority shares, and
each automatic evaluator's accuracy against every annotator's own choices (lenient and
strict), with the reviewer_prior baseline and the average over aspects."""
from typing import Any

import numpy as np

from evaluation.vocabulary import DEFAULT_ASPECT_KEYS

from .. import figures
from ..common import NOMINAL, Question, base_report, clean, majority, question_rows
from ..inputs import Judgments, ReportInput
from ..markup import Report, figure, num, table

REVIEWER_PRIOR = "reviewer_prior"
REPORT_SCHEMA = {
    "aspects": {"type": "object", "additionalProperties": {"type": "object"},
                "description": "aspect -> krippendorff_alpha, majority_share, too_few_votes, evaluators."},
    "evaluators_average": {"type": "object", "additionalProperties": {"type": "number", "nullable": True},
                           "description": "evaluator -> mean aspect accuracy (null unless it covers every aspect)."},
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
    """{evaluator: {"accuracy", "accuracy_strict", "n"}} for one aspect, reviewer_prior included."""
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
        result = aspect_accuracy(judgments, by_evaluator[evaluator])
        out[evaluator] = {"accuracy": clean(result["accuracy"]), "accuracy_strict": clean(result["accuracy_strict"]),
                          "n": int(result["n"])}
    return out


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


def build(inp: ReportInput) -> dict[str, Any]:
    keys = aspect_keys(inp)
    report, js = base_report(inp, [Question.single(k, NOMINAL) for k in keys], None)
    aspects = {}
    for key in keys:
        result = majority(question_rows(js, key), inp.item_ids, inp.value_names, inp.min_votes)
        aspects[key] = {"krippendorff_alpha": report["agreement"].get(key, {}).get("krippendorff_alpha"),
                        "majority_share": majority_share(result.labels),
                        "too_few_votes": int(result.too_few_votes),
                        "evaluators": evaluator_part(inp, js, key)}
    report["aspects"] = aspects
    report["evaluators_average"], report["aspects_covered"] = averages(aspects, keys)
    report["correlations"] = {}
    return report


def html_section(r: Report, inp: ReportInput | None = None) -> str:
    """The Aspects section: agreement and majority shares per aspect, evaluator accuracies."""
    aspects = r.get("aspects", {})
    rows = []
    for key, a in aspects.items():
        shares = ", ".join(f"{c}: {num(s)}" for c, s in a["majority_share"].items())
        rows.append((key, a["krippendorff_alpha"], shares))
    evaluators = sorted({e for a in aspects.values() for e in a["evaluators"]})
    average, covered = r.get("evaluators_average", {}), r.get("aspects_covered", {})
    acc = [[e] + [aspects[k]["evaluators"].get(e, {}).get("accuracy") for k in aspects]
           + [average.get(e), covered.get(e)] for e in evaluators]
    strict = [[e] + [aspects[k]["evaluators"].get(e, {}).get("accuracy_strict") for k in aspects] for e in evaluators]
    shown = [e for e in average if average[e] is not None]
    svg = figures.bars("fig-evaluators", shown, [average[e] for e in shown], "mean aspect accuracy", ylim=(0, 1),
                       reference=0.5) if shown else None
    n_judged = max((a["evaluators"].get(e, {}).get("n", 0) for a in aspects.values() for e in a["evaluators"]),
                   default=0)
    caption = (f"Mean over the {len(aspects)} aspects of each evaluator's lenient accuracy (unit = human judgment "
               f"(item, annotator, aspect), up to n = {n_judged} per aspect; no interval). Evaluators without an "
               "accuracy for every aspect are not drawn. reviewer_prior predicts, for each annotator, the position "
               "(as shown to that annotator) of the candidate chosen in their earliest other judgment of the aspect.")
    return ('<section id="aspects"><h2>Aspects</h2>'
            + table(["aspect", "alpha", "majority share"], rows,
                    "Krippendorff's alpha (nominal) per aspect, and the share of items with a majority won by each "
                    "candidate.")
            + "<h3>Evaluator accuracy (lenient)</h3>"
            + table(["evaluator"] + list(aspects) + ["average", "aspects covered"], acc,
                    "Lenient accuracy: share of the human judgments (item, annotator, aspect) where the evaluator's "
                    "prediction for that annotator (or its prediction for everyone) equals the annotator's choice; "
                    "unparsed predictions are left out, N/A counts wrong. average: mean over the aspects, shown only "
                    "when the evaluator covers every aspect.")
            + "<h3>Evaluator accuracy (strict)</h3>"
            + table(["evaluator"] + list(aspects), strict,
                    "Strict accuracy: unparsed (or missing) predictions count as wrong.")
            + figure("fig-evaluators", svg, caption) + "</section>")
