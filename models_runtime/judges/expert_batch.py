"""Turn an alignment batch (the runtime's ALIGNMENT_KIND) into an explanation batch
(EXPLANATION_CHOICE): ExPerT explains both candidates of every item against its reference,
in one ExPerT run over all candidates."""
import json

from evaluation.report.kinds import EXPLANATION_CHOICE

from .expert import ExpertConfig, explain

INSTRUCTIONS = ("Each response was compared with the user's own expected output. Read the "
                "explanations (aspects, evidence and matches) for Response A and Response B, pick "
                "the better response, then rate how useful the explanations were.")


def explanation_batch(rows, backend, slug=None, config=None, progress=None):
    """rows: a pairwise batch (header optional) -> (header, items, llm_calls). Items keep
    their keys and gain `explanations` {candidate id: explanation}."""
    config = config or ExpertConfig()
    header = next((r for r in rows if "study" in r and "item_id" not in r), None)
    items = [r for r in rows if "item_id" in r]
    errors = [f"item {r['item_id']}: needs a reference and 2 candidates" for r in items
              if not isinstance(r.get("reference"), str) or len(r.get("candidates") or []) != 2]
    if errors:
        raise ValueError("; ".join(errors))
    study = dict((header or {}).get("study") or {})
    slug = slug or (study.get("slug", "expert") + "-explanations")
    records, owners = [], []
    for item in items:
        for candidate in item["candidates"]:
            records.append({"input": item.get("input", ""), "output": candidate["text"],
                            "reference": item["reference"]})
            owners.append((item["item_id"], candidate["id"]))
    explanations = explain(records, backend, config, progress=progress)
    by_item = {}
    for (item_id, cid), explanation in zip(owners, explanations):
        by_item.setdefault(item_id, {})[cid] = explanation
    out_items = []
    for item in items:
        out = {k: v for k, v in item.items() if k not in ("gold", "metric_scores")}
        out["explanations"] = by_item[item["item_id"]]
        out_items.append(out)
    out_header = {"study": {
        "slug": slug, "kind": EXPLANATION_CHOICE,
        "title": study.get("title") or "Which response is better, judging from the explanations?",
        "instructions": INSTRUCTIONS,
        "annotations_per_item": study.get("annotations_per_item", 3),
    }}
    return out_header, out_items, sum(e["llm_calls"] for e in explanations)


def write_batch(path, header, items):
    with open(path, "w", encoding="utf-8") as handle:
        for row in [header, *items]:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
