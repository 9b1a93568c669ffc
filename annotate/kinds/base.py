"""The interface of a study kind, and the value checks its modules share.

A kind is one object (a `StudyKind` subclass instance, registered in annotate.kinds) that
answers every question the rest of humeval asks about "a study of this kind": which
header and item keys it owns and how they are validated (and how the API schema describes
them), which questions an item asks and which answers they take, which candidates an item
holds and what the runtime may score, how its `metric_scores` become Prediction rows, how
the options are ordered for each annotator (counterbalancing), what the annotator is shown,
how that is blinded and with which template, what the report needs fetched, and an example
study (tests, the API schema) and a demo study (`manage.py demo`). Its report lives in
evaluation/report/kinds/<name>.py.

Kind modules report validation problems through an `error(reason)` callable, so they do
not depend on how the batch validator collects and numbers them.
"""
import math
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from evaluation.vocabulary import CHOICE_QUESTION, TIE, USEFULNESS_QUESTION

# Database columns an item's ids and answers end up in (annotate.models).
MAX_ID_CHARS = 200  # Item.item_id, Judgment.question/value, Prediction.evaluator/question/value
MAX_SHOWN_ORDER_CHARS = 500  # Judgment.shown_order: a question's options joined with "|"
MAX_INT = 2**31 - 1  # PostgreSQL integer columns (annotations_per_item, assignment_timeout_minutes)
MAX_SCALE_POINTS = 11  # the widest rating scale a page shows (issue 14: wider scales are refused)
OPTION_LETTERS = "ABCDEFGH"  # option labels by shown position: "<noun> A" ... "<noun> H"
PAIR_KEYS = (("1", "a"), ("2", "b"))  # the pairwise kinds' keys for the first and second option
TIE_KEYS = ("3", "t")

# Keys of Assignment.shown_order that are not question ids.
CANDIDATES_KEY = "candidates"
PAIR_ORDER_KEY = "pair_order"
RESERVED_IDS = frozenset({TIE, PAIR_ORDER_KEY})
QUESTION_IDS = frozenset({CHOICE_QUESTION, USEFULNESS_QUESTION})

