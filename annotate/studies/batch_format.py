"""The one validator of batch files (studies.md), shared by every import door.

Pure Python, no database: it reads a JSONL file line by line (bounded memory), checks the
header and each item against its kind, and yields normalized rows or `line N: reason`
errors (N = 1-based line of the file). Checks that need the database (existing study,
existing item_ids, known usernames) live in `annotate.studies.importing`.
"""
import re
from dataclasses import dataclass, field
from functools import cached_property

from annotate.kinds import KINDS, all_kinds, get_kind
from annotate.kinds.base import (
    MAX_ID_CHARS,
    MAX_INT,
    MAX_SHOWN_ORDER_CHARS,
    is_int,
    is_number,
    is_text,
)
from annotate.participants.comprehension import comprehension_flaw
from annotate.studies.allocation import ALLOCATION_HEADER_KEYS, allocation_config
from annotate.studies.answers import InvalidAnswer, answer_value, shown, typed_answer
from annotate.studies.human_items import CONFIG_KEY as HUMAN_ITEMS
from annotate.studies.human_items import HUMAN_ITEM_KEYS, header_settings
from annotate.studies.json_lines import canonical_hash, parse_json_object
from evaluation.screens.answer_checks import InputError, check_retest

MAX_ERRORS = 1000
SLUG_RE = re.compile(r"^[-a-zA-Z0-9_]{1,100}$")
COMMON_ITEM_KEYS = ("item_id", "meta", "gold", "practice", "feedback")
NOT_DISPLAY_KEYS = ("item_id", "meta", "gold", "practice", "feedback")
COMMON_HEADER_KEYS = ("slug", "kind", "title", "instructions", "annotations_per_item", "randomize_order",
                      "allow_tie")
EXTRA_HEADER_KEYS = ("annotators", "researchers", "gold_rate", "min_seconds", "assignment_timeout_minutes",
                     "min_votes", "retest")
# Participants from recruiting platforms (interfaces.md; docs/running-a-study.md).
RECRUITMENT_KEYS = ("platform", "places", "screenout_code", "per_address", "hold_minutes", "quality_gate")
PARTICIPANT_HEADER_KEYS = ("status", "consent", "completion_code", "completion_url", "max_items_per_participant",
                           "pre_questions", "post_questions", "quality", "recruitment",
                           "comprehension")
RECRUITMENT_PLATFORMS = ("prolific", "mturk", "link")
STATUSES = ("draft", "open", "paused", "closed")
QUESTION_TYPES = ("text", "choice", "number")
QUALITY_KEYS = ("min_gold_accuracy", "min_median_seconds", "fast_seconds", "max_fast_submits", "max_flip_rate")
CODE_RE = re.compile(r"^[A-Za-z0-9_-]{1,100}\Z")  # \Z: no trailing newline slips through
KEY_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
# Kind-owned keys (aspects, scale, usefulness_scale) in alphabetical order between the two.
HEADER_KEYS = (COMMON_HEADER_KEYS + tuple(sorted({k for kind in all_kinds() for k in kind.header_keys}))
               + EXTRA_HEADER_KEYS + ALLOCATION_HEADER_KEYS + PARTICIPANT_HEADER_KEYS + HUMAN_ITEM_KEYS)


class BatchInvalid(Exception):
    """A refused file: `errors` is the list of `line N: reason` strings to show (at most
    MAX_ERRORS, then '... and N more'); `total` counts every error found."""

    def __init__(self, errors):
        super().__init__("\n".join(errors))
        self.errors = list(errors)
        self.total = getattr(errors, "total", len(self.errors))


class ErrorList(list):
    """Collects errors, keeping the first MAX_ERRORS and counting the rest."""

    dropped = 0

    def add(self, line, reason):
        if len(self) < MAX_ERRORS:
            self.append(f"line {line}: {reason}")
        else:
            self.dropped += 1

    def extend_from(self, errors):
        for err in errors:
            if len(self) < MAX_ERRORS:
                self.append(err)
            else:
                self.dropped += 1

    def final(self):
        return ErrorReport(list(self) + ([f"... and {self.dropped} more"] if self.dropped else []),
                           total=len(self) + self.dropped)


class ErrorReport(list):
    """The errors to show, and `total`: how many were found (the page and the command say
    "16856 errors", not the 1001 lines shown)."""

    def __init__(self, errors, total):
        super().__init__(errors)
        self.total = total


