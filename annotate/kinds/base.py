"""The interface of a study kind, and the value checks its modules share.

A kind is one object (a `StudyKind` subclass instance, registered in annotate.kinds) that
answers every question the rest of humeval asks about "a study of this kind": which
header and item keys it owns and how they are validated, which questions an item asks
and which answers they take, how the options are ordered for each annotator
(counterbalancing), what the annotator is shown (blinded) and with which template, and
what the report needs fetched and which report function (evaluation/report/) builds it.

Kind modules report validation problems through an `error(reason)` callable, so they do
not depend on how the batch validator collects and numbers them.
"""
import math
import unicodedata
from collections.abc import Callable

from evaluation.vocabulary import CHOICE_QUESTION, TIE, USEFULNESS_QUESTION

# Database columns an item's ids and answers end up in (annotate.models).
MAX_ID_CHARS = 200  # Item.item_id, Judgment.question/value, Prediction.evaluator/question/value
MAX_SHOWN_ORDER_CHARS = 500  # Judgment.shown_order: a question's options joined with "|"
MAX_INT = 2**31 - 1  # PostgreSQL integer columns (annotations_per_item, assignment_timeout_minutes)
MAX_SCALE_POINTS = 11  # the widest rating scale a page shows (issue 14: wider scales are refused)

# Keys of Assignment.shown_order that are not question ids.
CANDIDATES_KEY = "candidates"
PAIR_ORDER_KEY = "pair_order"
RESERVED_IDS = frozenset({TIE, PAIR_ORDER_KEY})
QUESTION_IDS = frozenset({CHOICE_QUESTION, USEFULNESS_QUESTION})

# What annotate.report_data can fetch for a report (StudyKind.report_needs).
NEEDS_CANDIDATES = "candidates"  # the two candidate ids of each item
NEEDS_METRIC_SCORES = "metric_scores"  # the items' metric_scores
NEEDS_EXPERT_SCORES = "expert_scores"  # the ExPerT score of each candidate's explanation
NEEDS_PAIR_TEXTS = "pair_texts"  # document, users and pairs (texts) of similarity items
NEEDS_SUBMIT_TIMES = "submit_times"  # judgments' submit times, in submit order

Error = Callable[[str], None]


# --- small value checks ---------------------------------------------------------------

def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value) -> bool:
    """A finite number that fits a double (so float() of it cannot overflow)."""
    if is_int(value):
        try:
            float(value)
        except OverflowError:
            return False
        return True
    return isinstance(value, float) and math.isfinite(value)


def is_text(value) -> bool:
    """A non-empty string (whitespace only counts as empty)."""
    return isinstance(value, str) and bool(value.strip())


def id_flaw(value) -> str | None:
    """Why a string cannot serve as a question id or an answer (candidate id, pair id,
    aspect key), or None. Ids are stored in 200-character columns, joined with '|' in
    shown_order, sent as form values and CSV cells (whose surrounding whitespace and line
    breaks do not survive), and compared after stripping (annotate.answers)."""
    if not is_text(value):
        return "must be a non-empty string"
    if len(value) > MAX_ID_CHARS:
        return f"is over {MAX_ID_CHARS} characters"
    if value in RESERVED_IDS or "|" in value:
        return "is reserved ('tie', 'pair_order') or contains '|'"
    if value != value.strip() or any(unicodedata.category(ch) == "Cc" for ch in value):
        return "starts or ends with whitespace or contains a control character"
    return None


def check_scale(value, name: str) -> str | None:
    """Why `value` is not a rating scale [min, max], or None."""
    if not (isinstance(value, list) and len(value) == 2 and all(is_int(v) for v in value)):
        return f"'{name}' must be [min, max] integers"
    if not all(-MAX_INT - 1 <= v <= MAX_INT for v in value):
        return f"'{name}' bounds must be integers from {-MAX_INT - 1} to {MAX_INT}"
    if value[0] >= value[1]:
        return f"'{name}' must have min < max, got {value}"
    if value[1] - value[0] + 1 > MAX_SCALE_POINTS:
        return f"'{name}' may have at most {MAX_SCALE_POINTS} points, got {value} ({value[1] - value[0] + 1} points)"
    return None


