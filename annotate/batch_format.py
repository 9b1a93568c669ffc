"""The one validator of batch files (studies.md), shared by every import door.

Pure Python, no database: it reads a JSONL file line by line (bounded memory), checks the
header and each item against its kind, and yields normalized rows or `line N: reason`
errors (N = 1-based line of the file). Checks that need the database (existing study,
existing item_ids, known usernames) live in `annotate.importing`.
"""
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from functools import cached_property

from .kinds import (
    ASPECT_PAIRWISE, CHOICE_QUESTION, DEFAULT_SCALE, DEFAULT_USEFULNESS_SCALE, EXPLANATION_CHOICE,
    KINDS, PAIRWISE_KINDS, SIMILARITY_SURVEY, TIE, TWO_CANDIDATE_KINDS, USEFULNESS_QUESTION,
    questions_for,
)

MAX_ERRORS = 1000
SLUG_RE = re.compile(r"^[-a-zA-Z0-9_]{1,100}$")
REQUIRED_ITEM_KEYS = {
    "pairwise_alignment": ("input", "reference", "candidates"),
    "explanation_choice": ("input", "reference", "candidates", "explanations"),
    "similarity_survey": ("document", "users", "pairs"),
    "aspect_pairwise": ("premise", "candidates"),
}
OPTIONAL_ITEM_KEYS = {
    "pairwise_alignment": ("metric_scores",),
    "explanation_choice": ("metric_scores",),
    "similarity_survey": (),
    "aspect_pairwise": ("metric_scores",),
}
COMMON_ITEM_KEYS = ("item_id", "meta", "gold")
NOT_DISPLAY_KEYS = ("item_id", "meta", "gold")
HEADER_KEYS = ("slug", "kind", "title", "instructions", "annotations_per_item", "randomize_order",
               "allow_tie", "aspects", "scale", "usefulness_scale", "annotators",
               "gold_rate", "min_seconds", "assignment_timeout_minutes")
EXPLANATION_KEYS = ("score", "aspects_reference", "aspects_generated", "matches")
RESERVED_IDS = {TIE, "pair_order"}


class BatchInvalid(Exception):
    """A refused file: `errors` is the full list of `line N: reason` strings."""

    def __init__(self, errors):
        super().__init__("\n".join(errors))
        self.errors = list(errors)


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
        return list(self) + ([f"... and {self.dropped} more"] if self.dropped else [])


@dataclass
class Header:
    """A validated study header. `config` holds aspects/scale/usefulness_scale as stored."""

    slug: str
    kind: str
    title: str = ""
    instructions: str = ""
    annotations_per_item: int = 3
    randomize_order: bool = True
    allow_tie: bool = False
    config: dict = field(default_factory=dict)
    annotators: list = None  # usernames, None = open to the annotators group
    extra: dict = field(default_factory=dict)  # gold_rate, min_seconds, assignment_timeout_minutes
    given: frozenset = frozenset()  # header keys present in the file

    @property
    def question_config(self):
        """What `kinds.questions_for` needs."""
        return dict(self.config, allow_tie=self.allow_tie)

    @cached_property
    def reserved_ids(self):
        """Ids a candidate may not take: they would read as a question id or `tie`."""
        questions = questions_for(self.kind, self.question_config, {"candidates": []})
        return RESERVED_IDS | {CHOICE_QUESTION, USEFULNESS_QUESTION} | {q["id"] for q in questions}


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

    @property
    def content_hash(self):
        return canonical_hash(self.source)

    @property
    def is_gold(self):
        return self.gold is not None


def canonical_hash(obj):
    """sha256 of the canonical JSON of a parsed line (key order and spacing don't matter)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def iter_lines(binary_file):
    """Yield (line number, text or None, error or None) for every non-blank line."""
    for number, raw in enumerate(binary_file, 1):
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            yield number, None, "not valid UTF-8"
            continue
        if text.strip():
            yield number, text, None


def unstorable_text(value):
    """Why a parsed JSON value cannot be stored (PostgreSQL text/jsonb refuse NUL, UTF-8
    has no lone surrogates), or None. Checks every string, keys included."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, str):
            if "\x00" in current:
                return "text contains a NUL character (\\u0000), which cannot be stored"
            try:
                current.encode("utf-8")
            except UnicodeEncodeError:
                return "text contains an unpaired surrogate (\\ud800-\\udfff), which is not valid Unicode"
        elif isinstance(current, dict):
            stack.extend(current)
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return None


