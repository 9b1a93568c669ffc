"""What the pairwise kinds share (every kind built on TwoCandidateKind):
the candidates' validation, the options of a choice, and which two candidates an
assignment shows in which order.

An item holds 2 to 8 candidates (one per system, ids unique within the item; a batch may
mix items with different numbers: studies.md "More than two systems"). An assignment
always shows exactly two, as A and B. shown_order: {"candidates": [first, second],
<question id>: [options]}.

Two candidates: counterbalancing is per item: each new assignment gets whichever
orientation (A-first or B-first) the item has shown less often so far, so an item judged n
times is shown each way floor(n/2) or ceil(n/2) times; a coin flip would leave e.g. 3:0
splits on a third of 3-annotator items.

More than two: the pair of systems shown least often so far in the whole study, then the
pair least shown on this item, then a seeded draw; the pair's A/B order the same way
(fewer in the study, then on the item, then a seeded coin). The study's counts come from
the engine (annotate/desk/assignment.py reads them under the study's row lock, so concurrent
assignments cannot pick from stale counts).
"""
from collections import Counter
from itertools import combinations

from annotate.kinds.base import (
    CANDIDATES_KEY,
    MAX_ID_CHARS,
    QUESTION_IDS,
    RESERVED_IDS,
    TEXT_SCHEMA,
    Error,
    StudyKind,
    id_flaw,
    is_text,
    pair_counts,
)
from annotate.studies.answers import shown
from evaluation.vocabulary import CHOICE_QUESTION, TIE

MIN_CANDIDATES, MAX_CANDIDATES = 2, 8

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


def shown_pairs(orders) -> Counter:
    """pair_counts of `orders` (shown_order dicts)."""
    return pair_counts(((order or {}).get(CANDIDATES_KEY), 1) for order in orders)


def pair_order(candidate_ids: list, previous_orders: list, study_pairs: Counter, randomize: bool, rng) -> list:
    """The two candidates a new assignment of an item with more than two shows, in their
    order: the pair least shown in the study (`study_pairs`, ordered counts), then least on
    this item (`previous_orders`), then a seeded draw; then the orientation the same way
    (item order when `randomize` is off)."""
    item_pairs = shown_pairs(previous_orders)

    def times(a, b):  # an orientation's (study, item) counts
        return study_pairs[(a, b)], item_pairs[(a, b)]

    def both_ways(pair):
        (s1, i1), (s2, i2) = times(*pair), times(*reversed(pair))
        return s1 + s2, i1 + i2

    pairs = list(combinations(candidate_ids, 2))
    fewest = min(map(both_ways, pairs))
    tied = [p for p in pairs if both_ways(p) == fewest]
    a, b = tied[rng.randrange(len(tied))] if rng is not None and len(tied) > 1 else tied[0]
    if not randomize or times(a, b) < times(b, a):
        return [a, b]
    if times(b, a) < times(a, b):
        return [b, a]
    return [a, b] if rng is None or rng.random() < 0.5 else [b, a]


def ordered_candidates(item_data: dict, shown_order: dict) -> list[dict]:
    """The item's candidates in the annotator's order."""
    by_id = {c["id"]: c for c in item_data["candidates"]}
    order = shown_order.get(CANDIDATES_KEY) or list(by_id)
    return [by_id[cid] for cid in order if cid in by_id]


def also_systems(candidates: list[dict], error: Error) -> list | None:
    """The ids in the candidates' optional `also_systems` (the other systems whose output
    was identical: a merged candidate, shown once, credited to each in the report), in
    order; None after an error (not a non-empty list of ids)."""
    out = []
    for n, cand in enumerate(candidates):
        extra = cand.get("also_systems")
        if extra is None:
            continue
        if not isinstance(extra, list) or not extra or not all(is_text(x) for x in extra):
            error(f"candidate {n + 1}: 'also_systems' must be a non-empty list of system ids")
            return None
        out += extra
    return out