def scale_of(config: dict, key: str, default: tuple) -> tuple:
    """A study's rating scale (lo, hi) from its config, or the default."""
    scale = config.get(key) or default
    return int(scale[0]), int(scale[1])


# --- the interface --------------------------------------------------------------------

class StudyKind:
    """One study kind. Subclasses set the attributes and implement the methods marked
    below; a kind's questions are dicts {"id", "text", "options": [...]} (choices) or
    {"id", "text", "scale": [lo, hi]} (ratings)."""

    name: str = ""
    item_keys: tuple = ()  # required item keys (besides item_id, meta, gold)
    optional_item_keys: tuple = ()
    header_keys: tuple = ()  # kind-owned header keys, validated by header_config, kept in Study.config
    allows_tie: bool = False  # header `allow_tie` may be true
    option_noun: str = "Response"  # options read "<noun> A", "<noun> B"
    scale_words: tuple = ("", "")  # what the ends of a rating scale mean, for the page
    report_needs: frozenset = frozenset()  # NEEDS_* that annotate.report_data fetches
    # Question ids name item-level things (similarity pair ids): annotators get tokens for
    # them (annotate.blinding). Options other than `tie` are always tokens.
    blind_question_ids: bool = False
    # The kind's template draws each question inside the item (similarity pairs); otherwise
    # the questions go in the sticky answer bar of templates/annotate/_item.html.
    inline_questions: bool = False

    @property
    def template(self) -> str:
        """The partial that draws one item for an annotator."""
        return f"annotate/_{self.name}.html"

    @property
    def report_builder(self):
        """The report function (evaluation/report/) for this kind's studies."""
        from evaluation.report.build import BUILDERS

        return BUILDERS[self.name]

    # Batch validation ------------------------------------------------------------------

    def header_config(self, study: dict, error: Error) -> dict:
        """The kind-owned header keys present in `study`, validated: {key: stored value}."""
        return {}

    def check_item(self, obj: dict, config: dict, error: Error) -> None:
        """Check the kind's keys of one item line (all present); report through `error`."""
        raise NotImplementedError

    def check_texts(self, obj: dict, keys: tuple, error: Error) -> bool:
        """Each of `keys` is a non-empty string. False on error."""
        ok = True
        for key in keys:
            if not is_text(obj[key]):
                error(f"'{key}' must be a non-empty string")
                ok = False
        return ok

    def gold_answers(self, gold, questions: dict, error: Error) -> dict | None:
        """A bare (non-object) gold value as {question id: value}, or None after `error`."""
        error("'gold' must be an object {question id: answer}")
        return None

    # Questions and answers ---------------------------------------------------------------

    def questions(self, config: dict, item_data: dict) -> list[dict]:
        """The questions asked for one item; `config` is Study.config plus `allow_tie`."""
        raise NotImplementedError

    def report_config(self, config: dict) -> dict:
        """Study.config with the kind's defaults filled in, for the report."""
        return dict(config)

    # What the annotator sees ------------------------------------------------------------

    def shown_order(self, item_data: dict, config: dict, randomize: bool, rng, previous_orders: list) -> dict:
        """Assignment.shown_order for a new assignment (the counterbalancing unit).
        `previous_orders`: the shown_order of the item's earlier assignments."""
        raise NotImplementedError

    def display(self, item_data: dict, shown_order: dict) -> dict:
        """The item's fields an annotator sees, in their order. Blinded: no scores, gold,
        meta, sources or model names."""
        raise NotImplementedError

    def order_questions(self, questions: list[dict], shown_order: dict) -> list[dict]:
        """The questions in the order the annotator sees them."""
        return questions
