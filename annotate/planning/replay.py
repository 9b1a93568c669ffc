"""The assignment engine's rules, replayed in memory for simulated studies.

Why not the database engine itself: a power analysis runs a thousand studies of hundreds of
assignments; through PostgreSQL that would take hours. The rules are few and are called,
not copied: the item an annotator gets is the first free item in the engine's order
(`ItemQuerySet.free_in`: fullest first, then import position, never one they already had,
never past the overlap), and what it shows in which order is the kind's own `shown_order`
with the study's pair counts (`pair_counts` of every earlier assignment), exactly the
arguments `annotate.assignment._store` passes. tests/test_design.py proves that this replay
and the database engine hand out identical assignments on seeded studies.
"""
from bisect import insort
from collections import Counter

from annotate.kinds import get_kind
from annotate.kinds.base import CANDIDATES_KEY


class ReplayEngine:
    """One simulated study's engine state. `order_rng(item, annotator)` gives the random
    source the engine seeds for that (item, annotator) (annotate.ordering.seeded_rng)."""

    def __init__(self, kind: str, items: list[dict], overlap: int, config: dict, randomize: bool, order_rng):
        self.kind, self.items, self.overlap = get_kind(kind), items, overlap
        self.config, self.randomize, self.order_rng = config, randomize, order_rng
        self.n_assigned = [0] * len(items)
        self.previous: list[list[dict]] = [[] for _ in items]
        self.study_pairs: Counter = Counter()
        self.had: dict[int, set[int]] = {}
        self.whole_study = [self.kind.needs_study_pairs(item, config) for item in items]
        # The engine's order, fullest first then position: free items by how many assignments
        # they hold (levels), each level in position order.
        self.levels: list[list[int]] = [list(range(len(items)))] + [[] for _ in range(overlap)]

    def _first_free(self, had: set[int]) -> int | None:
        for level in range(self.overlap - 1, -1, -1):
            for index in self.levels[level]:
                if index not in had:
                    return index
        return None

    def next(self, annotator: int):
        """(item index, shown_order) of the next assignment of `annotator`, or None."""
        had = self.had.setdefault(annotator, set())
        index = self._first_free(had)
        if index is None:
            return None
        pairs = self.study_pairs if self.whole_study[index] else None
        shown = self.kind.shown_order(self.items[index], self.config, self.randomize,
                                      self.order_rng(index, annotator), self.previous[index],
                                      **({} if pairs is None else {"study_pairs": pairs}))
        self.previous[index].append(shown)
        level = self.n_assigned[index]
        self.levels[level].remove(index)
        insort(self.levels[level + 1], index)
        self.n_assigned[index] = level + 1
        had.add(index)
        self.study_pairs.update(self.kind.study_screen_counts([(shown.get(CANDIDATES_KEY), 1)]))  # as the engine
        return index, shown
