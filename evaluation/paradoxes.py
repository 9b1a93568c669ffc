"""iCOPERNICUS paradox probes over EGISES scores per prompt style (lower = better)."""
import math
from collections.abc import Mapping
from typing import Any

from evaluation.vocabulary import PROMPT_STYLES as STYLES

# probe: (richer style, plainer style)
PROBES = {
    "PX-1": ("2-shot w/o hist", "0-shot"),
    "PX-1-h": ("2-shot w/ hist", "0-shot"),
    "PX-1-c": ("C-2-shot w/o hist", "C-0-shot"),
    "PX-1-h-c": ("C-2-shot w/ hist", "C-0-shot"),
    "PX-2": ("2-shot w/ hist", "2-shot w/o hist"),
    "PX-2-c": ("C-2-shot w/ hist", "C-2-shot w/o hist"),
    "PX-3": ("C-0-shot", "0-shot"),
    "PX-4": ("C-2-shot w/o hist", "2-shot w/o hist"),
    "PX-5": ("C-2-shot w/ hist", "2-shot w/ hist"),
}
# The paper's summary-table label -> probe.
SUMMARY = {"PX-1": "PX-1", "PX-2": "PX-1-h", "PX-3": "PX-3", "PX-4": "PX-4",
           "PX-5": "PX-1-h-c", "PX-6": "PX-1-c"}


def _score(value: Any) -> float | None:
    """A present score as a float; None for missing, empty, non-numeric text or NaN."""
    try:
        x = float(value) if not isinstance(value, str) or value.strip() else math.nan
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def paradoxes(scores: Mapping[str, Any]) -> dict[str, dict[str, bool | None]]:
    """{"probes": {probe: bool|None}, "summary": {"PX-1".."PX-6": bool|None}}.

    A paradox holds when EGISES(richer) >= EGISES(plainer); None unless both scores are
    present (missing, empty or NaN give None, never False).

    >>> paradoxes({"0-shot": 0.5, "2-shot w/o hist": float("nan")})["probes"]["PX-1"] is None
    True
    >>> paradoxes({"0-shot": 0.5, "2-shot w/o hist": 0.55})["summary"]["PX-1"]  # richer >= plainer
    True
    """
    unknown = set(scores) - set(STYLES)
    if unknown:
        raise ValueError(f"unknown prompt style(s): {', '.join(sorted(unknown))}")
    probes: dict[str, bool | None] = {}
    for name, (richer, plainer) in PROBES.items():
        r, p = _score(scores.get(richer)), _score(scores.get(plainer))
        probes[name] = None if r is None or p is None else bool(r >= p)
    return {"probes": probes, "summary": {k: probes[v] for k, v in SUMMARY.items()}}
