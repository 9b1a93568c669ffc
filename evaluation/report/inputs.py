"""The plain input of a report: one study's items, judgments and predictions as arrays.

The Django side (annotate/report_data.py) fills this with one query per table; the
builders here never touch a database, so they can be tested and benchmarked on their own.
Judgment and prediction rows point at items by index (`j_item`, `p_item`) into the item
arrays, not by database id.
"""
from dataclasses import dataclass, field

import numpy as np


def _objects(values):
    array = np.empty(len(values), dtype=object)
    array[:] = list(values)
    return array


@dataclass
class ReportInput:
    slug: str
    kind: str
    config: dict
    # Items (one entry each, in import order).
    item_ids: np.ndarray  # object (str)
    is_gold: np.ndarray  # bool
    gold: list  # None, a value, or {question: value}
    item_data: list  # dicts: candidates [ids], metric_scores, expert_scores, document, users, pairs
    # Judgments.
    j_item: np.ndarray  # int64 index into items
    j_annotator: np.ndarray  # object (username)
    j_question: np.ndarray  # object
    j_value: np.ndarray  # object (str)
    j_shown: np.ndarray  # object ("a|b" or "")
    j_seconds: np.ndarray  # float64, NaN = unknown
    j_time: np.ndarray = None  # float64 submit time (epoch seconds), NaN = unknown; order of judging
    # Predictions of automatic evaluators.
    p_item: np.ndarray = None
    p_evaluator: np.ndarray = None
    p_annotator: np.ndarray = None  # "" = for every annotator
    p_question: np.ndarray = None
    p_value: np.ndarray = None
    complete_items: int = None  # items with all their annotations (None = count from judgments)
    annotations_per_item: int = 3

    def __post_init__(self):
        self.item_ids = _objects(self.item_ids)
        self.is_gold = np.asarray(self.is_gold, dtype=bool)
        for name in ("j_annotator", "j_question", "j_value", "j_shown"):
            setattr(self, name, _objects(getattr(self, name)))
        self.j_item = np.asarray(self.j_item, dtype=np.int64)
        self.j_seconds = np.asarray(self.j_seconds, dtype=float)
        if self.j_time is None:
            self.j_time = np.arange(len(self.j_item), dtype=float)
        self.j_time = np.asarray(self.j_time, dtype=float)
        if self.p_item is None:
            self.p_item = np.zeros(0, dtype=np.int64)
            for name in ("p_evaluator", "p_annotator", "p_question", "p_value"):
                setattr(self, name, _objects([]))
        self.p_item = np.asarray(self.p_item, dtype=np.int64)
        for name in ("p_evaluator", "p_annotator", "p_question", "p_value"):
            setattr(self, name, _objects(getattr(self, name)))

    @property
    def n_items(self):
        return len(self.item_ids)

    def judged_non_gold(self):
        """Mask of judgment rows that count in statistics (gold items left out)."""
        return ~self.is_gold[self.j_item] if len(self.j_item) else np.zeros(0, dtype=bool)


@dataclass
class Judgments:
    """A filtered view of judgment rows (same meaning as the ReportInput columns)."""

    item: np.ndarray
    annotator: np.ndarray
    question: np.ndarray
    value: np.ndarray
    shown: np.ndarray
    seconds: np.ndarray
    time: np.ndarray = field(default=None)

    @classmethod
    def of(cls, inp, mask=None):
        if mask is None:
            mask = slice(None)
        return cls(inp.j_item[mask], inp.j_annotator[mask], inp.j_question[mask], inp.j_value[mask],
                   inp.j_shown[mask], inp.j_seconds[mask], inp.j_time[mask])

    def where(self, mask):
        return Judgments(self.item[mask], self.annotator[mask], self.question[mask], self.value[mask],
                         self.shown[mask], self.seconds[mask], self.time[mask])

    def __len__(self):
        return len(self.item)
