"""iCOPERNICUS paradox probes over EGISES scores per prompt style (lower = better)."""
STYLES = ("0-shot", "2-shot w/o hist", "2-shot w/ hist",
          "C-0-shot", "C-2-shot w/o hist", "C-2-shot w/ hist")

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


def paradoxes(scores):
    """{"probes": {probe: bool|None}, "summary": {"PX-1".."PX-6": bool|None}}.

    A paradox holds when EGISES(richer) >= EGISES(plainer); None if a score is missing.
    """
    unknown = set(scores) - set(STYLES)
    if unknown:
        raise ValueError(f"unknown prompt style(s): {', '.join(sorted(unknown))}")
    probes = {}
    for name, (richer, plainer) in PROBES.items():
        r, p = scores.get(richer), scores.get(plainer)
        probes[name] = None if r is None or p is None else bool(float(r) >= float(p))
    return {"probes": probes, "summary": {k: probes[v] for k, v in SUMMARY.items()}}
