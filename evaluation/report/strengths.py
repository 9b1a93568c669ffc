"""The strengths keys of the pairwise kinds (statistics.md, the Bradley–Terry section; interfaces.md
"Report keys added 2026-11-27"): every counted judgment of a choice question is one
comparison of the two systems it showed, taken from its shown order ("a|b|tie"); a
judgment without a recorded order compares its item's two candidates when the item has
exactly two (older 2-candidate data), else it is left out (`n_unpaired`), as is one whose
answer is neither shown system nor `tie` (missing answers included).

Keys: `pairwise_wins` (with its n per pair in `pairwise_n`), the strengths (vocabulary.RANKED, or null with
`reason`), `ranking_detail`,
`intransitivity`, `correlations_ranking` (each metric's system means, on the items of the
human row, against the strengths: Kendall tau-b with the exact p for n <= 9 systems), and
the per-system `human` rows (evaluation.bradley_terry).
"""
from typing import Any

import numpy as np

from evaluation.bradley_terry import (
    Comparisons,
    bt_ranking,
    human_rows,
    intransitivity,
    pairwise_n,
    pairwise_wins,
    win_matrix,
)
from evaluation.correlation import correlations
from evaluation.vocabulary import LOWER_IS_BETTER, RANKED, TIE

from .common import clean, clean_list
from .correlations import entry_from
from .inputs import Judgments, ReportInput, codes_of


def shown_pair_codes(shown: np.ndarray, code_of: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(first, second) system code of each row's shown order, -1 where it records fewer
    than two known systems (one split per distinct order)."""
    orders, code = codes_of(shown)
    firsts, seconds = [], []
    for order in orders.tolist():
        parts = [code_of[p] for p in str(order or "").split("|") if p != TIE and p in code_of]
        firsts.append(parts[0] if len(parts) >= 2 else -1)
        seconds.append(parts[1] if len(parts) >= 2 else -1)
    return np.array(firsts, dtype=np.int64)[code], np.array(seconds, dtype=np.int64)[code]


def comparisons_of(inp: ReportInput, rows: Judgments, systems: list[str]) -> tuple[Comparisons, int]:
    """(the comparisons of one choice question's counted rows, rows left out)."""
    compared, left_out, _ = comparisons_and_rows(inp, rows, systems)
    return compared, left_out


def comparisons_and_rows(inp: ReportInput, rows: Judgments,
                         systems: list[str]) -> tuple[Comparisons, int, np.ndarray]:
    """comparisons_of and the mask of the rows that became comparisons (in their order)."""
    code_of = {s: k for k, s in enumerate(systems)}
    if not len(rows):
        empty = np.zeros(0, dtype=np.int64)
        return Comparisons(systems, empty, empty, empty, np.zeros(0)), 0, np.zeros(0, dtype=bool)
    first, second = shown_pair_codes(rows.shown, code_of)
    n_candidates = (inp.candidates != None).sum(axis=1)  # noqa: E711 (elementwise)
    fallback = (first < 0) & (n_candidates[rows.item] == 2)
    if fallback.any():
        table = np.array([[code_of.get(str(c), -1) for c in pair] for pair in inp.candidates[:, :2].tolist()],
                         dtype=np.int64).reshape(-1, 2)
        first = np.where(fallback, table[rows.item, 0], first)
        second = np.where(fallback, table[rows.item, 1], second)
    value_system = np.array([code_of.get(str(v), -1) for v in inp.value_names.tolist()], dtype=np.int64)
    value_tie = np.array([v == TIE for v in inp.value_names.tolist()], dtype=bool)
    chosen, tie = value_system[rows.vcode], value_tie[rows.vcode]
    credit = np.where(chosen == first, 1.0, np.where(chosen == second, 0.0, np.where(tie, 0.5, np.nan)))
    keep = (first >= 0) & (second >= 0) & (first != second) & ~np.isnan(credit)
    return (Comparisons(systems, rows.item[keep], first[keep], second[keep], credit[keep]),
            int(np.count_nonzero(~keep)), keep)


def compared_slots(inp: ReportInput, c: Comparisons) -> np.ndarray:
    """(n_items, width) mask: the item's candidate in that slot took part in one of its
    comparisons (the items of a system's human row)."""
    s = len(c.systems)
    seen = np.zeros(inp.n_items * max(s, 1), dtype=bool)
    seen[np.concatenate([c.item * s + c.first, c.item * s + c.second])] = True
    labels, code = codes_of(inp.c_id)  # the long candidate table: one dict lookup per distinct id
    code_of = {name: k for k, name in enumerate(c.systems)}
    system = np.array([code_of.get(str(x), -1) for x in labels.tolist()], dtype=np.int64)[code]
    out = np.zeros(inp.candidates.shape, dtype=bool)
    known = system >= 0
    out[inp.c_item[known], inp.c_slot[known]] = seen[inp.c_item[known] * s + system[known]]
    return out


def human_part(c: Comparisons) -> dict[str, dict[str, Any]]:
    """{system: human row}, JSON-safe."""
    return {system: {k: clean_list(v) if k == "ci95" else clean(v) for k, v in row.items()}
            for system, row in zip(c.systems, human_rows(c))}


def ranking_part(c: Comparisons, n_unpaired: int) -> dict[str, Any]:
    """`pairwise_wins`, the strengths (+ `reason` when null), `ranking_detail`, `intransitivity`."""
    w = win_matrix(c)
    result = bt_ranking(c)
    out: dict[str, Any] = {"pairwise_wins": pairwise_wins(w, c.systems), "pairwise_n": pairwise_n(w, c.systems),
                           RANKED: result[RANKED]}
    if result[RANKED] is None:
        out["reason"] = result["reason"]
    out["ranking_detail"] = {**result["detail"], "n_unpaired": n_unpaired,
                             **({"reason": result["reason"]} if "reason" in result else {})}
    out["intransitivity"] = intransitivity(w, c.systems)
    return out


def correlations_ranking(strengths: dict[str, Any] | None,
                         means: dict[str, dict[str, float | None]]) -> dict[str, Any]:
    """{metric: correlation entry + "systems"} of each metric's system means against the
    Bradley-Terry strengths (lower-is-better metrics negated), over the systems with both;
    {} when there are no strengths."""
    if not strengths:
        return {}
    out = {}
    for metric, by_system in sorted(means.items()):
        names = [s for s in strengths if by_system.get(s) is not None]
        sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
        x = np.array([sign * float(by_system[s]) for s in names])  # type: ignore[arg-type]
        y = np.array([strengths[s]["strength"] for s in names])
        label = f"{'minus ' if sign < 0 else ''}mean {metric} score of the system (items of its human row)"
        out[metric] = {**entry_from(correlations(x, y, unit="systems"), "system", label,
                                    "Bradley-Terry strength of the system"), "systems": names}
    return out
