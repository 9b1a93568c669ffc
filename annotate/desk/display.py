"""What an annotator is shown for one assignment: the item's display fields in the
assignment's shown order (the kind's `display`), and the questions with their options in
that order. Nothing that could bias or leak the answer leaves the kinds' `display`:
metric scores, gold, meta, the ExPerT score, similarity pair sources, models and styles.
`annotator_view` then replaces candidate ids, pair ids and the item id by the
assignment's opaque tokens (annotate.desk.blinding): both annotator doors draw from it.
"""
from annotate.desk.blinding import blinding_for
from annotate.kinds import assignment_item, get_kind, study_config


def study_questions(study, item_data):
    """The questions of one item of `study`."""
    return get_kind(study.kind).questions(study_config(study), item_data)


def shown_questions(study, item_data, shown_order):
    """The API's "questions": option questions list their options in shown order, rating
    questions their scale, in the order the kind shows them."""
    out = []
    for q in study_questions(study, item_data):
        entry = {"id": q["id"], "text": q["text"]}
        if "options" in q:
            entry["options"] = list(shown_order.get(q["id"]) or q["options"])
            entry.update({k: q[k] for k in ("order", "ties") if k in q})  # a full order of the options
        else:
            entry["scale"] = list(q["scale"])
        out.append(entry)
    return get_kind(study.kind).order_questions(out, shown_order)


def display_item(study, item_data, shown_order):
    """The API's "item": the kind's display fields in this annotator's order."""
    return get_kind(study.kind).display(item_data, shown_order)


def annotator_view(assignment) -> dict:
    """What the annotator of `assignment` sees, blinded: {"item_id": opaque handle,
    "item": display fields, "questions": questions}, ids replaced by tokens."""
    study, data, order = assignment.study, assignment_item(assignment), assignment.shown_order
    blinding = blinding_for(assignment)
    return {"item_id": blinding.item,
            "item": blinding.display(get_kind(study.kind), display_item(study, data, order)),
            "questions": blinding.shown_questions(shown_questions(study, data, order))}


def assignment_payload(assignment):
    """The 200 body of POST /api/studies/{slug}/assignments/next/ (interfaces.md); `item_id`
    is the assignment's opaque item handle, not the researchers' item id."""
    return {"assignment": assignment.pk, **annotator_view(assignment)}
