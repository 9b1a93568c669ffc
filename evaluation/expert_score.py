"""ExPerT score from aspect match decisions (statistics.md, "ExPerT score")."""
import numpy as np

VARIANTS = {
    "content": lambda c, s: float(c),
    "style": lambda c, s: float(s),
    "and": lambda c, s: float(c and s),
    "or": lambda c, s: float(c or s),
    "average": lambda c, s: 0.5 * c + 0.5 * s,
}


def _side(n_aspects, matches, name, variant):
    if len(matches) > n_aspects:
        raise ValueError(f"{name}: {len(matches)} matches for {n_aspects} aspects")
    if n_aspects == 0:
        return 0.0
    return sum(VARIANTS[variant](bool(c), bool(s)) for c, s in matches) / n_aspects


def _f(p, r):
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def expert_scores(n_reference_aspects, n_generated_aspects, recall_matches, precision_matches):
    """Per item: {"score": F(average), "precision", "recall", "variants": {name: F},
    "details": {name: {"precision", "recall", "f"}}}.

    recall_matches: (content, style) of each matched reference aspect; precision_matches:
    the same for matched generated aspects. Unmatched aspects contribute 0.
    """
    details = {}
    for variant in VARIANTS:
        r = _side(n_reference_aspects, recall_matches, "recall", variant)
        p = _side(n_generated_aspects, precision_matches, "precision", variant)
        details[variant] = {"precision": p, "recall": r, "f": _f(p, r)}
    avg = details["average"]
    return {"score": avg["f"], "precision": avg["precision"], "recall": avg["recall"],
            "variants": {v: d["f"] for v, d in details.items()}, "details": details}


def corpus_score(per_item_scores):
    """Mean of per-item F values (not F of the mean P and R); None for no items."""
    scores = [float(s) for s in per_item_scores if s is not None]
    return float(np.mean(scores)) if scores else None