@dataclass
class Header:
    """A validated study header. `config` holds the kind-owned keys as stored."""

    slug: str
    kind: str
    title: str = ""
    instructions: str = ""
    annotations_per_item: int = 3
    randomize_order: bool = True
    allow_tie: bool = False
    config: dict = field(default_factory=dict)
    annotators: list | None = None  # usernames, None = open to the annotators group
    researchers: list | None = None  # usernames, None = open to the researchers group
    extra: dict = field(default_factory=dict)  # gold_rate, min_seconds, ..., the participant keys
    given: frozenset = frozenset()  # header keys present in the file

    @property
    def question_config(self):
        """The config the kind's questions read: Study.config plus allow_tie."""
        return dict(self.config, allow_tie=self.allow_tie)

    @cached_property
    def study_kind(self):
        return get_kind(self.kind)


@dataclass
class ItemRow:
    """One valid item line, ready to insert."""

    line: int
    item_id: str
    data: dict
    meta: object
    gold: dict  # normalized {question: value}, or None
    source: dict  # the parsed line
    metric_scores: dict  # {metric: {candidate id: number}}
    practice: bool = False  # shown to participants first, answer revealed, never stored
    feedback: str = ""

    @property
    def content_hash(self):
        return canonical_hash(self.source)

    @property
    def is_gold(self):
        return self.gold is not None


# --- header ------------------------------------------------------------------------------

def parse_header(obj, line=1):
    """Validate the header object. Returns (Header or None, [errors])."""
    errors = ErrorList()
    if set(obj) != {"study"} or not isinstance(obj.get("study"), dict):
        errors.add(line, 'the header must be {"study": {...}}')
        return None, errors.final()
    study = obj["study"]

    def error(reason):
        errors.add(line, reason)

    for key in sorted(set(study) - set(HEADER_KEYS)):
        error(f"unknown header key '{key}' (allowed: {', '.join(HEADER_KEYS)})")
    header = _header_core(study, error)
    _header_kind_keys(study, header, error)
    known = isinstance(header.kind, str) and header.kind in KINDS
    header.config.update(allocation_config(study, header.study_kind if known else None, header.question_config, error))
    _header_extra(study, header, error)
    _header_participants(study, header, error)
    if (human := header_settings(study, header.slug, error)) is not None:  # which items humans are offered
        header.config[HUMAN_ITEMS] = human
    return (None if errors else header), errors.final()


def _header_core(study, error):
    """slug, kind, title, instructions, annotations_per_item, randomize_order, allow_tie."""
    slug, kind = study.get("slug"), study.get("kind")
    if not (isinstance(slug, str) and SLUG_RE.match(slug)):
        error("'slug' must be 1-100 letters, digits, '-' or '_'")
    if not isinstance(kind, str) or kind not in KINDS:
        error(f"'kind' must be one of {', '.join(KINDS)}, got {shown(kind)}")
    header = Header(slug=slug, kind=kind, given=frozenset(study))
    if "title" in study:
        if not is_text(study["title"]) or len(study["title"]) > 300:
            error("'title' must be a non-empty string of at most 300 characters")
        else:
            header.title = study["title"]
    if "instructions" in study:
        if not isinstance(study["instructions"], str):
            error("'instructions' must be a string")
        else:
            header.instructions = study["instructions"]
    if "annotations_per_item" in study:
        value = study["annotations_per_item"]
        if not is_int(value) or value < 1:
            error(f"'annotations_per_item' must be an integer >= 1, got {shown(value)}")
        elif value > MAX_INT:
            error(f"'annotations_per_item' must be at most {MAX_INT}, got {shown(value)}")
        else:
            header.annotations_per_item = value
    for key in ("randomize_order", "allow_tie"):
        if key in study:
            if not isinstance(study[key], bool):
                error(f"'{key}' must be true or false")
            else:
                setattr(header, key, study[key])
    return header


