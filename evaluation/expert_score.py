"""ExPerT score from aspect match decisions (statistics.md, "ExPerT score")."""
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

VARIANTS = {
    "content": lambda c, s: float(c),
    "style": lambda c, s: float(s),
    "and": lambda c, s: float(c and s),
    "or": lambda c, s: float(c or s),
    "average": lambda c, s: 0.5 * c + 0.5 * s,
}


def _side(n_aspects: int, matches: Sequence[tuple[Any, Any]], name: str, variant: str) -> float:
    if len(matches) > n_aspects:
        raise ValueError(f"{name}: {len(matches)} matches for {n_aspects} aspects")
    if n_aspects == 0:
        return 0.0
    return sum(VARIANTS[variant](bool(c), bool(s)) for c, s in matches) / n_aspects


def _f(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def expert_scores(n_reference_aspects: int, n_generated_aspects: int, recall_matches: Sequence[tuple[Any, Any]],
                  precision_matches: Sequence[tuple[Any, Any]]) -> dict[str, Any]:
    """Per item: {"score": F(average), "precision", "recall", "variants": {name: F},
    "details": {name: {"precision", "recall", "f"}}}.

    recall_matches: (content, style) of each matched reference aspect; precision_matches:
    the same for matched generated aspects. Unmatched aspects contribute 0.

    Two aspects a side, one matched each way with content yes and style no: AVERAGE e = .5,
    R = P = .5/2 = .25, F = .25; CONTENT F = .5:

    >>> s = expert_scores(2, 2, [(True, False)], [(True, False)])
    >>> s["score"], s["variants"]["content"], s["variants"]["and"]
    (0.25, 0.5, 0.0)
    """
    details = {}
    for variant in VARIANTS:
        r = _side(n_reference_aspects, recall_matches, "recall", variant)
        p = _side(n_generated_aspects, precision_matches, "precision", variant)
        details[variant] = {"precision": p, "recall": r, "f": _f(p, r)}
    avg = details["average"]
    return {"score": avg["f"], "precision": avg["precision"], "recall": avg["recall"],
            "variants": {v: d["f"] for v, d in details.items()}, "details": details}


def corpus_score(per_item_scores: Iterable[float | None]) -> float | None:
    """Mean of per-item F values (not F of the mean P and R); None for no items.

    >>> corpus_score([0.25, 0.75, None]), corpus_score([])
    (0.5, None)
    """
    scores = [float(s) for s in per_item_scores if s is not None]
    return float(np.mean(scores)) if scores else None
