"""explanation_choice: the ExPerT explainability study (spec studies.md).

Items as the alignment study's (two_candidate.ReferenceChoiceKind) plus `explanations`
{candidate id: ExPerT explanation}. The annotator sees only the two explanations (aspects,
evidence, matches and reasons; never the score) and answers `choice` and `usefulness`
(header `usefulness_scale`, default 1-5).
Report: evaluation.report.kinds.explanation_choice.
"""
from typing import Any

from annotate.kinds.base import NEEDS_EXPERT_SCORES, SCALE_SCHEMA, check_scale, is_number, scale_of
from annotate.kinds.two_candidate import ReferenceChoiceKind, ordered_candidates
from evaluation.vocabulary import USEFULNESS_QUESTION

DEFAULT_USEFULNESS_SCALE = (1, 5)
CHOICE_TEXT = "Judging from the explanations, which response is better?"
USEFULNESS_TEXT = "How useful were the explanations for deciding?"
EXPLANATION_KEYS = ("score", "aspects_reference", "aspects_generated", "matches")
MATCH_KEYS = ("side", "from", "to", "reason", "content_match", "content_reason", "style_match", "style_reason")


def _as_list(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def public_explanation(explanation) -> dict:
    """The parts of an ExPerT explanation object an annotator may see (no scores).
    Aspects become {aspect, description, evidence: [..]}; matches keep their reasons."""
    explanation = explanation if isinstance(explanation, dict) else {}
    out: dict[str, Any] = {}
    for key in ("aspects_reference", "aspects_generated"):
        aspects = []
        for a in _as_list(explanation.get(key)):
            if isinstance(a, dict):
                aspects.append({"aspect": str(a.get("aspect", "")), "description": str(a.get("description", "")),
                                "evidence": [str(e) for e in _as_list(a.get("evidence"))]})
            else:
                aspects.append({"aspect": str(a), "description": "", "evidence": []})
        out[key] = aspects
    out["matches"] = [{k: m.get(k) for k in MATCH_KEYS} for m in _as_list(explanation.get("matches"))
                      if isinstance(m, dict)]
    return out


class ExplanationChoice(ReferenceChoiceKind):
    name = "explanation_choice"
    order = 2
    item_keys = ("input", "reference", "candidates", "explanations")
    header_keys = ("usefulness_scale",)
    scale_words = ("not useful", "very useful")
    report_needs = frozenset({NEEDS_EXPERT_SCORES})
    choice_text = CHOICE_TEXT
    demo_slug = "demo-explanations"
    header_schema = {"usefulness_scale": {**SCALE_SCHEMA, "description": "The usefulness scale [min, max], "
                                                                         "default [1, 5]."}}
    display_schema = {"candidates": {"type": "array", "description": "In the order shown.", "items": {
        "type": "object", "properties": {
            "id": {"type": "string", "description": "The option token to answer with (opaque, per assignment)."},
            "explanation": {"type": "object", "description": "aspects_reference, aspects_generated "
                                                             "({aspect, description, evidence}) and matches "
                                                             "(side, from, to, reason, content_match, content_reason, "
                                                             "style_match, style_reason); never the score."}}}}}

    def header_config(self, study, error):
        if "usefulness_scale" not in study:
            return {}
        reason = check_scale(study["usefulness_scale"], "usefulness_scale")
        if reason:
            error(reason)
            return {}
        return {"usefulness_scale": list(study["usefulness_scale"])}

    def report_config(self, config):
        return dict(config, usefulness_scale=list(scale_of(config, "usefulness_scale", DEFAULT_USEFULNESS_SCALE)))

    def check_extra(self, obj, error):
        """`explanations`: one ExPerT explanation object per candidate id."""
        explanations = obj["explanations"]
        ids = [c["id"] for c in obj["candidates"]]
        if not isinstance(explanations, dict) or set(explanations) != set(ids):
            error(f"'explanations' must be an object with exactly the candidate ids {ids}")
            return
        for cid in ids:
            exp = explanations[cid]
            if not isinstance(exp, dict):
                error(f"explanation of {cid!r} must be an object")
                continue
            missing = [k for k in EXPLANATION_KEYS if k not in exp]
            if missing:
                error(f"explanation of {cid!r} is missing {', '.join(missing)}")
                continue
            if not is_number(exp["score"]):
                error(f"explanation of {cid!r}: 'score' must be a number")
            for key in EXPLANATION_KEYS[1:]:
                if not isinstance(exp[key], list):
                    error(f"explanation of {cid!r}: '{key}' must be a list")

    def questions(self, config, item_data):
        lo, hi = scale_of(config, "usefulness_scale", DEFAULT_USEFULNESS_SCALE)
        return super().questions(config, item_data) + [
            {"id": USEFULNESS_QUESTION, "text": USEFULNESS_TEXT, "scale": [lo, hi]}]

    def display(self, item_data, shown_order):
        explanations = item_data.get("explanations") or {}
        return {"candidates": [{"id": c["id"], "explanation": public_explanation(explanations.get(c["id"]))}
                               for c in ordered_candidates(item_data, shown_order)]}

    def example_header(self):
        return {"usefulness_scale": [1, 5]}

    def example_item(self, i):
        """The pairwise example item with an ExPerT explanation per candidate (m1 scores
        higher on even i)."""
        item = super().example_item(i)
        high, low = (0.75, 0.25) if i % 2 == 0 else (0.25, 0.75)
        item["explanations"] = {"m1": example_explanation("A", high), "m2": example_explanation("B", low)}
        return item

    def demo_batch(self):
        from annotate.studies.demo_data import explanation_batch

        return explanation_batch(self.demo_slug)


def example_explanation(tag, score):
    """An ExPerT explanation whose aspect names carry `tag` (to tell two candidates apart)."""
    return {
        "score": score, "precision": 0.5, "recall": 1.0,
        "variants": {"content": 1, "style": 0.5, "and": 0.5, "or": 1, "average": score},
        "aspects_reference": [{"aspect": f"tone {tag}", "description": "A warm, chatty tone.",
                               "evidence": ["I loved every minute of it."]}],
        "aspects_generated": [{"aspect": f"plot {tag}", "description": "Summarises the plot.",
                               "evidence": ["The film follows a chef.", "She opens a bistro."]}],
        "matches": [{"side": "recall", "from": f"tone {tag}", "to": f"plot {tag}", "reason": "Both discuss the film.",
                     "content_match": True, "content_reason": "Same film.", "style_match": False,
                     "style_reason": "One is chatty, one is formal."}],
        "llm_calls": 7,
    }


KIND = ExplanationChoice()