class TwoCandidateKind(StudyKind):
    allows_tie = True
    candidates_key = "candidates"
    takes_merged = True  # a candidate may carry `also_systems` (its report credits them: report/merged.py)
    min_candidates, max_candidates = MIN_CANDIDATES, MAX_CANDIDATES

    def gold_flaw(self, n_systems: int, config: dict) -> str | None:
        """Why an item of `n_systems` candidates cannot hold gold, or None: with more than two,
        an annotator is shown two of them, which need not hold the gold answer."""
        if n_systems > MIN_CANDIDATES:
            return (f"'gold' needs an item with exactly 2 candidates (this one has {n_systems}; "
                    "an annotator is shown two of them)")
        return None

    def choice_options(self, config: dict, item_data: dict) -> list:
        """The candidate ids, then `tie` when the study allows it."""
        return [c["id"] for c in item_data["candidates"]] + ([TIE] if config.get("allow_tie") else [])

    def reserved_ids(self, config: dict) -> frozenset:
        """Ids a candidate may not take: they would read as a question id or `tie`."""
        return RESERVED_IDS | QUESTION_IDS | {q["id"] for q in self.questions(config, {"candidates": []})}

    def check_candidates(self, obj: dict, config: dict, error: Error) -> bool:
        """2 to 8 candidates {id, text} with distinct, storable ids; `gold` only with
        two (an annotator sees two of more, which need not hold the gold answer). False on error."""
        candidates, lo, hi = obj["candidates"], self.min_candidates, self.max_candidates
        if not isinstance(candidates, list) or not lo <= len(candidates) <= hi:
            count = len(candidates) if isinstance(candidates, list) else "not a list"
            error(f"'candidates' must be a list of {lo} to {hi}, got {count}")
            return False
        ids = []
        for n, cand in enumerate(candidates):
            if not isinstance(cand, dict) or not is_text(cand.get("id")) or not is_text(cand.get("text")):
                error(f"candidate {n + 1} must be an object with non-empty 'id' and 'text'")
                return False
            ids.append(cand["id"])
        also = also_systems(candidates, error)
        if also and not self.takes_merged:
            error(f"'also_systems' is not taken by {self.name} items (its report does not credit merged candidates)")
            return False
        if also is None:
            return False
        n_shown = len(ids)
        ids += also
        ok = True
        for n, cid in enumerate(ids):
            if cid in ids[:n] and n < n_shown:
                error(f"candidates {ids.index(cid) + 1} and {n + 1} have the same id {shown(cid)}")
                ok = False
            elif cid in ids[:n]:
                error(f"'also_systems' names {shown(cid)}, which is already a system of this item")
                ok = False
        if len(ids) > MAX_CANDIDATES:
            error(f"candidates and their also_systems name {len(ids)} systems; at most {MAX_CANDIDATES}")
            ok = False
        if "gold" in obj and (flaw := self.gold_flaw(len(ids), config)):
            error(flaw)
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

    def needs_study_pairs(self, item_data, config=None):
        return len(item_data.get("candidates") or []) > MIN_CANDIDATES

    def screen_size(self, config, item_data):
        return min(MIN_CANDIDATES, len(self.candidate_ids(item_data)))

    def shown_item(self, item_data, shown_order):
        """With more candidates than a screen shows: only those the assignment shows (item order)."""
        shown_ids = (shown_order or {}).get(CANDIDATES_KEY) or []
        candidates = item_data.get("candidates") or []
        if len(candidates) <= MIN_CANDIDATES or not MIN_CANDIDATES <= len(shown_ids) < len(candidates):
            return item_data
        return {**item_data, "candidates": [c for c in candidates if c.get("id") in shown_ids]}

    def shown_order(self, item_data, config, randomize, rng, previous_orders, study_pairs=None):
        ids = [c["id"] for c in item_data["candidates"]]
        if len(ids) > MIN_CANDIDATES:
            order = pair_order(ids, previous_orders, study_pairs or Counter(), randomize, rng)
        else:
            order = balanced_candidate_order(ids, previous_orders, rng) if randomize else ids
        shown = {CANDIDATES_KEY: order}
        for q in self.questions(config, self.shown_item(item_data, shown)):
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


class ReferenceChoiceKind(TwoCandidateKind):
    """Candidates for a user's request judged against the user's own text (`reference`) by
    one `choice` question (`choice_text`): ExPerT's alignment study and, with explanations,
    its explainability study. A subclass checks its own item keys in `check_extra`."""
    item_keys: tuple = ("input", "reference", "candidates")
    optional_item_keys = ("metric_scores",)
    bare_gold_question = CHOICE_QUESTION
    choice_text = ""

    def check_item(self, obj, config, error):
        candidates_ok = self.check_candidates(obj, config, error)
        texts_ok = self.check_texts(obj, ("input", "reference"), error)  # reported even when the candidates are not
        if candidates_ok and texts_ok:
            self.check_extra(obj, error)
            self.check_metric_scores(obj, error)

    def check_extra(self, obj, error):
        """The kind's own item keys, checked once the candidates and texts are valid."""

    def gold_answers(self, gold, questions, error):
        return {CHOICE_QUESTION: gold}  # a bare gold value is the `choice`

    def questions(self, config, item_data):
        return [{"id": CHOICE_QUESTION, "text": self.choice_text, "options": self.choice_options(config, item_data)}]

    def example_item(self, i):
        """Item i of the example study: candidates m1 and m2, ROUGE-L favouring m1 on even i."""
        return {"item_id": f"ex-{i}", "input": f"Write a review of film {i}.",
                "reference": f"My own review of film {i}.",
                "candidates": [{"id": "m1", "text": f"First response to request {i}."},
                               {"id": "m2", "text": f"Second response to request {i}."}],
                "metric_scores": {"rougeL": {"m1": 0.3, "m2": 0.2} if i % 2 == 0 else {"m1": 0.1, "m2": 0.4}}}