def _header_kind_keys(study, header, error):
    """The kind-owned keys (aspects, scale, usefulness_scale) and allow_tie's kind."""
    if header.kind not in KINDS:
        return
    kind = header.study_kind
    if header.allow_tie and not kind.allows_tie:
        error(f"'allow_tie' applies to pairwise kinds, not {kind.name}")
    for key in sorted(set(study) - set(kind.header_keys)):
        owners = [k.name for k in all_kinds() if key in k.header_keys]
        if owners:
            error(f"'{key}' applies to {' and '.join(owners)} studies, not {kind.name}")
    header.config.update(kind.header_config(study, error))


def _header_user_lists(study, header, error):
    """`annotators` and `researchers`: who may annotate / read results (annotate/access.py)."""
    for key in ("annotators", "researchers"):
        if key not in study:
            continue
        names = study[key]
        if not (isinstance(names, list) and all(is_text(n) for n in names)):
            error(f"'{key}' must be a list of usernames")
        elif len(set(names)) != len(names):
            error(f"'{key}' lists a username twice")
        else:
            setattr(header, key, list(names))


def _header_extra(study, header, error):
    """Optional study settings beyond the spec (documented in docs/formats.md)."""
    _header_user_lists(study, header, error)
    if "gold_rate" in study:
        value = study["gold_rate"]
        if not (is_number(value) and 0 <= value <= 1):
            error("'gold_rate' must be a number in [0, 1]")
        else:
            header.extra["gold_rate"] = float(value)
    if "min_seconds" in study:
        value = study["min_seconds"]
        if not (value is None or (is_number(value) and value >= 0)):
            error("'min_seconds' must be a number >= 0 or null")
        else:
            header.extra["min_seconds"] = value
    if "assignment_timeout_minutes" in study:
        value = study["assignment_timeout_minutes"]
        if not (is_int(value) and 1 <= value <= MAX_INT):
            error(f"'assignment_timeout_minutes' must be an integer from 1 to {MAX_INT}")
        else:
            header.extra["assignment_timeout_minutes"] = value
    if "min_votes" in study:  # statistics.md, "Majority label"; kept in Study.config
        value = study["min_votes"]
        if not (is_int(value) and 1 <= value <= MAX_INT):
            error(f"'min_votes' must be an integer from 1 to {MAX_INT}")
        else:
            header.config["min_votes"] = value
    if "retest" in study:  # test-retest repeats (annotate/desk/retest.py); kept in Study.config
        try:
            header.config["retest"] = check_retest(study["retest"])
        except InputError as exc:
            error(f"'retest': {exc}")


def _header_participants(study, header, error):
    """status, consent, completion code and URL, quota, pre/post questions, quality."""
    checks = {
        "status": (lambda v: v in STATUSES, f"one of {', '.join(STATUSES)}"),
        "consent": (lambda v: isinstance(v, str), "a string (Markdown)"),
        "completion_code": (lambda v: isinstance(v, str) and CODE_RE.match(v),
                            "1-100 letters, digits, '-' or '_'"),
        "completion_url": (lambda v: isinstance(v, str) and len(v) <= 500 and v.startswith(("https://", "http://"))
                           and not any(c.isspace() for c in v), "an http(s) URL of at most 500 characters"),
        "max_items_per_participant": (lambda v: is_int(v) and 1 <= v <= MAX_INT,
                                      f"an integer from 1 to {MAX_INT}"),
    }
    for key, (ok, what) in checks.items():
        if key in study:
            if ok(study[key]):
                header.extra[key] = study[key]
            else:
                error(f"'{key}' must be {what}")
    for key in ("pre_questions", "post_questions"):
        if key in study:
            reason = question_list_flaw(study[key])
            if reason:
                error(f"'{key}' {reason}")
            else:
                header.extra[key] = study[key]
    if "comprehension" in study:
        if reason := comprehension_flaw(study["comprehension"], KEY_RE, MAX_ID_CHARS):
            error(f"'comprehension' {reason}")
        else:
            header.extra["comprehension"] = study["comprehension"]
    if "recruitment" in study:
        _header_recruitment(study, header, error)
    if "quality" in study:
        quality = study["quality"]
        flips = quality.get("max_flip_rate", 0) if isinstance(quality, dict) else 0
        if not (is_number(flips) and 0 <= flips <= 1):  # test-retest (annotate/desk/retest.py)
            error("'quality.max_flip_rate' must be a number in [0, 1]")
        elif not (isinstance(quality, dict) and set(quality) <= set(QUALITY_KEYS)
                  and all(is_number(v) and v >= 0 for v in quality.values())
                  and quality.get("min_gold_accuracy", 0) <= 1
                  and ("fast_seconds" in quality) == ("max_fast_submits" in quality)):
            error("'quality' must be {\"min_gold_accuracy\": number in [0, 1], \"min_median_seconds\": number >= 0,"
                  " \"fast_seconds\": number >= 0, \"max_fast_submits\": number >= 0} (all optional; the last two"
                  " together)")
        else:
            header.extra["quality"] = quality


