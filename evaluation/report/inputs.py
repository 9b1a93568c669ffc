"""The plain input of a report: one study's items, judgments and predictions as arrays.

The Django side (annotate/reports/data.py) fills this with one query per table; the
builders never touch a database, so they can be tested and benchmarked on their own.
Judgment, score and prediction rows point at items by index (`j_item`, `s_item`, ...)
into the item arrays, not by database id. Annotators and values also get integer codes
(`j_coder`, `j_vcode`) once, so the statistics never sort strings twice.

Candidates are one long table (`c_item`, `c_id`: any number per item, in item order);
`candidates` is its padded (n_items, width) view and `c_slot` each row's column in it.
Metric scores are prediction rows whose question is one of the item's candidate ids and
whose annotator is empty: they are split off here, once, into the long score table
(`s_item`, `s_metric`, `s_candidate`, `s_value`).
"I can't judge this" rows (question `_skip`) are taken out here, before anything is
coded, so no statistic ever sees them; `skipped` keeps their counts for the report.
"""
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.vocabulary import SKIP_QUESTION

FEW_LABELS = 16  # codes_of: up to this many distinct strings, compared elementwise
# A column given as a sequence or array; __post_init__ turns every one into an array.
Column = Any


@dataclass(frozen=True)
class Labelled:
    """A column already given as integer codes into distinct labels (a database can group
    rows by label), so that no pass over its values as Python objects is needed."""

    labels: np.ndarray  # object, distinct
    codes: np.ndarray  # int64 index into labels, one per row

    def __len__(self) -> int:
        return len(self.codes)

    def where(self, mask: np.ndarray) -> "Labelled":
        return Labelled(self.labels, self.codes[mask])


def objects(values: Sequence[Any] | np.ndarray | Labelled) -> np.ndarray:
    """A 1-d object array of `values` (strings stay Python strings)."""
    if isinstance(values, Labelled):
        return values.labels[values.codes] if len(values.labels) else np.empty(len(values.codes), dtype=object)
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        return values
    array = np.empty(len(values), dtype=object)
    array[:] = list(values)
    return array


def few_strings(values: np.ndarray) -> tuple[list[str], np.ndarray] | None:
    """(distinct values in first-seen order, index of each element's value among them) when
    they are at most FEW_LABELS strings, else None: one elementwise comparison (in C) per
    value found instead of hashing every element."""
    if len(set(values[:1000].tolist())) > FEW_LABELS:
        return None
    found: list[str] = []
    index = np.zeros(len(values), dtype=np.int64)
    left = np.ones(len(values), dtype=bool)
    at = 0
    while at < len(values):
        label = values[at]
        if len(found) == FEW_LABELS or type(label) is not str:
            return None
        same = values == label
        index += same * len(found)
        found.append(label)
        left &= ~same
        at = int(np.argmax(left)) if left.any() else len(values)
    return found, index


def codes_of(values: np.ndarray | Labelled) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct labels, integer code per element) of an object array; a dict pass,
    which beats sorting a large array of Python strings (or `few_strings`). A Labelled
    column only has its labels sorted (those that occur)."""
    if isinstance(values, Labelled):
        used = np.flatnonzero(np.bincount(values.codes, minlength=len(values.labels)))
        order = sorted(used.tolist(), key=lambda k: str(values.labels[k]))
        rank = np.zeros(len(values.labels), dtype=np.int64)
        rank[order] = np.arange(len(order))
        return objects(values.labels[order].tolist()), rank[values.codes]
    few = few_strings(values)
    if few is not None:
        found, index = few
        rank = np.argsort(np.argsort(np.array(found, dtype=object), kind="stable")) if found else index
        return objects(sorted(found)), rank[index]
    items = values.tolist()
    labels = sorted(dict.fromkeys(items), key=str)  # first-seen order among labels equal under str
    codes = dict(zip(labels, range(len(labels))))
    return objects(labels), np.fromiter(map(codes.__getitem__, items), dtype=np.int64, count=len(items))


def to_float(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Float array of number strings; anything that is not a number becomes NaN."""
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        out = np.empty(len(values), dtype=float)
        for i, v in enumerate(values):
            try:
                out[i] = float(v)
            except (TypeError, ValueError):
                out[i] = np.nan
        return out


