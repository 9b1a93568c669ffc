"""explanation_choice report: the pairwise keys for `choice` (with the ExPerT score of the
explanations as one more metric, `expert`), how often annotators chose the output with the
higher ExPerT score, and the usefulness ratings."""
from typing import Any

import numpy as np

from evaluation.bootstrap import RESAMPLES, bootstrap_method, clustered_mean
from evaluation.vocabulary import USEFULNESS_QUESTION as USEFULNESS

from ..choice import CHOICE, TIE, Extra, choice_picks, choice_report, picks_from_scores
from ..choice import REPORT_SCHEMA as PAIRWISE_SCHEMA
from ..common import INTERVAL, NOMINAL, Question, clean, interval_keys, question_rows
from ..correlations import EXPERT_USEFULNESS, expert_usefulness
from ..inputs import Judgments, ReportInput, to_float
from ..pair_units import clusters_of
from ..ppi.quantities import Quantity, pairwise

EXPERT_METRIC = "expert"
REPORT_SCHEMA = {
    **PAIRWISE_SCHEMA,
    "choice_matches_expert": {"type": "number", "nullable": True,
                              "description": "share of choices of the candidate with the higher ExPerT score."},
    "choice_matches_expert_detail": {"type": "object", "description": "n, n_items, interval of that share."},
    "usefulness": {"type": "object", "description": "mean, sd, n, n_items and interval of the usefulness ratings."},
}


def expert_extra(inp: ReportInput) -> Extra:
    """ExPerT scores of the explanations as one more metric, `expert`."""
    return {EXPERT_METRIC: (inp.e_item, inp.e_candidate, inp.e_value)}


def higher_expert(inp: ReportInput) -> np.ndarray:
    """Per item: the candidate with the strictly higher ExPerT score, else None."""
    pick = picks_from_scores(inp, inp.e_item, inp.e_candidate, inp.e_value)
    pick[pick == TIE] = None
    return pick


def choice_matches_expert(inp: ReportInput, js: Judgments) -> dict[str, Any]:
    """Share of counted choice judgments equal to the higher-ExPerT candidate, over the
    items where one candidate scores strictly higher; a `tie` answer counts as no match.
    {"share", "n" (judgments), "n_items", interval keys}: the judgments cluster in items,
    so the interval resamples items."""
    rows = question_rows(js, CHOICE)
    target = higher_expert(inp)[rows.item]
    known = target != None  # noqa: E711 (elementwise)
    items = clusters_of(inp, rows.item[known])
    share, interval = clustered_mean((rows.value[known] == target[known]).astype(float), items)
    return {"share": clean(share), "n": int(known.sum()), "n_items": int(len(np.unique(items))),
            **interval_keys(interval, bootstrap_method("items", RESAMPLES))}


def usefulness(js: Judgments, inp: ReportInput | None = None) -> dict[str, Any]:
    """{"mean", "sd", "n" (ratings), "n_items", interval keys of the mean (over items; `inp`:
    the input `js` indexes, whose units may be (item, pair))}."""
    rows = question_rows(js, USEFULNESS)
    values = to_float(rows.value)
    keep = ~np.isnan(values)
    values, items = values[keep], rows.item[keep]
    if inp is not None:
        items = clusters_of(inp, items)
    n = len(values)
    mean, interval = clustered_mean(values, items)
    return {"mean": clean(mean), "sd": clean(values.std(ddof=1)) if n >= 2 else None, "n": int(n),
            "n_items": int(len(np.unique(items))), **interval_keys(interval, bootstrap_method("items", RESAMPLES))}


PAIR_UNITS = True  # the CSV's per-item table reads (item, shown pair) units (report/pair_units.py)


def table_picks(inp: ReportInput) -> dict[str, dict[tuple[str, str], Any]]:
    return choice_picks(inp, expert_extra(inp))


def ppi_quantities(inp: ReportInput) -> list[Quantity]:
    """The win rate of every system pair; the ExPerT score is one more metric."""
    return pairwise(inp, CHOICE, extra=expert_extra(inp))


def build(inp: ReportInput) -> dict[str, Any]:
    questions = [Question.single(CHOICE, NOMINAL), Question.single(USEFULNESS, INTERVAL)]
    report, js, view = choice_report(inp, questions, expert_extra)
    report["correlations"][EXPERT_USEFULNESS] = expert_usefulness(view, js, CHOICE, USEFULNESS)
    matches = choice_matches_expert(view, js)
    report["choice_matches_expert"] = matches["share"]
    report["choice_matches_expert_detail"] = matches
    report["usefulness"] = usefulness(js, view)
    return report