def _count_ok(value) -> bool:
    """Absent, or a whole number from 1 to the largest PostgreSQL integer."""
    return value is None or (is_int(value) and 1 <= value <= MAX_INT)


def recruitment_flaw(value) -> str | None:
    """Why a `recruitment` value is not {"platform", "places"?, "screenout_code"?,
    "per_address"?, "hold_minutes"?, "quality_gate"?}, or None (the batch header and the
    Django admin check it here)."""
    get = value.get if isinstance(value, dict) else (lambda key: None)
    code, gate = get("screenout_code"), get("quality_gate")
    counts_ok = all(_count_ok(get(key)) for key in ("places", "per_address", "hold_minutes"))
    if (isinstance(value, dict) and set(value) <= set(RECRUITMENT_KEYS)
            and get("platform") in RECRUITMENT_PLATFORMS and counts_ok
            and (code is None or (isinstance(code, str) and CODE_RE.match(code)))
            and gate in (None, True, False)):
        if gate and not code:  # the gate hands out the screen-out code: never nothing for the work done
            return "'recruitment' with \"quality_gate\": true needs a \"screenout_code\""
        return None
    return (f"'recruitment' must be {{\"platform\": one of {', '.join(RECRUITMENT_PLATFORMS)}, \"places\", "
            f"\"per_address\", \"hold_minutes\": integers from 1 to {MAX_INT}, \"screenout_code\": 1-100 letters, "
            "digits, '-' or '_', \"quality_gate\": true or false (all but platform optional)}")


def _header_recruitment(study, header, error):
    """`recruitment` (interfaces.md, "Launch-safe recruitment"). A study that lists its
    annotators cannot recruit."""
    value = study["recruitment"]
    if reason := recruitment_flaw(value):
        error(reason)
    elif "annotators" in study:
        error("'recruitment' cannot be combined with 'annotators': a study that lists its annotators takes no "
              "participants from links")
    else:
        header.extra["recruitment"] = value


def question_list_flaw(questions):
    """Why a pre/post question list is invalid, or None. Each question is {key, question,
    type: text|choice|number, options (choice only: non-empty strings)}, keys unique."""
    if not isinstance(questions, list):
        return "must be a list of {key, question, type, options?}"
    keys = set()
    for n, q in enumerate(questions, 1):
        if not isinstance(q, dict) or not set(q) <= {"key", "question", "type", "options"}:
            return f"question {n} must be an object with key, question, type and (for choice) options"
        if not (isinstance(q.get("key"), str) and KEY_RE.match(q["key"])) or q["key"] in keys:
            return f"question {n}: 'key' must be 1-64 letters, digits, '-' or '_', unique"
        keys.add(q["key"])
        if not is_text(q.get("question")) or len(q["question"]) > 1000:
            return f"question {n}: 'question' must be a non-empty string of at most 1000 characters"
        if q.get("type") not in QUESTION_TYPES:
            return f"question {n}: 'type' must be one of {', '.join(QUESTION_TYPES)}"
        options = q.get("options")
        if (q["type"] == "choice") != (options is not None):
            return f"question {n}: 'options' is required for choice questions and only for them"
        if options is not None and not (isinstance(options, list) and options
                                        and all(is_text(o) and len(o) <= MAX_ID_CHARS for o in options)
                                        and len(set(options)) == len(options)):
            return f"question {n}: 'options' must be distinct non-empty strings"
    return None


# --- items -------------------------------------------------------------------------------