# What annotate.reports.data can fetch for a report besides items, judgments and
# predictions (StudyKind.report_needs; the item keys a report reads are `report_item_keys`).
NEEDS_EXPERT_SCORES = "expert_scores"  # the ExPerT score of each candidate's explanation
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
    breaks do not survive), and compared after stripping (annotate.studies.answers)."""
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


@dataclass(frozen=True)
class ScoreTarget:
    """One output an automatic metric may score: the candidate's id and text, the text it is
    compared with (`reference`, "" when the item has none) and what it answers (`source`)."""

    candidate: str
    text: str
    reference: str = ""
    source: str = ""


# JSON Schema pieces the kinds describe their header and display fields with (the API schema).
SCALE_SCHEMA = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
TEXT_SCHEMA = {"type": "string"}


def pair_counts(rows) -> Counter:
    """{(first, second): n} from rows (shown candidates, n): the pairs shown, in their order."""
    counts: Counter = Counter()
    for pair, n in rows:
        if isinstance(pair, list) and len(pair) == 2:
            counts[tuple(pair)] += n
    return counts


# --- the interface --------------------------------------------------------------------

class StudyKind:
    """One study kind. Subclasses set the attributes and implement the methods marked
    below; a kind's questions are dicts {"id", "text", "options": [...]} (choices) or
    {"id", "text", "scale": [lo, hi]} (ratings)."""

    name: str = ""
    order: int = 100  # place in the registry (and the API's kind lists); then by name
    item_keys: tuple = ()  # required item keys (besides item_id, meta, gold)
    optional_item_keys: tuple = ()
    header_keys: tuple = ()  # kind-owned header keys, validated by header_config, kept in Study.config
    allows_tie: bool = False  # header `allow_tie` may be true
    option_noun: str = "Response"  # options read "<noun> A", "<noun> B"
    scale_words: tuple = ("", "")  # what the ends of a rating scale mean, for the page
    report_needs: frozenset = frozenset()  # NEEDS_* that annotate.reports.data fetches
    report_item_keys: tuple = ()  # top-level item keys the report reads (ReportInput.item_data)
    # The item key holding the candidates (a list of {id, text}, or one {id, text}); None
    # when items have none. The report, the importer's metric scores and the runtime read it.
    candidates_key: str | None = None
    source_key: str = "input"  # the item key a scored output answers (ScoreTarget.source)
    # A bare (non-object) gold value answers this question (None: every question); the
    # report's gold accuracy and the quality flags read gold the same way.
    bare_gold_question: str | None = None
    demo_slug: str = ""  # the slug of this kind's study in `manage.py demo`
    # JSON Schema of the kind-owned header keys and of the display fields (the API schema).
    header_schema: dict = {}
    display_schema: dict = {}
    # Question ids name item-level things (similarity pair ids): annotators get tokens for
    # them (annotate.desk.blinding). Options other than `tie` are always tokens.
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

    def aspects(self, config: dict) -> list[dict]:
        """The aspects ({"key", "question"}) its items are compared on, one choice question
        each (Per-DOC); [] for a kind without aspects. The runtime's PerSE judge reads them."""
        return []

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

    # Candidates, scores and what the runtime may score --------------------------------------

    def candidates(self, item_data: dict) -> list[dict]:
        """The item's candidates ({id, text, ...}) under `candidates_key`, in item order."""
        value = item_data.get(self.candidates_key) if self.candidates_key else None
        if isinstance(value, dict):
            return [value]
        return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []

    def candidate_ids(self, item_data: dict) -> list:
        return [c.get("id") for c in self.candidates(item_data)]

    def score_targets(self, item_data: dict) -> list[ScoreTarget]:
        """What an automatic metric may score in one item: each candidate against the
        item's `reference`, answering its `source_key` text."""
        reference, source = item_data.get("reference") or "", item_data.get(self.source_key) or ""
        return [ScoreTarget(str(c["id"]), c.get("text") or "", reference, source)
                for c in self.candidates(item_data) if "id" in c]

    def check_metric_scores(self, obj: dict, error: Error) -> None:
        """Optional `metric_scores` {metric: {candidate id: number}} (checked after the
        candidates are valid)."""
        if "metric_scores" not in obj:
            return
        scores = obj["metric_scores"]
        ids = set(self.candidate_ids(obj))
        if not isinstance(scores, dict):
            error("'metric_scores' must be an object {metric: {candidate id: number}}")
            return
        for metric, per_candidate in scores.items():
            if metric_name_flaw(metric, error):
                continue
            if not isinstance(per_candidate, dict) or not per_candidate:
                error(f"metric_scores[{metric!r}] must be an object {{candidate id: number}}")
            elif set(per_candidate) - ids:
                error(f"metric_scores[{metric!r}] names unknown candidates {sorted(set(per_candidate) - ids)}")
            else:
                check_score_values(metric, per_candidate.values(), error)

    def metric_score_rows(self, metric_scores: dict, item_data: dict) -> list[tuple[str, str, str]]:
        """A valid item's `metric_scores` as (metric, candidate id, value text): the
        Prediction rows (evaluator, question, value) the importer writes and the report reads."""
        return [(metric, cid, str(score)) for metric, per_candidate in (metric_scores or {}).items()
                for cid, score in per_candidate.items()]

    # Examples and the demo -----------------------------------------------------------------

    def example_header(self) -> dict:
        """The kind-owned header keys of the example study (tests, the API schema)."""
        return {}

    def example_item(self, i: int) -> dict:
        """Item line number i of the example study (texts vary with i; tests, the API schema)."""
        raise NotImplementedError

    def example_items(self) -> list[dict]:
        """The example study's two item lines."""
        return [self.example_item(i) for i in range(2)]

    def demo_batch(self) -> list[dict]:
        """The demo study's batch: a header line, then six or more items (one gold)."""
        raise NotImplementedError

    def allocation(self, config: dict, n_systems: int) -> str:
        """How the engine chose what each screen shows, in words (the datasheet)."""
        return "balanced (least-shown pair first)" if n_systems > 2 else "fixed"

    def demo_judgments(self) -> bytes | None:
        """Simulated judgments (an import_judgments file) that `manage.py demo` loads into the
        kind's demo study so its report shows at once; None: the study starts empty."""
        return None

    # What the annotator sees ------------------------------------------------------------

    def shown_order(self, item_data: dict, config: dict, randomize: bool, rng, previous_orders: list) -> dict:
        """Assignment.shown_order for a new assignment (the counterbalancing unit).
        `previous_orders`: the shown_order of the item's earlier assignments. A kind whose
        `needs_study_pairs` says so for this item also gets `study_pairs`: {(first,
        second): n} over the study's assignments (read under the study's lock)."""
        raise NotImplementedError

    def reversed_order(self, shown_order: dict) -> dict:
        """The shown order of a test-retest repeat (studies.md, "Repeats for test-retest"):
        the first showing's order reversed. Default: every list in `shown_order` reversed
        (the candidates, each question's options, a similarity survey's pair order and each
        pair's text order), with reserved options (`tie`) kept where they stood, so a
        pair's A/B swap and N outputs' permutation reverses while `tie` stays last."""
        def flipped(values):
            movable = iter([v for v in values if v not in RESERVED_IDS][::-1])
            return [v if v in RESERVED_IDS else next(movable) for v in values]

        return {key: flipped(value) if isinstance(value, list) else value for key, value in shown_order.items()}

    def needs_study_pairs(self, item_data: dict, config: dict | None = None) -> bool:
        """Whether the item's shown order depends on the whole study (an item with more than
        two candidates: which pair it shows). The engine then serializes on the study."""
        return False

    def shown_item(self, item_data: dict, shown_order: dict) -> dict:
        """The item as one assignment shows it (its questions, options, tokens and display
        are made from this): the item itself, or only the shown part of it."""
        return item_data

    def display(self, item_data: dict, shown_order: dict) -> dict:
        """The item's fields an annotator sees, in their order: no scores, gold, meta,
        sources or model names. Ids it shows are blinded by `blind_display`."""
        raise NotImplementedError

    def blind_display(self, display: dict, blinding) -> dict:
        """`display` with every id it shows replaced by the assignment's token
        (`blinding.option(id)` for options, `blinding.question(id)` for question ids)."""
        return display

    def page_display(self, display: dict, questions: dict, labels: dict) -> dict:
        """The blinded display as the task page's template reads it: `questions` are the
        page's questions by (token) id, `labels` the option labels by position."""
        return display

    def order_questions(self, questions: list[dict], shown_order: dict) -> list[dict]:
        """The questions in the order the annotator sees them."""
        return questions

    # Labels and keys of the options (the task page asks these, never a pairwise default) -------

    def option_label(self, position: int, option: str) -> str:
        """The label of the option at `position` (0-based, shown order) of a choice question:
        "<option_noun> A" ... "<option_noun> H", "Tie" for `tie`."""
        if option == TIE:
            return "Tie"
        return f"{self.option_noun} {OPTION_LETTERS[position]}" if position < len(OPTION_LETTERS) else option

    def option_labels(self) -> dict:
        """{position: label} of the shown candidates (what `page_display` labels them with)."""
        return {i: f"{self.option_noun} {letter}" for i, letter in enumerate(OPTION_LETTERS)}

    def option_keys(self, question_id: str, position: int, option: str) -> tuple:
        """The keyboard keys that pick the option at `position` of question `question_id`
        (lower case; the first is shown on the page): 1/A, 2/B and 3/T for `tie`."""
        if option == TIE:
            return TIE_KEYS
        return PAIR_KEYS[position] if position < len(PAIR_KEYS) else ()

    def key_help(self, config: dict) -> list[tuple[str, str]] | None:
        """Lines (keys, what they do) of the page's keyboard help for choices; None: the
        pairwise wording (1/2 or A/B, 3/T for a tie)."""
        return None

    # Answers of one screen, together ------------------------------------------------------------

    def answers_error(self, answers: dict, questions: dict, shown_item: dict) -> dict | None:
        """Why answers that are each valid cannot stand together on one screen, or None:
        {question id (or "answers"): message}. `answers` are real ids ({question id: stored
        value}); only those present are checked against each other (an edit or an import
        line may carry some of them; completeness is checked elsewhere). Every door calls
        it: the page and its edits, the REST API, import_judgments and a batch's gold."""
        return None

    def example_answers(self, questions: list[dict], pick: int = 0) -> dict:
        """Answers a test may give to the choice questions (`questions` with their options in
        shown order, real ids or tokens): the pick-th option of each; a kind whose answers of
        one screen must differ (answers_error) returns answers that pass it."""
        return {q["id"]: q["options"][pick % len(q["options"])] for q in questions if q.get("options")}

    def screen_size(self, config: dict, item_data: dict) -> int:
        """How many of the item's candidates one screen shows (import_judgments: a shown order
        naming fewer than all of them names the ones shown)."""
        return len(self.candidate_ids(item_data))

    def study_screen_counts(self, rows) -> dict:
        """What the study has shown, from rows (shown candidates, n) over its assignments:
        the `study_pairs` a kind that `needs_study_pairs` gets ({(first, second): n})."""
        return pair_counts(rows)

    # The annotator's comment (stored on every judgment of the item) --------------------------

    def comment_label(self, config: dict) -> str:
        """What the comment box is called on the task page."""
        return "Comment on this item (optional)"

    def comment_mode(self, config: dict) -> str:
        """`optional` (the default), `required` or `off` (no comment box, none taken)."""
        return "optional"

    def comment_error(self, config: dict, comment: str) -> str | None:
        """Why a submitted comment is refused under the study's comment mode, or None."""
        mode = self.comment_mode(config)
        if mode == "required" and not comment:
            return "not answered"
        if mode == "off" and comment:
            return "this study takes no comment"
        return None


def metric_name_flaw(metric, error: Error) -> bool:
    """True (after `error`) when `metric` cannot name a Prediction's evaluator."""
    if not metric.strip() or len(metric) > MAX_ID_CHARS:
        error(f"metric names must be non-empty (at most {MAX_ID_CHARS} characters)")
        return True
    return False


def check_score_values(metric: str, values, error: Error) -> None:
    """Scores must be finite numbers that a Prediction's value column holds."""
    values = list(values)
    if not all(is_number(v) for v in values):
        error(f"metric_scores[{metric!r}] values must be finite numbers")
    elif any(len(str(v)) > MAX_ID_CHARS for v in values):
        error(f"metric_scores[{metric!r}] values must be written in at most {MAX_ID_CHARS} characters")
