"""explanation_choice report: the pairwise keys for `choice` (with the ExPerT score of the
explanations as one more metric, `expert`), how often annotators chose the output with the
higher ExPerT score, and the usefulness ratings."""
from typing import Any

import numpy as np

from evaluation.vocabulary import USEFULNESS_QUESTION as USEFULNESS

from ..common import INTERVAL, NOMINAL, Question, clean, question_rows
from ..correlations import EXPERT_USEFULNESS, expert_usefulness
from ..inputs import Judgments, ReportInput, to_float
from .pairwise_alignment import CHOICE, TIE, Extra, choice_picks, choice_report, picks_from_scores
from .pairwise_alignment import REPORT_SCHEMA as PAIRWISE_SCHEMA

EXPERT_METRIC = "expert"
REPORT_SCHEMA = {
    **PAIRWISE_SCHEMA,
    "choice_matches_expert": {"type": "number", "nullable": True,
                              "description": "share of choices of the candidate with the higher ExPerT score."},
    "usefulness": {"type": "object", "description": "mean, sd, n of the usefulness ratings."},
}


def expert_extra(inp: ReportInput) -> Extra:
    """ExPerT scores of the explanations as one more metric, `expert`."""
    return {EXPERT_METRIC: (inp.e_item, inp.e_candidate, inp.e_value)}


def higher_expert(inp: ReportInput) -> np.ndarray:
    """Per item: the candidate with the strictly higher ExPerT score, else None."""
    pick = picks_from_scores(inp, inp.e_item, inp.e_candidate, inp.e_value)
    pick[pick == TIE] = None
    return pick


def choice_matches_expert(inp: ReportInput, js: Judgments) -> float | None:
    """Share of counted choice judgments equal to the higher-ExPerT candidate, over the
    items where one candidate scores strictly higher; a `tie` answer counts as no match."""
    rows = question_rows(js, CHOICE)
    target = higher_expert(inp)[rows.item]
    known = target != None  # noqa: E711 (elementwise)
    if not known.any():
        return None
    return float(np.mean(rows.value[known] == target[known]))


def usefulness(js: Judgments) -> dict[str, Any]:
    values = to_float(question_rows(js, USEFULNESS).value)
    values = values[~np.isnan(values)]
    n = len(values)
    return {"mean": clean(values.mean()) if n else None,
            "sd": clean(values.std(ddof=1)) if n >= 2 else None,
            "n": int(n)}


def table_picks(inp: ReportInput) -> dict[str, dict[tuple[str, str], Any]]:
    return choice_picks(inp, expert_extra(inp))


def build(inp: ReportInput) -> dict[str, Any]:
    questions = [Question.single(CHOICE, NOMINAL), Question.single(USEFULNESS, INTERVAL)]
    report, js = choice_report(inp, questions, expert_extra(inp))
    report["correlations"][EXPERT_USEFULNESS] = expert_usefulness(inp, js, CHOICE, USEFULNESS)
    report["choice_matches_expert"] = clean(choice_matches_expert(inp, js))
    report["usefulness"] = usefulness(js)
    return report
