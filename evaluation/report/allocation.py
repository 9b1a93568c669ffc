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
Bradley-Terry strengths stays the unweighted MLE. When a judgment has no recorded probability
(e.g. imported judgments) nothing is weighted and `weighting_reason` says why.

The stopping guide (header `stop_when`, annotate/studies/allocation.py) is `allocation.stop`:
{"target", "met", "detail"} from the strengths' rank intervals (bootstrap over items):
"top_separated" is met when the top system's rank interval is [1, 1] (it excludes rank 2);
{"separated": [a, b]} when the two systems' rank intervals do not overlap. The dashboard
and the HTML report show it in the "Allocation and stopping" section with the judgments per
pair and the current rank intervals.
"""
from typing import Any

import numpy as np

from evaluation.bradley_terry import Comparisons
from evaluation.vocabulary import RANKED

from .common import clean, clean_list
from .inputs import Judgments, ReportInput
from .markup import Report, num, table
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
                    compared: Comparisons, systems: dict[str, Any], ranked: dict[str, Any] | None) -> dict[str, Any]:
    """The `allocation` key; in an adaptive study the `human` rows of `systems` weighted;
    `ranked`: the report's strengths (vocabulary.RANKED; their rank intervals decide the stopping target)."""
    key = allocation_key(inp, raw)
    if key["policy"] == ADAPTIVE:
        key.update(weight_human_rows(systems, compared, comparison_probability(inp, rows, kept, raw)))
    if inp.config.get("stop_when"):
        key["stop"] = stop_status(inp.config["stop_when"], ranked)
    return key


def _interval(entry: dict[str, Any] | None) -> list[int] | None:
    return (entry or {}).get("rank_ci95")


def stop_status(stop_when: Any, ranked: dict[str, Any] | None) -> dict[str, Any]:
    """{"target", "met", "detail"} of the stopping target (module docstring).

    >>> stop_status("top_separated", {"a": {"rank": 1, "rank_ci95": [1, 1]}, "b": {"rank": 2, "rank_ci95": [2, 3]}})
    {'target': 'top_separated', 'met': True, 'detail': 'a ranks first with rank interval [1, 1], which excludes rank 2'}
    """
    target = stop_when if isinstance(stop_when, str) else f"separated: {' vs '.join(stop_when['separated'])}"
    if not ranked:
        return {"target": target, "met": False, "detail": "no strengths yet (see ranking_detail.reason)"}
    if stop_when == "top_separated":
        top = min(ranked, key=lambda s: (ranked[s]["rank"], s))
        ci = _interval(ranked[top])
        if ci is None:
            return {"target": target, "met": False, "detail": f"{top} ranks first; its rank interval is not known yet"}
        met = ci[1] < 2
        return {"target": target, "met": met, "detail": f"{top} ranks first with rank interval [{ci[0]}, {ci[1]}], "
                                                         f"which {'excludes' if met else 'includes'} rank 2"}
    a, b = stop_when["separated"]
    missing = [s for s in (a, b) if _interval(ranked.get(s)) is None]
    if missing:
        return {"target": target, "met": False, "detail": f"no rank interval yet for {', '.join(missing)}"}
    ca, cb = _interval(ranked[a]), _interval(ranked[b])
    assert ca is not None and cb is not None
    met = ca[1] < cb[0] or cb[1] < ca[0]
    return {"target": target, "met": met,
            "detail": f"rank intervals {a} [{ca[0]}, {ca[1]}] and {b} [{cb[0]}, {cb[1]}] "
                      f"{'do not overlap' if met else 'overlap'}"}


def allocation_section(r: Report) -> str:
    """The "Allocation and stopping" section: the stopping target and whether it is met, the
    judgments per system pair (a matrix) and the current rank intervals; "" without the key."""
    alloc = r.get("allocation")
    if not alloc:
        return ""
    parts = ['<section id="allocation"><h2>Allocation and stopping</h2>']
    stop = alloc.get("stop")
    if stop:
        state = "met: you may stop" if stop["met"] else "not met yet: keep collecting"
        parts.append(f'<p id="stop-guide" class="{"stop-met" if stop["met"] else "stop-open"}"><strong>Stopping '
                     f'target {stop["target"]}: {state}</strong> ({stop["detail"]}).</p>')
    policy = alloc.get("policy")
    detail = (f"adaptive (cold start: {alloc.get('min_per_pair')} judgments per pair, then the pair that most reduces "
              f"the summed variance of the strengths); win rates {alloc.get('win_rates')}"
              + (f" ({alloc['weighting_reason']})" if alloc.get("weighting_reason") else "")
              if policy == ADAPTIVE else f"{policy} (the pair least shown in the study)")
    parts.append(f'<p id="allocation-policy">Pair allocation: {detail}.</p>')
    names = sorted({p[k] for p in alloc.get("pairs") or [] for k in ("a", "b")})
    judged = {(p["a"], p["b"]): p["n"] for p in alloc.get("pairs") or []}
    rows = [[a] + [None if a == b else judged.get((min(a, b), max(a, b)), 0) for b in names] for a in names]
    if names:
        parts.append(table(["system"] + names, rows, f"Judgments per system pair (n = {num(alloc.get('n'))} "
                                                    f"judgments; {num(alloc.get('n_shown'))} assignments shown)."))
    ranked = r.get(RANKED) or {}
    if ranked:
        order = sorted(ranked, key=lambda s: (ranked[s]["rank"], s))
        cells = {s: _interval(ranked[s]) for s in order}
        parts.append(table(["system", "rank", "rank 95% CI"],
                           [[s, ranked[s]["rank"], f"{ci[0]}–{ci[1]}" if ci else "–"] for s, ci in cells.items()],
                           "Current rank intervals (bootstrap over items; the Ranking section gives their method)."))
    parts.append("</section>")
    return "".join(parts)
