"""explanation_choice report: the pairwise keys for `choice` (with the ExPerT score of the
explanations as one more metric, `expert`), how often annotators chose the output with the
higher ExPerT score, and the usefulness ratings."""
import numpy as np

from .common import INTERVAL, NOMINAL, base_report, clean, question_rows
from .inputs import to_float
from .pairwise import CHOICE, TIE, choice_keys, picks_from_scores

USEFULNESS = "usefulness"
EXPERT_METRIC = "expert"


def expert_extra(inp):
    """ExPerT scores of the explanations as one more metric, `expert`."""
    return {EXPERT_METRIC: (inp.e_item, inp.e_candidate, inp.e_value)}


def higher_expert(inp):
    """Per item: the candidate with the strictly higher ExPerT score, else None."""
    pick = picks_from_scores(inp, inp.e_item, inp.e_candidate, inp.e_value)
    pick[pick == TIE] = None
    return pick


def choice_matches_expert(inp, js):
    """Share of counted choice judgments equal to the higher-ExPerT candidate, over the
    items where one candidate scores strictly higher; a `tie` answer counts as no match."""
    rows = question_rows(js, CHOICE)
    target = higher_expert(inp)[rows.item]
    known = target != None  # noqa: E711 (elementwise)
    if not known.any():
        return None
    return float(np.mean(rows.value[known] == target[known]))


def usefulness(js):
    values = to_float(question_rows(js, USEFULNESS).value)
    values = values[~np.isnan(values)]
    n = len(values)
    return {"mean": clean(values.mean()) if n else None,
            "sd": clean(values.std(ddof=1)) if n >= 2 else None,
            "n": int(n)}


def build(inp):
    report, js = base_report(inp, [(CHOICE, NOMINAL), (USEFULNESS, INTERVAL)], CHOICE)
    report.update(choice_keys(inp, js, expert_extra(inp)))
    report["choice_matches_expert"] = clean(choice_matches_expert(inp, js))
    report["usefulness"] = usefulness(js)
    return report
