"""The order in which an annotator sees the options of one item.

Two-candidate kinds are counterbalanced per item: each new assignment gets whichever
orientation (A-first or B-first) the item has shown less often so far, so an item judged
n times is shown each way floor(n/2) or ceil(n/2) times; a coin flip would leave e.g. 3:0
splits on a third of 3-annotator items. Similarity surveys shuffle the pair order and the
text order inside each pair per annotator, with a seed derived from (study, item,
annotator) so the order is reproducible.

The result is stored on the Assignment as `shown_order`:
- two-candidate kinds: {"candidates": [first id, second id], <question id>: [option ids]}
- similarity_survey: {"pair_order": [pair ids], <pair id>: ["0", "1"] or ["1", "0"]}
"""
import random

from .kinds import SIMILARITY_SURVEY, TWO_CANDIDATE_KINDS, questions_for

CANDIDATES_KEY = "candidates"
PAIR_ORDER_KEY = "pair_order"


def seeded_rng(*parts):
    """A Random seeded from the given parts (str seeds hash with SHA-512: stable across runs)."""
    return random.Random(":".join(str(p) for p in parts))


def orientation_counts(candidate_ids, previous_orders):
    """How many earlier assignments showed each candidate first: {candidate id: count}."""
    counts = {cid: 0 for cid in candidate_ids}
    for order in previous_orders:
        first = (order or {}).get(CANDIDATES_KEY, [None])[0]
        if first in counts:
            counts[first] += 1
    return counts


def balanced_candidate_order(candidate_ids, previous_orders, rng):
    """The candidate order for the next assignment: the less-shown orientation first, a
    seeded coin flip when both have been shown equally often."""
    a, b = candidate_ids
    counts = orientation_counts(candidate_ids, previous_orders)
    if counts[a] < counts[b]:
        return [a, b]
    if counts[b] < counts[a]:
        return [b, a]
    return [a, b] if rng.random() < 0.5 else [b, a]


def shown_order_for(study, item, annotator_id, previous_orders):
    """The full `shown_order` dict for a new assignment of `item` to `annotator_id`.

    `previous_orders` are the shown_order dicts of the item's existing assignments (the
    caller holds the item's row lock, so the counts cannot change underneath)."""
    data = item.data
    rng = seeded_rng(study.pk, item.pk, annotator_id)
    questions = questions_for(study.kind, {**study.config, "allow_tie": study.allow_tie}, data)
    if study.kind in TWO_CANDIDATE_KINDS:
        ids = [c["id"] for c in data["candidates"]]
        order = balanced_candidate_order(ids, previous_orders, rng) if study.randomize_order else ids
        shown = {CANDIDATES_KEY: order}
        for q in questions:
            if "options" in q:
                extra = [o for o in q["options"] if o not in order]  # `tie` stays last
                shown[q["id"]] = order + extra
        return shown
    if study.kind == SIMILARITY_SURVEY:
        pair_ids = [p["id"] for p in data["pairs"]]
        if study.randomize_order:
            rng.shuffle(pair_ids)
        shown = {PAIR_ORDER_KEY: pair_ids}
        for pid in pair_ids:
            flip = study.randomize_order and rng.random() < 0.5
            shown[pid] = ["1", "0"] if flip else ["0", "1"]
        return shown
    raise ValueError(f"unknown study kind {study.kind!r}")


def judgment_shown_order(shown_order, question_id):
    """The Judgment.shown_order string for one question: option ids joined with '|'
    ('' for a rating question with no options, e.g. usefulness)."""
    return "|".join(shown_order.get(question_id, []))
