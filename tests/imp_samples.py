"""Small valid batch lines of each kind, for the import tests (texts written for the tests)."""
import json


def header(slug, kind, **extra):
    return {"study": {"slug": slug, "kind": kind, "title": f"Test {kind}", **extra}}


def pairwise(item_id, **extra):
    return {"item_id": item_id, "input": "Write a note to my landlord about the heater.",
            "reference": "Hi Sam, the heater clicks but stays cold. Could you look at it this week? Thanks, Ana",
            "candidates": [{"id": "m1", "text": "Dear landlord, the heater is broken."},
                           {"id": "m2", "text": "Hi Sam, heater's cold again, could you come by? Ana"}], **extra}


def explanation(score):
    return {"score": score, "precision": score, "recall": score,
            "variants": {"content": score, "style": score, "and": score, "or": score, "average": score},
            "aspects_reference": [{"aspect": "request", "description": "asks for a repair", "evidence": ["Could you look at it"]}],
            "aspects_generated": [{"aspect": "request", "description": "asks for a visit", "evidence": ["could you come by"]}],
            "matches": [{"side": "recall", "from": "request", "to": "request", "reason": "same ask",
                         "content_match": True, "content_reason": "both ask", "style_match": True,
                         "style_reason": "both casual"}],
            "llm_calls": 4}


def explained(item_id, **extra):
    item = pairwise(item_id)
    item["explanations"] = {"m1": explanation(0.25), "m2": explanation(0.75)}
    item.update(extra)
    return item


def similarity(item_id, **extra):
    return {"item_id": item_id, "document": {"id": "d1", "title": "Rain", "text": "Heavy rain closed two bridges."},
            "users": ["u1", "u2"],
            "pairs": [{"id": "ref", "source": "reference", "texts": ["Bridges shut", "Storm hits town"]},
                      {"id": "gen-c0", "source": "model", "model": "smollm2", "prompt_style": "C-0-shot",
                       "texts": ["Rain closes bridges", "Rain closes two bridges"]}], **extra}


def aspects(item_id, **extra):
    return {"item_id": item_id, "premise": "A lighthouse keeper finds a letter addressed to her future self.",
            "candidates": [{"id": "plot-a", "text": "She answers it and starts a correspondence with time."},
                           {"id": "plot-b", "text": "She burns it, and the lighthouse goes dark."}], **extra}


SAMPLES = {"pairwise_alignment": pairwise, "explanation_choice": explained,
           "similarity_survey": similarity, "aspect_pairwise": aspects}


def jsonl(*objects):
    """The file bytes: one JSON object a line."""
    return ("\n".join(json.dumps(o) for o in objects) + "\n").encode("utf-8")


def write(tmp_path, *objects, name="batch.jsonl"):
    path = tmp_path / name
    path.write_bytes(jsonl(*objects))
    return path
