"""Small builders shared by the runtime tests."""
from annotate.studies.importing import import_batch_bytes
from tests.factories import header, jsonl

REF = "the cat sat on the mat"
# (item id, candidate a, candidate b); scores worked by hand in test_jobs.py.
ITEMS = [
    ("i1", "the cat on the mat", "mat the on cat the"),
    ("i2", "the cat sat on a mat", REF),
    ("i3", "dogs bark", "the cat sat"),
]


def batch_bytes(slug="rt-study", items=ITEMS, reference=REF):
    lines = [header(slug, "pairwise_alignment", title="Runtime test", instructions="Pick one.", annotations_per_item=3)]
    for item_id, a, b in items:
        lines.append({"item_id": item_id, "input": f"Describe {item_id}", "reference": reference,
                      "candidates": [{"id": "a", "text": a}, {"id": "b", "text": b}]})
    return jsonl(*lines)


def make_study(slug="rt-study", items=ITEMS):
    return import_batch_bytes(batch_bytes(slug, items)).study


def scores(study, metric):
    """{(item_id, candidate): float or None} of stored predictions."""
    from annotate.models import Prediction

    rows = Prediction.objects.filter(study=study, evaluator=metric, annotator="")
    return {(p.item.item_id, p.question): (float(p.value) if p.value else None) for p in rows}
