"""Merged candidates: one shown output standing for several systems whose outputs were
identical (a plan's batch: models_runtime/plan_support/plan_kinds.py, candidate key `also_systems`).

The annotator saw the output once; the per-system table and the strengths credit it to every
system it stands for:

- `with_merged`: the input with each standing-for system added to its item as a candidate
  of its own (after the shown ones) whose metric scores are the merged candidate's (the
  same text, so the same score): its `n_items` and metric means count those items;
- `credit_merged`: every comparison of a merged candidate repeated for each system it
  stands for (a judgment of merged {a, b} against c counts as a vs c and as b vs c), so the
  human rows, pairwise wins and Bradley-Terry strengths credit each;
- `merged_wins`: a majority for a merged candidate is a win for each system it stands for;
- `identical_outputs`: how many items and system pairs had identical outputs (the report
  key of that name).

`ReportInput.merged` holds {(item index, shown candidate id): [other system ids]}.
"""
import dataclasses
from typing import Any

import numpy as np

from evaluation.bradley_terry import Comparisons
from evaluation.vocabulary import TIE

from .inputs import ReportInput, objects

NOTE = ("systems whose outputs were identical on an item share one shown candidate; its judgments, majority and "
        "metric scores count for each of them (per_pair: items where the two systems' outputs were identical)")


def merged_of(inp: ReportInput) -> dict[tuple[int, str], list[str]]:
    """The non-gold items' merged candidates."""
    return {key: extra for key, extra in (inp.merged or {}).items() if not inp.is_gold[key[0]]}


def with_merged(inp: ReportInput) -> ReportInput:
    """`inp` with each standing-for system as a candidate of its own (scores copied from
    the shown candidate); `inp` itself when nothing was merged."""
    merged = merged_of(inp)
    if not merged:
        return inp
    add_item = [i for (i, _), extra in merged.items() for _ in extra]
    add_id = [s for extra in merged.values() for s in extra]
    s_item, s_metric, s_candidate, s_value = [inp.s_item], [inp.s_metric], [inp.s_candidate], [inp.s_value]
    for (item, cand), extra in merged.items():
        rows = (inp.s_item == item) & (inp.s_candidate == cand)
        for system in extra:
            s_item.append(inp.s_item[rows])
            s_metric.append(inp.s_metric[rows])
            s_candidate.append(objects([system] * int(rows.sum())))
            s_value.append(inp.s_value[rows])
    keep = ~inp.p_is_score  # the score predictions are already in the s_ table
    return dataclasses.replace(
        inp, candidates=None, c_item=np.concatenate([inp.c_item, np.array(add_item, dtype=np.int64)]),
        c_id=objects(inp.c_id.tolist() + add_id),
        s_item=np.concatenate(s_item), s_metric=np.concatenate(s_metric), s_candidate=np.concatenate(s_candidate),
        s_value=np.concatenate(s_value),
        p_item=inp.p_item[keep], p_evaluator=inp.p_evaluator[keep], p_annotator=inp.p_annotator[keep],
        p_question=inp.p_question[keep], p_value=inp.p_value[keep], merged=None)


def credit_merged(c: Comparisons, inp: ReportInput) -> Comparisons:
    """The comparisons with each one of a merged candidate repeated for every system it
    stands for (both sides: merged {a, b} vs merged {c, d} gives the four pairs)."""
    merged = merged_of(inp)
    if not merged or not len(c):
        return c
    code = {s: k for k, s in enumerate(c.systems)}
    item, first, second, credit = c.item, c.first, c.second, c.credit
    for side in ("first", "second"):
        add = []
        for (i, cand), extra in merged.items():
            own = first if side == "first" else second
            rows = np.flatnonzero((item == i) & (own == code.get(cand, -1)))
            add += [(rows, code[system]) for system in extra]
        for rows, system_code in add:
            item, credit = np.concatenate([item, item[rows]]), np.concatenate([credit, credit[rows]])
            moved = np.full(len(rows), system_code, dtype=np.int64)
            if side == "first":
                first, second = np.concatenate([first, moved]), np.concatenate([second, second[rows]])
            else:
                first, second = np.concatenate([first, first[rows]]), np.concatenate([second, moved])
    return Comparisons(c.systems, item, first, second, credit)


def merged_wins(inp: ReportInput, labels: np.ndarray, wins_decided: tuple[dict[str, int], dict[str, int]],
                real: ReportInput) -> tuple[dict[str, int], dict[str, int]]:
    """systems.system_wins with a merged candidate's decided items and wins also counted
    for each system it stands for (`inp`: `real`, or its (item, shown pair) units)."""
    unit_item = getattr(inp, "unit_item", None)
    merged = merged_of(real)
    if not merged:
        return wins_decided
    wins, decided = dict(wins_decided[0]), dict(wins_decided[1])
    item_of = np.arange(inp.n_items) if unit_item is None else unit_item
    for u in np.flatnonzero((labels != None) & (labels != TIE)).tolist():  # noqa: E711 (elementwise)
        for cand in inp.item_candidates(u):
            for system in merged.get((int(item_of[u]), cand), ()):
                decided[system] = decided.get(system, 0) + 1
                if labels[u] == cand:
                    wins[system] = wins.get(system, 0) + 1
    return dict(sorted(wins.items())), dict(sorted(decided.items()))


def identical_outputs(inp: ReportInput) -> dict[str, Any]:
    """{"n_items", "pairs", "per_pair": {"a|b": items}, "note"}: the non-gold items with a
    merged candidate and the system pairs whose outputs were identical there."""
    merged = merged_of(inp)
    per_pair: dict[str, int] = {}
    for (_, cand), extra in merged.items():
        group = [cand, *extra]
        for n, a in enumerate(group):
            for b in group[n + 1:]:
                per_pair[f"{a}|{b}"] = per_pair.get(f"{a}|{b}", 0) + 1
    return {"n_items": len({i for i, _ in merged}), "pairs": sum(per_pair.values()),
            "per_pair": dict(sorted(per_pair.items())), "note": NOTE}
