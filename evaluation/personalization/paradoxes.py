"""iCOPERNICUS paradox probes over EGISES scores per prompt style (lower = better).

`paradoxes` compares two given scores (manage.py paradoxes: a table of scores, no n).
`paradox_tests` decides a probe from per-document DEGRESS values instead (a report's
EGISES-HJ): the flag is true or false only when the bootstrap interval over documents of
the difference EGISES(richer) - EGISES(plainer) excludes 0, else None ("not resolved at
this n"; statistics.md, "Clustered data").
"""
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from evaluation.bootstrap import bootstrap_interval, cluster_counts
from evaluation.vocabulary import PROMPT_STYLES as STYLES

RESAMPLES = 2000

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


def paradox_tests(degress: Mapping[str, Mapping[Any, float]], probes: list[str] | None = None,
                  resamples: int = RESAMPLES, seed: int = 0) -> dict[str, dict[str, Any]]:
    """{probe: {"holds", "richer", "plainer", "difference", "ci95", "ci_method", "n_documents",
    "n_clusters", "dropped_resamples", "reason"?}} from DEGRESS(d) per prompt style
    ({style: {doc_id: DEGRESS}}; EGISES = 1 - mean DEGRESS). One bootstrap over the union of
    the two styles' documents (sorted ids, `bootstrap.cluster_counts`): a resample's EGISES
    of a style averages its drawn documents; a resample drawing none of one style's
    documents is dropped. holds: True when the interval of EGISES(richer) -
    EGISES(plainer) lies above 0, False below, None when it holds 0 or there is none.

    >>> degress = {"C-0-shot": {f"d{k}": 0.6 for k in range(6)},
    ...            "C-2-shot w/o hist": {f"d{k}": 0.5 - 0.01 * k for k in range(6)}}
    >>> t = paradox_tests(degress, ["PX-1-c"])["PX-1-c"]
    >>> t["holds"], round(t["difference"], 4), t["n_documents"]
    (True, 0.125, 6)
    """
    out = {}
    for name in probes if probes is not None else list(PROBES):
        richer, plainer = PROBES[name]
        a, b = degress.get(richer) or {}, degress.get(plainer) or {}
        docs = sorted(set(a) | set(b), key=str)
        entry: dict[str, Any] = {"holds": None, "richer": richer, "plainer": plainer, "difference": None,
                                 "ci95": None, "ci_method": _method(resamples, seed), "n_documents": len(docs),
                                 "n_clusters": len(docs), "dropped_resamples": 0}
        out[name] = entry
        if not a or not b:
            entry["reason"] = "a style has no EGISES-HJ"
            continue
        da = np.array([a.get(d, np.nan) for d in docs], dtype=float)
        db = np.array([b.get(d, np.nan) for d in docs], dtype=float)
        in_a, in_b = ~np.isnan(da), ~np.isnan(db)
        entry["difference"] = float(np.mean(db[in_b]) - np.mean(da[in_a]))  # (1 - mean a) - (1 - mean b)
        samples = []
        for w in cluster_counts(len(docs), resamples, seed):
            wa, wb = w[:, in_a], w[:, in_b]
            na, nb = wa.sum(axis=1), wb.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                samples.append(np.where((na > 0) & (nb > 0), (wb @ db[in_b]) / nb - (wa @ da[in_a]) / na, np.nan))
        interval = bootstrap_interval(np.concatenate(samples), entry["difference"], len(docs))
        entry.update(ci95=interval.ci95, dropped_resamples=interval.dropped)
        if interval.ci95 is None:
            entry["reason"] = interval.reason
        elif interval.ci95[0] > 0 or interval.ci95[1] < 0:
            entry["holds"] = interval.ci95[0] > 0
        else:
            entry["reason"] = "not resolved at this n: the interval of the difference holds 0"
    return out


def _method(resamples: int, seed: int) -> str:
    return (f"bootstrap over documents of EGISES(richer) - EGISES(plainer) ({resamples} resamples, seed {seed}; "
            "bias-corrected, expanded percentile)")
