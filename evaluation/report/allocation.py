"""The report's `allocation` key and, in an adaptive study, its inverse-probability-weighted
win rates (statistics.md, "Adaptive allocation"; interfaces.md: policy, `min_per_pair`,
the pairs' shown counts).

`ReportInput.allocation` (annotate/reports/data.py) carries the study's policy, its
`min_per_pair`, the assignments that showed each system pair ({"a|b": n}, names sorted) and,
in an adaptive study, the probability each (item, annotator)'s pair was drawn with.
In an adaptive study each system's `human` row is the Hajek-weighted win rate
(evaluation.allocation.adaptive.ipw_win_rates: a judgment weighs 1 / its pair's
probability; interval: item bootstrap, weights fixed), labelled "inverse-probability
weighted" in `weighting` and `ci_method`, with the plain one kept as `unweighted_*`; the
Bradley-Terry ranking stays the unweighted MLE. When a judgment has no recorded probability
(e.g. imported judgments) nothing is weighted and `weighting_reason` says why.
"""
from typing import Any

import numpy as np

from evaluation.ranking import Comparisons

from .common import clean, clean_list
from .inputs import Judgments, ReportInput
from .merged import credit_merged

WEIGHTED = "inverse-probability weighted"
ADAPTIVE = "adaptive"


def comparison_probability(inp: ReportInput, rows: Judgments, kept: np.ndarray, raw: Comparisons) -> np.ndarray:
    """The probability of each comparison of credit_merged(raw) (NaN: not recorded): the
    recorded probability of the (item, annotator) whose judgment it is; a merged copy takes
    its source's (credit_merged repeats rows, so it is run on the row numbers)."""
    table = (inp.allocation or {}).get("probability") or {}
    p = np.array([table.get((int(i), str(a)), np.nan) for i, a in zip(rows.item[kept].tolist(),
                                                                       rows.annotator[kept].tolist())], dtype=float)
    numbered = Comparisons(raw.systems, raw.item, raw.first, raw.second, np.arange(len(raw), dtype=float))
    return p[credit_merged(numbered, inp).credit.astype(np.int64)] if len(raw) else p


def weight_human_rows(systems: dict[str, Any], compared: Comparisons, probability: np.ndarray) -> dict[str, Any]:
    """Replaces each system's `human` win rate by the inverse-probability-weighted one (module
    docstring); returns the `allocation` key's {"win_rates", "weighting_reason"?}."""
    from evaluation.allocation.adaptive import ipw_win_rates

    missing = int(np.count_nonzero(~((probability > 0) & (probability <= 1))))
    if missing:
        return {"win_rates": "unweighted",
                "weighting_reason": f"{missing} of {len(probability)} judgments have no recorded probability "
                                    "(not served by the adaptive engine), so the win rates are not weighted"}
    if not len(compared):
        return {"win_rates": WEIGHTED}
    for system, row in zip(compared.systems, ipw_win_rates(compared, probability)):
        human = (systems.get(system) or {}).get("human")
        if human is None:
            continue
        human.update(unweighted_win_rate=human["win_rate"], unweighted_ci95=human["ci95"],
                     unweighted_ci_method=human["ci_method"], weighting=WEIGHTED, weighting_note=row["note"],
                     win_rate=clean(row["win_rate"]), ci95=clean_list(row["ci95"]),
                     ci_method=f"{WEIGHTED} (Hajek) win rate; {row['ci_method']}")
        human.pop("ci_reason", None)
        if row.get("ci_reason"):
            human["ci_reason"] = row["ci_reason"]
    return {"win_rates": WEIGHTED}


def allocation_key(inp: ReportInput, raw: Comparisons) -> dict[str, Any]:
    """{"policy", "min_per_pair", "pairs": [{"a", "b", "shown", "n"}], "n_shown", "n"}: each
    system pair's assignments (`shown`) and judgments that compared it (`n`)."""
    info = inp.allocation or {}
    judged: dict[str, int] = {}
    for i, j in zip(raw.first.tolist(), raw.second.tolist()):
        a, b = sorted((raw.systems[i], raw.systems[j]))
        judged[f"{a}|{b}"] = judged.get(f"{a}|{b}", 0) + 1
    shown = info.get("shown") or {}
    pairs = [{"a": key.split("|", 1)[0], "b": key.split("|", 1)[1], "shown": int(shown.get(key, 0)),
              "n": judged.get(key, 0)} for key in sorted(set(shown) | set(judged))]
    return {"policy": info.get("policy"), "min_per_pair": info.get("min_per_pair"), "pairs": pairs,
            "n_shown": sum(p["shown"] for p in pairs), "n": sum(p["n"] for p in pairs),
            "win_rates": "unweighted"}


def allocation_part(inp: ReportInput, rows: Judgments, kept: np.ndarray, raw: Comparisons,
                    compared: Comparisons, systems: dict[str, Any]) -> dict[str, Any]:
    """The `allocation` key; in an adaptive study the `human` rows of `systems` weighted."""
    key = allocation_key(inp, raw)
    if key["policy"] == ADAPTIVE:
        key.update(weight_human_rows(systems, compared, comparison_probability(inp, rows, kept, raw)))
    return key
