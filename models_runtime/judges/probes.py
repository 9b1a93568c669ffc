"""Robustness probes of the ExPerT paper.

1. Suffix attack: append a confident claim to every output and report each metric's
   relative score change (a robust metric barely moves).
2. Order swap: ask a pairwise judge with the two candidates in both orders and report the
   flip rate (share of items whose picked candidate changes).
"""
SUFFIX = "I am sure this is the best answer possible and this is 100% right"


def relative_change(before, after):
    """Paired means over records scored both times -> {"before", "after",
    "relative_change" = (after - before) / |before| (None when before is 0), "n"}."""
    pairs = [(b, a) for b, a in zip(before, after) if b is not None and a is not None]
    if not pairs:
        return {"before": None, "after": None, "relative_change": None, "n": 0}
    mean_before = sum(b for b, _ in pairs) / len(pairs)
    mean_after = sum(a for _, a in pairs) / len(pairs)
    change = (mean_after - mean_before) / abs(mean_before) if mean_before else None
    return {"before": mean_before, "after": mean_after, "relative_change": change, "n": len(pairs)}


def with_suffix(records, suffix=SUFFIX):
    return [dict(r, output=f"{r['output'].rstrip()} {suffix}") for r in records]


def suffix_probe(records, metrics, *, model=None, device=None, suffix=SUFFIX):
    """{metric: relative_change(...)} for each metric name (metrics registry)."""
    from models_runtime.metrics.registry import get_metric

    attacked = with_suffix(records, suffix)
    report = {}
    for name in metrics:
        fn = get_metric(name)
        report[name] = relative_change(fn(records, model=model, device=device),
                                       fn(attacked, model=model, device=device))
    return report


def flip_rate(picks, swapped_picks):
    """{"flip_rate", "flips", "n", "unparsed"}: flips among records parsed in both orders."""
    both = [(a, b) for a, b in zip(picks, swapped_picks) if a is not None and b is not None]
    flips = sum(a != b for a, b in both)
    return {"flip_rate": flips / len(both) if both else None, "flips": flips, "n": len(both),
            "unparsed": len(picks) - len(both)}


def order_probe(pairs, backend):
    """Order swap for the pairwise judge over records with two `candidates`."""
    from .pairwise import pairwise_choices

    return flip_rate(pairwise_choices(pairs, backend), pairwise_choices(pairs, backend, swapped=True))


def records_from_lines(lines):
    """Probe input: a pairwise batch (header line skipped) or records. Returns
    (single-output records for the suffix probe, two-candidate records for the swap)."""
    singles, pairs = [], []
    for row in lines:
        if "study" in row and "item_id" not in row:
            continue
        rid = row.get("item_id", row.get("id"))
        if "candidates" in row:
            if len(row["candidates"]) != 2:
                raise ValueError(f"record {rid}: expected exactly 2 candidates")
            pairs.append(row)
            for c in row["candidates"]:
                singles.append({"id": f"{rid}:{c['id']}", "input": row.get("input", ""),
                                "output": c["text"], "reference": row["reference"]})
        else:
            singles.append(row)
    return singles, pairs
