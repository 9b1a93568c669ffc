"""The base of the kinds that show several outputs of an item on one screen (studies.md,
"Several outputs on one screen"): 3 to 8 candidates with unique ids, labelled A, B, C, ...
by the kind (never the pairwise defaults), shown in a recorded, balanced permutation.

`shown_order[CANDIDATES_KEY]` lists every candidate shown, in shown order, and each choice
question's options follow it. Balance: each position, first to last, goes to the candidate
shown there least often on this item so far (a seeded draw among ties), so over an item's
assignments every candidate leads about equally often. A kind that shows only part of an
item per screen (best-worst tuples) narrows `screen_candidates`; the engine then passes
what the whole study has shown (`study_screen_counts`: {shown set (sorted ids): n}).
Gold: allowed when one screen shows all of the item's candidates.
"""
from collections import Counter
from functools import lru_cache
from itertools import permutations

import numpy as np

from annotate.kinds.base import CANDIDATES_KEY, OPTION_LETTERS
from annotate.kinds.two_candidate import TwoCandidateKind

MIN_SHOWN, MAX_SHOWN = 3, len(OPTION_LETTERS)
DIGITS = "123456789"
EXHAUSTIVE = 6  # 720 permutations; 8 candidates (40,320) are balanced position by position


def position_counts(previous_orders: list) -> Counter:
    """{(position, candidate id): how many earlier assignments showed it there}."""
    counts: Counter = Counter()
    for order in previous_orders:
        for position, cid in enumerate((order or {}).get(CANDIDATES_KEY) or []):
            counts[(position, cid)] += 1
    return counts


@lru_cache(maxsize=EXHAUSTIVE + 1)
def _permutations(n: int) -> np.ndarray:
    return np.array(list(permutations(range(n))), dtype=np.int64).reshape(-1, n)


def balanced_permutation(ids: list, previous_orders: list, rng) -> list:
    """`ids` permuted so that candidates go where they were shown least on this item: up to
    EXHAUSTIVE candidates, a permutation with the smallest sum of position_counts (a seeded
    draw among ties: over n assignments of n candidates a Latin square); beyond, each
    position in turn gets the remaining candidate least often shown there."""
    counts = position_counts(previous_orders)
    if len(ids) <= EXHAUSTIVE:
        perms = _permutations(len(ids))  # (n!, n): candidate index at each position
        shown_at = np.array([[counts[(p, cid)] for cid in ids] for p in range(len(ids))])
        costs = shown_at[np.arange(len(ids)), perms].sum(axis=1)
        best = np.flatnonzero(costs == costs.min())
        row = int(best[rng.randrange(len(best))]) if len(best) > 1 else int(best[0])
        return [ids[k] for k in perms[row]]
    left, order = list(ids), []
    for position in range(len(ids)):
        fewest = min(counts[(position, cid)] for cid in left)
        tied = [cid for cid in left if counts[(position, cid)] == fewest]
        pick = tied[rng.randrange(len(tied))] if len(tied) > 1 else tied[0]
        order.append(pick)
        left.remove(pick)
    return order


def set_counts(rows) -> Counter:
    """{shown set (sorted ids): n} from rows (shown candidates, n) over a study's assignments."""
    counts: Counter = Counter()
    for shown_ids, n in rows:
        if isinstance(shown_ids, list) and shown_ids:
            counts[tuple(sorted(map(str, shown_ids)))] += n
    return counts


