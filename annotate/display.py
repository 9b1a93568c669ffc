"""What an annotator is shown for one assignment: the item's display fields in the
assignment's shown order, and the questions with their options in that order.

Nothing that could bias or leak the answer leaves here: metric scores, gold, meta, the
ExPerT score/precision/recall, similarity pair sources, models and prompt styles.
"""
from .kinds import ASPECT_PAIRWISE, EXPLANATION_CHOICE, PAIRWISE_ALIGNMENT, SIMILARITY_SURVEY, questions_for
from .ordering import CANDIDATES_KEY, PAIR_ORDER_KEY

EXPLANATION_KEYS = ("aspects_reference", "aspects_generated", "matches")


def study_questions(study, item_data):
    """questions_for with the study's model fields folded into its config."""
    return questions_for(study.kind, {**(study.config or {}), "allow_tie": study.allow_tie}, item_data)


def shown_questions(study, item_data, shown_order):
    """The API's "questions": option questions list their options in shown order, rating
    questions their scale; similarity questions follow the shown pair order."""
    out = []
    for q in study_questions(study, item_data):
        entry = {"id": q["id"], "text": q["text"]}
        if "options" in q:
            entry["options"] = list(shown_order.get(q["id"]) or q["options"])
        else:
            entry["scale"] = list(q["scale"])
        out.append(entry)
    if study.kind == SIMILARITY_SURVEY and shown_order.get(PAIR_ORDER_KEY):
        rank = {pid: i for i, pid in enumerate(shown_order[PAIR_ORDER_KEY])}
        out.sort(key=lambda q: rank.get(q["id"], len(rank)))
    return out


def _ordered_candidates(item_data, shown_order):
    by_id = {c["id"]: c for c in item_data["candidates"]}
    order = shown_order.get(CANDIDATES_KEY) or list(by_id)
    return [by_id[cid] for cid in order if cid in by_id]


def _as_list(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def public_explanation(explanation):
    """The parts of an ExPerT explanation object an annotator may see (no scores).
    Aspects become {aspect, description, evidence: [..]}; matches keep their reasons."""
    explanation = explanation if isinstance(explanation, dict) else {}
    out = {}
    for key in ("aspects_reference", "aspects_generated"):
        aspects = []
        for a in _as_list(explanation.get(key)):
            if isinstance(a, dict):
                aspects.append({"aspect": str(a.get("aspect", "")), "description": str(a.get("description", "")),
                                "evidence": [str(e) for e in _as_list(a.get("evidence"))]})
            else:
                aspects.append({"aspect": str(a), "description": "", "evidence": []})
        out[key] = aspects
    matches = []
    for m in _as_list(explanation.get("matches")):
        if isinstance(m, dict):
            matches.append({k: m.get(k) for k in ("side", "from", "to", "reason", "content_match",
                                                   "content_reason", "style_match", "style_reason")})
    out["matches"] = matches
    return out


def display_item(study, item_data, shown_order):
    """The API's "item": the kind's display fields in this annotator's order."""
    if study.kind == PAIRWISE_ALIGNMENT:
        return {"input": item_data.get("input", ""), "reference": item_data.get("reference", ""),
                "candidates": [{"id": c["id"], "text": c.get("text", "")}
                               for c in _ordered_candidates(item_data, shown_order)]}
    if study.kind == EXPLANATION_CHOICE:
        explanations = item_data.get("explanations") or {}
        return {"candidates": [{"id": c["id"], "explanation": public_explanation(explanations.get(c["id"]))}
                               for c in _ordered_candidates(item_data, shown_order)]}
    if study.kind == SIMILARITY_SURVEY:
        by_id = {p["id"]: p for p in item_data["pairs"]}
        order = shown_order.get(PAIR_ORDER_KEY) or list(by_id)
        pairs = []
        for pid in order:
            texts = by_id[pid]["texts"]
            text_order = shown_order.get(pid) or ["0", "1"]
            pairs.append({"id": pid, "texts": [texts[int(i)] for i in text_order]})
        return {"pairs": pairs}
    if study.kind == ASPECT_PAIRWISE:
        return {"premise": item_data.get("premise", ""),
                "candidates": [{"id": c["id"], "text": c.get("text", "")}
                               for c in _ordered_candidates(item_data, shown_order)]}
    raise ValueError(f"unknown study kind {study.kind!r}")


def assignment_payload(assignment):
    """The 200 body of POST /api/studies/{slug}/assignments/next/ (interfaces.md)."""
    study, item = assignment.study, assignment.item
    return {"assignment": assignment.pk, "item_id": item.item_id,
            "item": display_item(study, item.data, assignment.shown_order),
            "questions": shown_questions(study, item.data, assignment.shown_order)}
