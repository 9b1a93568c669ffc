"""What the kinds with two candidates share (pairwise_alignment, explanation_choice,
aspect_pairwise): the candidates' validation, the options of a choice, and the
counterbalanced order.

Counterbalancing is per item: each new assignment gets whichever orientation (A-first or
B-first) the item has shown less often so far, so an item judged n times is shown each
way floor(n/2) or ceil(n/2) times; a coin flip would leave e.g. 3:0 splits on a third of
3-annotator items. shown_order: {"candidates": [first, second], <question id>: [options]}.
"""
from annotate.answers import shown
from evaluation.vocabulary import TIE

from .base import (
    CANDIDATES_KEY,
    MAX_ID_CHARS,
    QUESTION_IDS,
    RESERVED_IDS,
    TEXT_SCHEMA,
    Error,
    StudyKind,
    id_flaw,
    is_text,
)

# The display's candidates (API schema): the option token to answer with, and the text.
CANDIDATES_SCHEMA = {"type": "array", "description": "In the order shown.", "items": {
    "type": "object", "properties": {"id": {"type": "string", "description": "The option token to answer with "
                                                                             "(opaque, per assignment)."},
                                     "text": TEXT_SCHEMA}}}


def orientation_counts(candidate_ids: list, previous_orders: list) -> dict:
    """How many earlier assignments showed each candidate first: {candidate id: count}."""
    counts = {cid: 0 for cid in candidate_ids}
    for order in previous_orders:
        first = (order or {}).get(CANDIDATES_KEY, [None])[0]
        if first in counts:
            counts[first] += 1
    return counts


def balanced_candidate_order(candidate_ids: list, previous_orders: list, rng) -> list:
    """The candidate order for the next assignment: the less-shown orientation first, a
    seeded coin flip when both have been shown equally often."""
    a, b = candidate_ids
    counts = orientation_counts(candidate_ids, previous_orders)
    if counts[a] < counts[b]:
        return [a, b]
    if counts[b] < counts[a]:
        return [b, a]
    return [a, b] if rng.random() < 0.5 else [b, a]


def ordered_candidates(item_data: dict, shown_order: dict) -> list[dict]:
    """The item's candidates in the annotator's order."""
    by_id = {c["id"]: c for c in item_data["candidates"]}
    order = shown_order.get(CANDIDATES_KEY) or list(by_id)
    return [by_id[cid] for cid in order if cid in by_id]


class TwoCandidateKind(StudyKind):
    allows_tie = True
    candidates_key = "candidates"

    def choice_options(self, config: dict, item_data: dict) -> list:
        """The candidate ids, then `tie` when the study allows it."""
        return [c["id"] for c in item_data["candidates"]] + ([TIE] if config.get("allow_tie") else [])

    def reserved_ids(self, config: dict) -> set:
        """Ids a candidate may not take: they would read as a question id or `tie`."""
        return RESERVED_IDS | QUESTION_IDS | {q["id"] for q in self.questions(config, {"candidates": []})}

    def check_candidates(self, obj: dict, config: dict, error: Error) -> bool:
        """Exactly two candidates {id, text} with distinct, storable ids. False on error."""
        candidates = obj["candidates"]
        if not isinstance(candidates, list) or len(candidates) != 2:
            count = len(candidates) if isinstance(candidates, list) else "not a list"
            error(f"'candidates' must be a list of exactly 2, got {count}")
            return False
        ids = []
        for n, cand in enumerate(candidates):
            if not isinstance(cand, dict) or not is_text(cand.get("id")) or not is_text(cand.get("text")):
                error(f"candidate {n + 1} must be an object with non-empty 'id' and 'text'")
                return False
            ids.append(cand["id"])
        ok = True
        if ids[0] == ids[1]:
            error(f"the two candidates have the same id {ids[0]!r}")
            ok = False
        reserved = self.reserved_ids(config)
        for cid in ids:
            if cid in reserved or "|" in cid or len(cid) > MAX_ID_CHARS:
                error(f"candidate id {shown(cid)} is reserved or contains '|' (or is over {MAX_ID_CHARS} characters)")
                ok = False
            elif id_flaw(cid):
                error(f"candidate id {shown(cid)} {id_flaw(cid)}")
                ok = False
        return ok

    def shown_order(self, item_data, config, randomize, rng, previous_orders):
        ids = [c["id"] for c in item_data["candidates"]]
        order = balanced_candidate_order(ids, previous_orders, rng) if randomize else ids
        shown = {CANDIDATES_KEY: order}
        for q in self.questions(config, item_data):
            if "options" in q:
                shown[q["id"]] = order + [o for o in q["options"] if o not in order]  # `tie` stays last
        return shown

    def display_candidates(self, item_data: dict, shown_order: dict) -> list[dict]:
        """The candidates' ids and texts in the annotator's order."""
        return [{"id": c["id"], "text": c.get("text", "")} for c in ordered_candidates(item_data, shown_order)]

    def blind_display(self, display, blinding):
        return {**display, "candidates": [{**c, "id": blinding.option(c["id"])} for c in display["candidates"]]}

    def page_display(self, display, questions, labels):
        """Each candidate gets its label ("Response A", "Plot B") by shown position."""
        return {**display, "candidates": [{**c, "label": labels[i]} for i, c in enumerate(display["candidates"])]}
