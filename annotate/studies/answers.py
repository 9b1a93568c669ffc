"""The one rule for what counts as an answer to a question, and how it is stored.

Every door that takes answers asks `answer_value`: the web form and the REST submit
(annotate.desk.submission), `import_judgments` and the option part of predictions
(annotate.studies.judgments_io), the gold answers of a batch (annotate.studies.batch_format), and the
reason of an "I can't judge this" skip (`SKIP`, a question whose options are the skip
reasons: annotate.desk.submission.skip and `_skip` rows of a judgments file). So the
same raw value gets the same verdict everywhere (docs/formats.md, "Answers"):

- surrounding whitespace is ignored; an empty value is no answer;
- a choice is one of the question's options (candidate ids, `tie` when allowed), given
  as text, or as a JSON number when the option is that number's shortest text (2, 2.0: "2");
- a full order (a question with `"order": true`: the listwise rank order's) ranks every one of
  the question's options once, best first, as text `a>b=c>d` or as a JSON list (ties, where
  the question allows them, as lists inside it); it is stored as the text
  (evaluation.screens.answer_checks.order_answer); a partial or repeated order is refused;
- a rating is an integer within the scale, written in ASCII digits with an optional sign
  and an optional fraction of zeros ("4", "+4", "04", "4.0", 4, 4.0 are all 4); anything
  else ("4.5", "1e0", "1_0", "٤", true, NaN) is refused. It is stored as "4".

Pure Python, no database, so the batch validator can use it too.
"""
import math
import re

from annotate.studies.judgments_csv import format_number
from evaluation.screens.answer_checks import InputError, order_answer
from evaluation.vocabulary import SKIP_QUESTION, SKIP_REASON_IDS

INTEGER_TEXT = re.compile(r"[+-]?([0-9]+)(?:\.0+)?")
MAX_DIGITS = 12  # longer integers are out of any scale (scales are bounded by 2**31)
SHOWN_CHARS = 60  # how much of a refused value an error message repeats
# What an annotator is told about a refused choice: never the option ids, which are
# candidate ids (model names); annotators see opaque tokens (annotate.desk.blinding).
OPTION_REFUSED = "must be one of the options shown"
ORDER_REFUSED = "rank every output shown exactly once (a partial or repeated order is refused)"


def shown(value) -> str:
    """repr of a value for an error message, cut to SHOWN_CHARS characters."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"


def is_empty(raw) -> bool:
    """No answer: None, or text that is empty after stripping whitespace."""
    return raw is None or (isinstance(raw, str) and not raw.strip())


class InvalidAnswer(ValueError):
    """`raw` is not a valid answer to `question`. `reason` repeats the value (for
    researchers' files); `for_annotator` does not (for the task page and the API)."""

    def __init__(self, question: dict, raw, detail: str = ""):
        self.question, self.raw, self.detail = question, raw, detail
        super().__init__(self.reason)

    @property
    def expected(self) -> str:
        if self.question.get("order"):
            return f"a full order of {list(self.question['options'])}, best first (a>b>c)"
        if "options" in self.question:
            return f"one of {list(self.question['options'])}"
        lo, hi = self.question["scale"]
        return f"an integer in [{lo}, {hi}]"

    @property
    def reason(self) -> str:
        if self.detail:
            return f"{self.detail}; got {shown(self.raw)}"
        return f"must be {self.expected}, got {shown(self.raw)}"

    @property
    def for_annotator(self) -> str:
        if is_empty(self.raw):
            return "not answered"
        if self.question.get("order"):  # the detail names real ids: an annotator sees tokens only
            return ORDER_REFUSED
        if "options" in self.question:
            return OPTION_REFUSED
        lo, hi = self.question["scale"]
        return f"must be an integer from {lo} to {hi}"


# "I can't judge this" as a question: its answer is one of the skip reasons.
SKIP = {"id": SKIP_QUESTION, "options": list(SKIP_REASON_IDS)}


def _rating(raw):
    """The integer a raw rating stands for, or None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        return int(raw) if math.isfinite(raw) and raw.is_integer() else None
    if isinstance(raw, str):
        match = INTEGER_TEXT.fullmatch(raw.strip())
        if match and len(match.group(1)) <= MAX_DIGITS:
            return int(match.group(0).split(".")[0])
    return None


def _choice(raw):
    """The option text a raw choice stands for, or None. A JSON number stands for its
    shortest text (2 and 2.0 are "2"), as it does in a judgments JSONL file."""
    if isinstance(raw, str):
        return raw.strip()
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int) or (isinstance(raw, float) and math.isfinite(raw)):
        return format_number(raw)
    return None


def answer_value(question: dict, raw) -> str:
    """The stored text of `raw` as an answer to `question` ({"options": [...]} or
    {"scale": [lo, hi]}), or raise InvalidAnswer."""
    if question.get("order"):
        if is_empty(raw):
            raise InvalidAnswer(question, raw)
        try:
            return order_answer(raw, question["options"], bool(question.get("ties")))
        except InputError as exc:
            raise InvalidAnswer(question, raw, str(exc)) from None
    if "options" in question:
        value = _choice(raw)
        if value is None or value not in question["options"]:
            raise InvalidAnswer(question, raw)
        return value
    lo, hi = question["scale"]
    number = _rating(raw)
    if number is None or not lo <= number <= hi:
        raise InvalidAnswer(question, raw)
    return str(number)


def typed_answer(question: dict, value: str):
    """A stored answer as a JSON value (gold answers): ratings as integers, choices as text."""
    return value if "options" in question else int(value)
