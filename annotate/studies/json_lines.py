"""Reading a JSON-lines file safely, line by line: UTF-8 checked per line, one JSON object a
line, numbers PostgreSQL and Python can keep, text PostgreSQL can store, and the canonical
hash a re-import is recognised by. Shared by the batch validator
(annotate/studies/batch_format.py), the importer and the answer doors.
"""
import hashlib
import json

from annotate.studies.answers import shown
from humeval.jsonl import error_reason, loads_line

MAX_INT_DIGITS = 4300  # Python's limit for int <-> str conversion


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


class _BadNumber(ValueError):
    """A JSON number humeval cannot store (raised from inside json.loads)."""


def _no_constant(name):
    raise _BadNumber(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _finite_float(text):
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _BadNumber(f"number {shown(text)} is too large (numbers must fit a double, at most about 1.8e308)")
    return value


def _bounded_int(text):
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _BadNumber(f"an integer with {digits} digits is too long (at most {MAX_INT_DIGITS})")
    return int(text)


def parse_json_object(text):
    """(object, None) or (None, reason). NaN, Infinity, numbers beyond a double and
    integers over 4,300 digits are refused: PostgreSQL's jsonb and Python cannot keep them."""
    try:
        obj = loads_line(text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        return None, error_reason(exc)
    except _BadNumber as exc:
        return None, str(exc)
    if not isinstance(obj, dict):
        return None, f"expected a JSON object, got {type(obj).__name__}"
    if "\\u" in text:  # NUL and lone surrogates can only arrive as \u escapes
        reason = unstorable_text(obj)
        if reason:
            return None, reason
    return obj, None