def parse_json_object(text):
    """(object, None) or (None, reason)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"bad JSON: {exc.msg} at column {exc.colno}"
    except RecursionError:
        return None, "bad JSON: nested too deeply"
    if not isinstance(obj, dict):
        return None, f"expected a JSON object, got {type(obj).__name__}"
    if "\\u" in text:  # NUL and lone surrogates can only arrive as \u escapes
        reason = unstorable_text(obj)
        if reason:
            return None, reason
    return obj, None


# --- small type checks -----------------------------------------------------------------

def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)


def is_text(value):
    """A non-empty string (whitespace only counts as empty)."""
    return isinstance(value, str) and bool(value.strip())


def check_scale(value, name):
    if not (isinstance(value, list) and len(value) == 2 and all(is_int(v) for v in value)):
        return f"'{name}' must be [min, max] integers"
    if value[0] >= value[1]:
        return f"'{name}' must have min < max, got {value}"
    return None


# --- header ------------------------------------------------------------------------------

def parse_header(obj, line=1):
    """Validate the header object. Returns (Header or None, [errors])."""
    errors = ErrorList()
    if set(obj) != {"study"} or not isinstance(obj.get("study"), dict):
        errors.add(line, 'the header must be {"study": {...}}')
        return None, errors.final()
    study = obj["study"]
    for key in sorted(set(study) - set(HEADER_KEYS)):
        errors.add(line, f"unknown header key '{key}' (allowed: {', '.join(HEADER_KEYS)})")
    slug, kind = study.get("slug"), study.get("kind")
    if not (isinstance(slug, str) and SLUG_RE.match(slug)):
        errors.add(line, "'slug' must be 1-100 letters, digits, '-' or '_'")
    if kind not in KINDS:
        errors.add(line, f"'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
    header = Header(slug=slug, kind=kind, given=frozenset(study))
    if "title" in study:
        if not is_text(study["title"]) or len(study["title"]) > 300:
            errors.add(line, "'title' must be a non-empty string of at most 300 characters")
        else:
            header.title = study["title"]
    if "instructions" in study:
        if not isinstance(study["instructions"], str):
            errors.add(line, "'instructions' must be a string")
        else:
            header.instructions = study["instructions"]
    if "annotations_per_item" in study:
        value = study["annotations_per_item"]
        if not is_int(value) or value < 1:
            errors.add(line, f"'annotations_per_item' must be an integer >= 1, got {value!r}")
        else:
            header.annotations_per_item = value
    for key in ("randomize_order", "allow_tie"):
        if key in study:
            if not isinstance(study[key], bool):
                errors.add(line, f"'{key}' must be true or false")
            else:
                setattr(header, key, study[key])
    if header.allow_tie and kind in KINDS and kind not in TWO_CANDIDATE_KINDS:
        errors.add(line, f"'allow_tie' applies to pairwise kinds, not {kind}")
    _header_config(study, kind, header, errors, line)
    if "annotators" in study:
        names = study["annotators"]
        if not (isinstance(names, list) and all(is_text(n) for n in names)):
            errors.add(line, "'annotators' must be a list of usernames")
        elif len(set(names)) != len(names):
            errors.add(line, "'annotators' lists a username twice")
        else:
            header.annotators = list(names)
    _header_extra(study, header, errors, line)
    return (None if errors else header), errors.final()


def _header_config(study, kind, header, errors, line):
    """The kind-specific keys: aspects, scale, usefulness_scale."""
    owners = {"aspects": ASPECT_PAIRWISE, "scale": SIMILARITY_SURVEY, "usefulness_scale": EXPLANATION_CHOICE}
    for key, owner in owners.items():
        if key in study and kind in KINDS and kind != owner:
            errors.add(line, f"'{key}' applies to {owner} studies, not {kind}")
    if kind == ASPECT_PAIRWISE and "aspects" in study:
        aspects = study["aspects"]
        good = isinstance(aspects, list) and aspects and all(
            isinstance(a, dict) and set(a) == {"key", "question"} and is_text(a["key"]) and is_text(a["question"])
            for a in aspects)
        if not good:
            errors.add(line, "'aspects' must be a non-empty list of {\"key\", \"question\"} with non-empty strings")
        elif len({a["key"] for a in aspects}) != len(aspects):
            errors.add(line, "'aspects' keys must be unique")
        elif any(a["key"] in RESERVED_IDS or "|" in a["key"] for a in aspects):
            errors.add(line, "aspect keys may not be 'tie', 'pair_order' or contain '|'")
        else:
            header.config["aspects"] = aspects
    for key, owner, default in (("scale", SIMILARITY_SURVEY, DEFAULT_SCALE),
                                ("usefulness_scale", EXPLANATION_CHOICE, DEFAULT_USEFULNESS_SCALE)):
        if kind == owner and key in study:
            reason = check_scale(study[key], key)
            if reason:
                errors.add(line, reason)
            else:
                header.config[key] = list(study[key])


def _header_extra(study, header, errors, line):
    """Optional study settings beyond the spec (documented in docs/formats.md)."""
    if "gold_rate" in study:
        value = study["gold_rate"]
        if not (is_number(value) and 0 <= value <= 1):
            errors.add(line, "'gold_rate' must be a number in [0, 1]")
        else:
            header.extra["gold_rate"] = float(value)
    if "min_seconds" in study:
        value = study["min_seconds"]
        if not (value is None or (is_number(value) and value >= 0)):
            errors.add(line, "'min_seconds' must be a number >= 0 or null")
        else:
            header.extra["min_seconds"] = value
    if "assignment_timeout_minutes" in study:
        value = study["assignment_timeout_minutes"]
        if not (is_int(value) and value >= 1):
            errors.add(line, "'assignment_timeout_minutes' must be an integer >= 1")
        else:
            header.extra["assignment_timeout_minutes"] = value


# --- items -------------------------------------------------------------------------------

def check_item(obj, header, line):
    """Validate one parsed item line against the header. Returns (ItemRow or None, [errors])."""
    errors = ErrorList()
    kind = header.kind
    item_id = obj.get("item_id")
    if not is_text(item_id) or len(item_id) > 200:
        errors.add(line, "'item_id' must be a non-empty string of at most 200 characters")
    allowed = set(COMMON_ITEM_KEYS) | set(REQUIRED_ITEM_KEYS[kind]) | set(OPTIONAL_ITEM_KEYS[kind])
    for key in sorted(set(obj) - allowed):
        errors.add(line, f"unknown key '{key}' for {kind} (free data goes in 'meta')")
    for key in REQUIRED_ITEM_KEYS[kind]:
        if key not in obj:
            errors.add(line, f"missing key '{key}'")
    if errors:
        return None, errors.final()
    if kind in TWO_CANDIDATE_KINDS:
        _check_candidates(obj, header, errors, line)
    if kind in PAIRWISE_KINDS:
        for key in ("input", "reference"):
            if not is_text(obj[key]):
                errors.add(line, f"'{key}' must be a non-empty string")
    if kind == ASPECT_PAIRWISE and not is_text(obj["premise"]):
        errors.add(line, "'premise' must be a non-empty string")
    if kind == SIMILARITY_SURVEY:
        _check_similarity(obj, errors, line)
    if errors:
        return None, errors.final()
    if kind == EXPLANATION_CHOICE:
        _check_explanations(obj, errors, line)
    if "metric_scores" in obj:
        _check_metric_scores(obj, errors, line)
    data = {k: v for k, v in obj.items() if k not in NOT_DISPLAY_KEYS}
    gold = None
    if "gold" in obj and not errors:
        gold = normalize_gold(obj["gold"], header, data, errors, line)
    if errors:
        return None, errors.final()
    return ItemRow(line=line, item_id=item_id, data=data, meta=obj.get("meta"), gold=gold,
                   source=obj, metric_scores=obj.get("metric_scores") or {}), []


def _check_candidates(obj, header, errors, line):
    candidates = obj["candidates"]
    if not isinstance(candidates, list) or len(candidates) != 2:
        count = len(candidates) if isinstance(candidates, list) else "not a list"
        errors.add(line, f"'candidates' must be a list of exactly 2, got {count}")
        return
    ids = []
    for n, cand in enumerate(candidates):
        if not isinstance(cand, dict) or not is_text(cand.get("id")) or not is_text(cand.get("text")):
            errors.add(line, f"candidate {n + 1} must be an object with non-empty 'id' and 'text'")
            return
        ids.append(cand["id"])
    if ids[0] == ids[1]:
        errors.add(line, f"the two candidates have the same id {ids[0]!r}")
    reserved = header.reserved_ids
    for cid in ids:
        if cid in reserved or "|" in cid or len(cid) > 200:
            errors.add(line, f"candidate id {cid!r} is reserved or contains '|' (or is over 200 characters)")


def _check_similarity(obj, errors, line):
    document, users, pairs = obj["document"], obj["users"], obj["pairs"]
    if not (isinstance(document, dict) and is_text(document.get("id")) and is_text(document.get("text"))):
        errors.add(line, "'document' must be an object with non-empty 'id' and 'text'")
    elif "title" in document and not isinstance(document["title"], str):
        errors.add(line, "'document.title' must be a string")
    if not (isinstance(users, list) and len(users) == 2 and all(is_text(u) for u in users)):
        errors.add(line, "'users' must be a list of exactly 2 non-empty user ids")
    elif users[0] == users[1]:
        errors.add(line, "'users' must be 2 different user ids")
    if not isinstance(pairs, list) or not pairs:
        errors.add(line, "'pairs' must be a non-empty list")
        return
    seen, n_reference = set(), 0
    for n, pair in enumerate(pairs, 1):
        where = f"pair {n}"
        if not isinstance(pair, dict):
            errors.add(line, f"{where} must be an object")
            continue
        pid = pair.get("id")
        if not is_text(pid) or pid in RESERVED_IDS or "|" in pid or len(pid) > 200:
            errors.add(line, f"{where}: 'id' must be a non-empty string (not 'tie'/'pair_order', no '|')")
        elif pid in seen:
            errors.add(line, f"{where}: duplicate pair id {pid!r}")
        else:
            seen.add(pid)
        if pair.get("source") not in ("reference", "model"):
            errors.add(line, f"{where}: 'source' must be 'reference' or 'model'")
        n_reference += pair.get("source") == "reference"
        texts = pair.get("texts")
        if not (isinstance(texts, list) and len(texts) == 2 and all(is_text(t) for t in texts)):
            errors.add(line, f"{where}: 'texts' must be exactly 2 non-empty strings")
        for key in ("model", "prompt_style"):
            if key in pair and not isinstance(pair[key], str):
                errors.add(line, f"{where}: '{key}' must be a string")
    if n_reference != 1:
        errors.add(line, f"'pairs' must have exactly one pair with source 'reference', got {n_reference}")


def _check_explanations(obj, errors, line):
    explanations = obj["explanations"]
    ids = [c["id"] for c in obj["candidates"]]
    if not isinstance(explanations, dict) or set(explanations) != set(ids):
        errors.add(line, f"'explanations' must be an object with exactly the candidate ids {ids}")
        return
    for cid in ids:
        exp = explanations[cid]
        if not isinstance(exp, dict):
            errors.add(line, f"explanation of {cid!r} must be an object")
            continue
        missing = [k for k in EXPLANATION_KEYS if k not in exp]
        if missing:
            errors.add(line, f"explanation of {cid!r} is missing {', '.join(missing)}")
            continue
        if not is_number(exp["score"]):
            errors.add(line, f"explanation of {cid!r}: 'score' must be a number")
        for key in EXPLANATION_KEYS[1:]:
            if not isinstance(exp[key], list):
                errors.add(line, f"explanation of {cid!r}: '{key}' must be a list")


def _check_metric_scores(obj, errors, line):
    scores = obj["metric_scores"]
    ids = {c["id"] for c in obj["candidates"]}
    if not isinstance(scores, dict):
        errors.add(line, "'metric_scores' must be an object {metric: {candidate id: number}}")
        return
    for metric, per_candidate in scores.items():
        if not metric.strip() or len(metric) > 200:
            errors.add(line, "metric names must be non-empty (at most 200 characters)")
        elif not isinstance(per_candidate, dict) or not per_candidate:
            errors.add(line, f"metric_scores[{metric!r}] must be an object {{candidate id: number}}")
        elif set(per_candidate) - ids:
            errors.add(line, f"metric_scores[{metric!r}] names unknown candidates {sorted(set(per_candidate) - ids)}")
        elif not all(is_number(v) for v in per_candidate.values()):
            errors.add(line, f"metric_scores[{metric!r}] values must be finite numbers")


def normalize_gold(gold, header, data, errors, line):
    """Gold as {question: value}. A bare value means `choice` (pairwise kinds) or every
    aspect (aspect_pairwise); similarity_survey needs an object {pair id: rating}."""
    questions = {q["id"]: q for q in questions_for(header.kind, header.question_config, data)}
    if not isinstance(gold, dict):
        if header.kind in PAIRWISE_KINDS:
            gold = {CHOICE_QUESTION: gold}
        elif header.kind == ASPECT_PAIRWISE:
            gold = {qid: gold for qid in questions}
        else:
            errors.add(line, "'gold' must be an object {pair id: rating}")
            return None
    if not gold:
        errors.add(line, "'gold' must not be empty")
        return None
    for qid, value in gold.items():
        question = questions.get(qid)
        if question is None:
            errors.add(line, f"'gold' names unknown question {qid!r} (questions: {', '.join(questions)})")
        elif "options" in question and value not in question["options"]:
            errors.add(line, f"'gold' for {qid!r} must be one of {question['options']}, got {value!r}")
        elif "scale" in question and not (is_int(value) and question["scale"][0] <= value <= question["scale"][1]):
            errors.add(line, f"'gold' for {qid!r} must be an integer in {question['scale']}, got {value!r}")
    return gold


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