class AllShownKind(TwoCandidateKind):
    """N outputs on one screen. A subclass sets its questions (each a choice among the shown
    candidates), `answers_error`, `option_keys`/`key_help` and its display."""

    allows_tie = False
    takes_merged = False  # the report counts each shown output once
    min_candidates = MIN_SHOWN
    option_noun = "Output"

    def screen_candidates(self, ids: list, config: dict, study_sets: Counter | None, rng) -> list:
        """Which of the item's candidate ids (item order) the next screen shows: all of them."""
        return list(ids)

    def max_screen(self, config: dict) -> int:
        """The most candidates one screen shows."""
        return MAX_SHOWN

    def screen_size(self, config, item_data):
        return min(len(self.candidate_ids(item_data)), self.max_screen(config))

    def needs_study_pairs(self, item_data, config=None):
        """Only when a screen shows part of the item: which part depends on the whole study."""
        return len(self.candidate_ids(item_data)) > self.max_screen(config or {})

    def gold_flaw(self, n_systems, config):
        if n_systems > self.max_screen(config):
            return (f"'gold' needs an item whose candidates are all shown on one screen (this one has "
                    f"{n_systems}; a screen shows {self.max_screen(config)})")
        return None

    def allocation(self, config, n_systems):
        if n_systems > self.max_screen(config):
            return (f"tuples of {self.max_screen(config)} outputs from a balanced incomplete block design, the tuple "
                    "the study showed least first; outputs permuted, balanced per item")
        return "every output on one screen, permuted (balanced per item)"

    def study_screen_counts(self, rows):
        return set_counts(rows)

    def shown_order(self, item_data, config, randomize, rng, previous_orders, study_pairs=None):
        ids = [c["id"] for c in item_data["candidates"]]
        shown_ids = self.screen_candidates(ids, config, study_pairs, rng)
        order = balanced_permutation(shown_ids, previous_orders, rng) if randomize else shown_ids
        shown = {CANDIDATES_KEY: order}
        for q in self.questions(config, self.shown_item(item_data, shown)):
            if "options" in q:
                shown[q["id"]] = list(order)
        return shown

    def shown_item(self, item_data, shown_order):
        """Only the candidates the screen shows (item order), when it shows fewer than all."""
        shown_ids = (shown_order or {}).get(CANDIDATES_KEY) or []
        candidates = item_data.get("candidates") or []
        if not MIN_SHOWN <= len(shown_ids) < len(candidates):
            return item_data
        return {**item_data, "candidates": [c for c in candidates if c.get("id") in shown_ids]}

    def example_answers(self, questions, pick=0):
        """The n-th choice question gets option pick + n: answers of one screen differ."""
        choices = [q for q in questions if q.get("options")]
        return {q["id"]: q["options"][(pick + n) % len(q["options"])] for n, q in enumerate(choices)}

    def option_keys(self, question_id, position, option):
        """Digits 1-9 by position (a subclass with several questions gives each its own row)."""
        return (DIGITS[position],) if position < len(DIGITS) else ()

    def key_help(self, config):
        return [("1 … 8", "choose the output at that position for the current question")]

    # What the all-shown kinds share beyond the screen: the display, the example and the demo's items

    def display(self, item_data, shown_order):
        return {"input": item_data.get("input", ""), "reference": item_data.get("reference", ""),
                "candidates": self.display_candidates(item_data, shown_order)}

    def example_item(self, i):
        """Item i of the example study: four outputs m1-m4; ROUGE-L ranks m1 > m2 > m3 > m4 on even i."""
        scores = [0.4, 0.3, 0.2, 0.1] if i % 2 == 0 else [0.1, 0.4, 0.3, 0.2]
        return {"item_id": f"ex-{i}", "input": f"Write a review of film {i}.",
                "reference": f"My own review of film {i}.",
                "candidates": [{"id": f"m{k}", "text": f"Response {k} to request {i}."} for k in range(1, 5)],
                "metric_scores": {"rougeL": {f"m{k}": scores[k - 1] for k in range(1, 5)}}}

    def demo_items(self, prefix: str, n_items: int, texts_of, gold) -> list[dict]:
        """The demo study's item lines: `<prefix>-NN` for NN in 1..n_items from `texts_of(index)`
        = (request, the user's own text, {system: text}), scored by unigram F1 against the
        user's text; then `gold-<prefix>`, four outputs with the kind's `gold` answer."""
        from annotate.studies.demo_data import unigram_f1

        lines = []
        for index in range(n_items):
            request, own, texts = texts_of(index)
            lines.append({"item_id": f"{prefix}-{index + 1:02d}", "input": request, "reference": own,
                          "candidates": [{"id": system, "text": text} for system, text in texts.items()],
                          "metric_scores": {"unigram_f1": {s: round(unigram_f1(t, own), 4) for s, t in texts.items()}},
                          "meta": {"demo": True, "simulated": True}})
        lines.append({"item_id": f"gold-{prefix}", "input": "Write a one-line reminder to buy milk.",
                      "reference": "Buy milk on the way home.",
                      "candidates": [{"id": "profile-rag", "text": "Buy milk on the way home."},
                                     {"id": "bm25-k2", "text": "Remember to buy milk today."},
                                     {"id": "no-profile", "text": "Milk is a dairy product."},
                                     {"id": "generic-lm", "text": "The French Revolution began in 1789."}],
                      "gold": gold, "meta": {"demo": True}})
        return lines