def check_item(obj, header, line):
    """Validate one parsed item line against the header. Returns (ItemRow or None, [errors])."""
    errors = ErrorList()

    def error(reason):
        errors.add(line, reason)

    kind = header.study_kind
    item_id = obj.get("item_id")
    if not is_text(item_id) or len(item_id) > MAX_ID_CHARS:
        error("'item_id' must be a non-empty string of at most 200 characters")
    allowed = set(COMMON_ITEM_KEYS) | set(kind.item_keys) | set(kind.optional_item_keys)
    for key in sorted(set(obj) - allowed):
        error(f"unknown key '{key}' for {kind.name} (free data goes in 'meta')")
    for key in kind.item_keys:
        if key not in obj:
            error(f"missing key '{key}'")
    if not errors:
        kind.check_item(obj, header.question_config, error)
    if errors:
        return None, errors.final()
    data = {k: v for k, v in obj.items() if k not in NOT_DISPLAY_KEYS}
    questions = {q["id"]: q for q in kind.questions(header.question_config, data)}
    _check_storable(questions, error)
    gold = normalize_gold(obj["gold"], header, questions, error) if "gold" in obj and not errors else None
    practice = obj.get("practice", False)
    if practice not in (True, False):
        error("'practice' must be true or false")
    elif practice and gold is None and not errors:
        error("a practice item needs 'gold' (the answer revealed after answering)")
    if "feedback" in obj and not (isinstance(obj["feedback"], str) and len(obj["feedback"]) <= 5000):
        error("'feedback' must be a string of at most 5000 characters")
    if errors:
        return None, errors.final()
    return ItemRow(line=line, item_id=item_id, data=data, meta=obj.get("meta"), gold=gold,
                   source=obj, metric_scores=obj.get("metric_scores") or {}, practice=practice is True,
                   feedback=obj.get("feedback", "")), []


def _check_storable(questions, error):
    """Question ids and options fit Judgment.question/value, and a question's options
    joined with '|' fit Judgment.shown_order."""
    for qid, question in questions.items():
        options = question.get("options") or []
        if len(qid) > MAX_ID_CHARS or any(len(o) > MAX_ID_CHARS for o in options):
            error(f"question {shown(qid)}: ids and options must be at most {MAX_ID_CHARS} characters")
        elif len("|".join(options)) > MAX_SHOWN_ORDER_CHARS:
            error(f"question {shown(qid)}: its options joined with '|' exceed {MAX_SHOWN_ORDER_CHARS} characters")


def normalize_gold(gold, header, questions, error):
    """Gold as {question: answer}, each answer checked and normalized by annotate.studies.answers
    (ratings kept as integers). A bare value means what the kind says (`choice`, or
    every aspect); a kind of ratings per pair needs an object {pair id: rating}."""
    if not isinstance(gold, dict):
        gold = header.study_kind.gold_answers(gold, questions, error)
        if gold is None:
            return None
    if not gold:
        error("'gold' must not be empty")
        return None
    normalized = {}
    for qid, value in gold.items():
        question = questions.get(qid)
        if question is None:
            error(f"'gold' names unknown question {shown(qid)} (questions: {', '.join(questions)})")
            continue
        try:
            normalized[qid] = typed_answer(question, answer_value(question, value))
        except InvalidAnswer as exc:
            error(f"'gold' for {qid!r} {exc.reason}")
    problems = header.study_kind.answers_error({q: str(v) for q, v in normalized.items()}, questions, {})
    for qid, message in (problems or {}).items():  # e.g. a gold best that is also the gold worst
        error(f"'gold' for {qid!r}: {message}")
    return normalized


def iter_items(numbered_lines, header):
    """Yield ItemRow or a list of errors for each item line (after the header)."""
    for number, text, error in numbered_lines:
        if error:
            yield [f"line {number}: {error}"]
            continue
        obj, reason = parse_json_object(text)
        if reason:
            yield [f"line {number}: {reason}"]
            continue
        if header is None:  # header was bad: still report what can be checked alone
            if not is_text(obj.get("item_id")):
                yield [f"line {number}: 'item_id' must be a non-empty string of at most 200 characters"]
            continue
        row, errors = check_item(obj, header, number)
        yield errors if errors else row


def read_header(numbered_lines):
    """Read the first non-blank line as the header: (line, Header or None, [errors])."""
    for number, text, error in numbered_lines:
        if error:
            return number, None, [f"line {number}: {error}"]
        obj, reason = parse_json_object(text)
        if reason:
            return number, None, [f"line {number}: {reason}"]
        header, errors = parse_header(obj, number)
        return number, header, errors
    return 1, None, ["line 1: empty file, expected a study header"]