@dataclass
class ReportInput:
    slug: str
    kind: str
    config: dict[str, Any]
    # Items, in import order.
    item_ids: np.ndarray  # object (str)
    is_gold: np.ndarray  # bool
    gold: Column  # the expected answer of gold items (a value or {question: value}); None elsewhere
    # Candidates: given as the long table (c_item, c_id) or as rows per item (`candidates`).
    candidates: Column = None  # object (n_items, width >= 2): each item's candidate ids, None-padded
    c_item: Column = None  # int index into items, one row per candidate, items in order
    c_id: Column = None  # object: the candidate id of each row
    item_data: Column = None  # the item keys a kind's report reads (StudyKind.report_item_keys) per item
    # Judgments.
    j_item: Column = None  # int index into items
    j_annotator: Column = None  # object (username)
    j_question: Column = None  # object
    j_value: Column = None  # object (str)
    j_shown: Column = None  # object ("a|b" or "")
    j_seconds: Column = None  # float, NaN = unknown
    j_time: Column = None  # float submit time (any comparable unit); default: row order
    # Metric scores, one row per (item, metric, candidate): rows given here (in-memory
    # inputs), then the score rows of the predictions (a later row wins a repeat).
    s_item: Column = None
    s_metric: Column = None
    s_candidate: Column = None
    s_value: Column = None
    # ExPerT scores from the explanation study's items' `explanations`: (item, candidate, score).
    e_item: Column = None
    e_candidate: Column = None
    e_value: Column = None
    # Predictions of automatic evaluators.
    p_item: Column = None
    p_evaluator: Column = None
    p_annotator: Column = None  # "" = for every annotator
    p_question: Column = None
    p_value: Column = None
    annotations_per_item: int = 3
    # Real items with `annotations_per_item` completed assignments, as the app counts them
    # (annotate/desk/progress.py); None = count real items judged by that many annotators.
    complete_items: int | None = None
    min_votes: int = 2  # non-gold judgments an item needs for a majority (statistics.md)
    # Annotators whose judgments were left out (below the study's quality thresholds): {name: reason}.
    excluded_annotators: dict[str, str] | None = None
    # Merged candidates (report/merged.py): {(item index, shown candidate id): [other system ids]}.
    merged: dict[tuple[int, str], list[str]] | None = None
    # Test-retest repeats (report/retest.py): {level: (annotators, first answers, repeat
    # answers)}, None when the study has none and asks for none (no `retest` key then).
    retest_pairs: dict[str, tuple[list, list, list]] | None = None
    max_flip_rate: float | None = None  # the study's quality.max_flip_rate
    # Pair allocation (report/allocation.py): {"policy", "min_per_pair", "shown": {"a|b": n},
    # "probability": {(item index, annotator): p}}; None: not read (no `allocation` key).
    allocation: dict[str, Any] | None = None

    # How items were drawn for humans (Item.offered / offer_probability; report/ppi/part.py):
    # whether humans were offered each item (default: all), and the probability it was drawn
    # with (NaN: not drawn at random, the default).
    item_offered: Column = None
    item_offer_probability: Column = None

    def __post_init__(self) -> None:
        self.item_ids = objects(self.item_ids)
        self.excluded_annotators = dict(self.excluded_annotators or {})
        self.is_gold = np.asarray(self.is_gold, dtype=bool)
        n = len(self.item_ids)
        self.item_offered = np.asarray(self.item_offered if self.item_offered is not None else np.ones(n), dtype=bool)
        self.item_offer_probability = to_float(self.item_offer_probability if self.item_offer_probability is not None
                                               else np.full(n, np.nan))
        self.gold = list(self.gold) if self.gold is not None else [None] * n
        self._candidate_table(n)
        self.item_data = self.item_data if self.item_data is not None else [{} for _ in range(n)]
        self.j_item = np.asarray(self.j_item if self.j_item is not None else [], dtype=np.int64)
        m = len(self.j_item)
        coded: dict[str, Labelled] = {}  # columns given as Labelled keep their codes (no pass over the strings)
        for name in ("j_annotator", "j_question", "j_value", "j_shown"):
            value = getattr(self, name)
            if isinstance(value, Labelled):
                coded[name] = value
            setattr(self, name, objects(value if value is not None else [""] * m))
        self.j_seconds = np.asarray(self.j_seconds if self.j_seconds is not None else np.full(m, np.nan), dtype=float)
        self.j_time = np.asarray(self.j_time if self.j_time is not None else np.arange(m), dtype=float)
        coded = self._take_out_skips(coded)
        self.s_item = np.asarray(self.s_item if self.s_item is not None else [], dtype=np.int64)
        self.s_metric = objects(self.s_metric if self.s_metric is not None else [])
        self.s_candidate = objects(self.s_candidate if self.s_candidate is not None else [])
        self.s_value = to_float(self.s_value if self.s_value is not None else [])
        self.e_item = np.asarray(self.e_item if self.e_item is not None else [], dtype=np.int64)
        self.e_candidate = objects(self.e_candidate if self.e_candidate is not None else [])
        self.e_value = to_float(self.e_value if self.e_value is not None else [])
        self.p_item = np.asarray(self.p_item if self.p_item is not None else [], dtype=np.int64)
        for name in ("p_evaluator", "p_annotator", "p_question", "p_value"):
            value = getattr(self, name)
            setattr(self, name, objects(value if value is not None else []))
        self._split_scores()
        self.annotator_names, self.j_coder = codes_of(coded.get("j_annotator") or self.j_annotator)
        self.value_names, self.j_vcode = codes_of(coded.get("j_value") or self.j_value)
        self.question_names, self.j_qcode = codes_of(coded.get("j_question") or self.j_question)

    def _candidate_table(self, n: int) -> None:
        """`c_item`, `c_id`, the padded view `candidates` and `c_slot`, from whichever was given."""
        if self.c_item is None:
            rows = np.asarray(self.candidates, dtype=object) if self.candidates is not None else None
            if rows is None or rows.size == 0:
                rows = np.full((n, 0), None, dtype=object)
            present = rows != None  # noqa: E711 (elementwise)
            self.c_item = np.nonzero(present)[0].astype(np.int64)
            self.c_id = objects(rows[present].tolist())
        else:
            self.c_item = np.asarray(self.c_item, dtype=np.int64)
            self.c_id = objects(self.c_id)
        counts = np.bincount(self.c_item, minlength=n) if len(self.c_item) else np.zeros(n, dtype=np.int64)
        starts = np.r_[0, np.cumsum(counts)[:-1]] if n else np.zeros(0, dtype=np.int64)
        width = max(2, int(counts.max()) if n else 0)
        order = np.argsort(self.c_item, kind="stable")  # item order; candidates keep their order
        self.c_item, self.c_id = self.c_item[order], self.c_id[order]
        self.c_slot = np.arange(len(self.c_item)) - starts[self.c_item]  # each row's place in its item
        self.candidates = np.full((n, width), None, dtype=object)
        self.candidates[self.c_item, self.c_slot] = self.c_id

    def item_candidates(self, item: int) -> list[Any]:
        """The candidate ids of one item, in item order (any number)."""
        return [c for c in self.candidates[item].tolist() if c is not None]

    def _split_scores(self) -> None:
        """`p_on_candidate` (the prediction's question is one of its item's candidate ids),
        `p_is_score` (... and it is for every annotator: a metric score), and the long score
        table: rows given as s_*, then the score rows of the predictions; rows whose value
        is not a number are dropped."""
        self.p_on_candidate = np.zeros(len(self.p_item), dtype=bool)
        for column in range(self.candidates.shape[1] if len(self.p_item) else 0):
            self.p_on_candidate |= self.p_question == self.candidates[self.p_item, column]
        self.p_is_score = self.p_on_candidate & (self.p_annotator == "")
        if self.p_is_score.any():
            self.s_item = np.concatenate([self.s_item, self.p_item[self.p_is_score]])
            self.s_metric = np.concatenate([self.s_metric, self.p_evaluator[self.p_is_score]])
            self.s_candidate = np.concatenate([self.s_candidate, self.p_question[self.p_is_score]])
            self.s_value = np.concatenate([self.s_value, to_float(self.p_value[self.p_is_score])])
        keep = ~np.isnan(self.s_value)
        if not keep.all():
            self.s_item, self.s_metric = self.s_item[keep], self.s_metric[keep]
            self.s_candidate, self.s_value = self.s_candidate[keep], self.s_value[keep]

    def shown_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(option shown first, option shown second) of every judgment row, from its
        shown_order ("a|b|tie"); None where fewer than two options were recorded. For a
        choice this is the pair of candidates the annotator compared."""
        orders, code = codes_of(self.j_shown)  # a few distinct orders: split each once
        parts = [str(s).split("|") if s else [] for s in orders.tolist()]
        first = objects([p[0] if len(p) >= 2 else None for p in parts])
        second = objects([p[1] if len(p) >= 2 else None for p in parts])
        return first[code], second[code]

    def _take_out_skips(self, coded: dict[str, Labelled]) -> dict[str, Labelled]:
        """Drops the `_skip` rows from the judgment columns (and from `coded`, returned);
        `skipped` = {n, by_reason}."""
        skip = self.j_question == SKIP_QUESTION
        reasons: dict[str, int] = {}
        for reason in self.j_value[skip].tolist():
            reasons[str(reason)] = reasons.get(str(reason), 0) + 1
        self.skipped = {"n": int(skip.sum()), "by_reason": dict(sorted(reasons.items()))}
        if skip.any():
            for name in ("j_item", "j_annotator", "j_question", "j_value", "j_shown", "j_seconds", "j_time"):
                setattr(self, name, getattr(self, name)[~skip])
            coded = {name: column.where(~skip) for name, column in coded.items()}
        return coded

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    def counted(self) -> np.ndarray:
        """Mask of judgment rows that count in statistics (gold items left out)."""
        return ~self.is_gold[self.j_item]


@dataclass
class Judgments:
    """A subset of judgment rows, with the same columns as ReportInput."""

    item: np.ndarray
    coder: np.ndarray
    vcode: np.ndarray
    qcode: np.ndarray
    annotator: np.ndarray
    question: np.ndarray
    value: np.ndarray
    shown: np.ndarray
    seconds: np.ndarray
    time: np.ndarray
    question_names: Column = None  # labels of qcode
    value_names: Column = None  # labels of vcode

    @classmethod
    def of(cls, inp: ReportInput, mask: np.ndarray) -> "Judgments":
        return cls(inp.j_item[mask], inp.j_coder[mask], inp.j_vcode[mask], inp.j_qcode[mask], inp.j_annotator[mask],
                   inp.j_question[mask], inp.j_value[mask], inp.j_shown[mask], inp.j_seconds[mask], inp.j_time[mask],
                   question_names=inp.question_names, value_names=inp.value_names)

    def where(self, mask: np.ndarray) -> "Judgments":
        """The rows where `mask` holds; these same rows when it holds everywhere (a study
        with one question), since nobody writes to the columns."""
        if mask.dtype == bool and mask.all():
            return self
        labels = ("question_names", "value_names")
        rows = {f: getattr(self, f)[mask] for f in self.__dataclass_fields__ if f not in labels}
        return Judgments(**rows, question_names=self.question_names, value_names=self.value_names)

    def of_question(self, question: str) -> "Judgments":
        """The rows of one question (compared by code, not by string)."""
        names = self.question_names.tolist()
        return self.where(self.qcode == (names.index(question) if question in names else -1))

    def __len__(self) -> int:
        return len(self.item)
