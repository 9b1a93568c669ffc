"""aspect_pairwise report (PerSE / Per-DOC): per-aspect agreement and majority shares, and
each automatic evaluator's accuracy against every annotator's own choices (lenient and
strict), with the reviewer_prior baseline and the average over aspects."""
import numpy as np

from .common import NOMINAL, base_report, clean, majority, question_rows

REVIEWER_PRIOR = "reviewer_prior"


def aspect_keys(inp):
    aspects = inp.config.get("aspects") or [{"key": k} for k in
                                            ("interestingness", "adaptability", "surprise", "character", "ending")]
    return [a["key"] if isinstance(a, dict) else str(a) for a in aspects]


def majority_share(labels):
    """{candidate id: share of the items with a majority whose majority is that candidate}."""
    winners = [v for v in labels.values() if v is not None]
    if not winners:
        return {}
    ids, counts = np.unique(np.array(winners, dtype=str), return_counts=True)
    return {str(i): float(c / len(winners)) for i, c in zip(ids, counts)}


def prior_predictions(inp, rows):
    """reviewer_prior's predictions as candidate ids: the baseline predicts a position,
    which is the candidate at that position in the item being predicted."""
    from evaluation.perdoc import reviewer_prior

    index_of = {str(item_id): i for i, item_id in enumerate(inp.item_ids)}
    judged = []
    for item, who, value, time in zip(rows.item.tolist(), rows.annotator.tolist(), rows.value.tolist(),
                                      rows.time.tolist()):
        ids = inp.candidates[item].tolist()
        position = ids.index(value) if value in ids else value
        judged.append((str(inp.item_ids[item]), str(who), position, time))
    out = {}
    for (item_id, who), position in reviewer_prior(judged).items():
        ids = inp.candidates[index_of[item_id]].tolist()
        out[(item_id, who)] = ids[position] if isinstance(position, int) and position < len(ids) else position
    return out


def evaluator_part(inp, js, aspect):
    """{evaluator: {"accuracy", "accuracy_strict", "n"}} for one aspect, reviewer_prior included."""
    from evaluation.perdoc import aspect_accuracy

    rows = question_rows(js, aspect)
    judgments = [(str(inp.item_ids[i]), str(a), str(v)) for i, a, v in zip(rows.item, rows.annotator, rows.value)]
    pmask = (inp.p_question == aspect) & ~inp.is_gold[inp.p_item] if len(inp.p_item) else np.zeros(0, bool)
    by_evaluator = {}
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


def build(inp):
    keys = aspect_keys(inp)
    report, js = base_report(inp, [(k, NOMINAL) for k in keys], None)
    aspects = {}
    for key in keys:
        labels, _ = majority(question_rows(js, key), inp.item_ids, inp.value_names)
        aspects[key] = {"krippendorff_alpha": report["agreement"][key]["krippendorff_alpha"],
                        "majority_share": majority_share(labels),
                        "evaluators": evaluator_part(inp, js, key)}
    evaluators = sorted({e for a in aspects.values() for e in a["evaluators"]})
    average = {}
    for e in evaluators:
        values = [aspects[k]["evaluators"].get(e, {}).get("accuracy") for k in keys]
        values = [v for v in values if v is not None]
        average[e] = clean(float(np.mean(values))) if values else None
    report["aspects"] = aspects
    report["evaluators_average"] = average
    return report
