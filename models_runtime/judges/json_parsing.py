"""Robust parsing of the JSON that small LLMs write.

Models wrap JSON in prose or code fences, leave trailing commas, or use single quotes.
`extract_json` finds the first JSON array/object in a text and repairs only what is safe
to repair; the `parse_*` helpers validate the keys a step expects and return None when
the answer is unusable, so the caller can retry.
"""
import ast
import json
import re

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_TRAILING_COMMA = re.compile(r",\s*([\]}])")
_TRUE = {"true", "yes", "y", "1", "matched", "match"}
_FALSE = {"false", "no", "n", "0", "unmatched", "none", "null"}


class ParseError(ValueError):
    """The text holds no usable JSON of the expected shape."""


def _unquoted(text, start=0, single_quotes=False):
    """(index, character) for each character of text[start:] outside quoted strings, so
    brackets and commas inside strings are not taken for structure. Strings are
    double-quoted, or also single-quoted when asked; backslash escapes are honoured."""
    quote, escaped = None, False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch == '"' or (single_quotes and ch == "'" and not _inside_word(text, i)):
            quote = ch
        else:
            yield i, ch


def _span_at(text, start):
    """The substring from the bracket at `start` to its matching closer, honouring quoted
    strings (single or double); None when the text ends first (a truncated value) or the
    brackets do not pair up."""
    closers = []
    for i, ch in _unquoted(text, start, single_quotes=True):
        if ch in "[{":
            closers.append("]" if ch == "[" else "}")
        elif ch in "]}":
            if not closers or closers.pop() != ch:
                return None
            if not closers:
                return text[start:i + 1]
    return None


def _inside_word(text, i):
    """An apostrophe between two letters (it's, don't) is not a quote."""
    return text[i] == "'" and 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()


def _loads(candidate):
    """json.loads, then the same with trailing commas removed, then a Python literal
    (single-quoted strings, True/False/None) when that is what the text is."""
    try:
        return json.loads(candidate)
    except ValueError:
        pass
    cleaned = _TRAILING_COMMA.sub(r"\1", candidate)
    try:
        return json.loads(cleaned)
    except ValueError:
        pass
    literal = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", cleaned)))
    try:
        value = ast.literal_eval(literal)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # {[1]}: unhashable key
        return None
    return value if isinstance(value, (list, dict)) else None


def _repair_truncated(text):
    """A JSON value cut off by the token limit: keep the longest prefix that ends just
    before a comma or after a closing bracket, close its open brackets, and parse that.
    Only complete members survive; None when no prefix parses."""
    cuts, stack = [], []
    for i, ch in _unquoted(text):
        if ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}":
            if not stack:
                return None
            stack.pop()
            if not stack:
                return None  # balanced: not a truncation
            cuts.append((i + 1, list(stack)))
        elif ch == ",":
            cuts.append((i, list(stack)))
    for end, open_brackets in reversed(cuts):
        value = _loads(text[:end] + "".join(reversed(open_brackets)))
        if value is not None:
            return value
    return None


def extract_json(text, kind=None):
    """The first JSON value of `kind` ("array", "object", or None for either) in `text`.

    Raises ParseError when nothing parses. Code fences are searched first; a value cut
    off at the end of the text is repaired by dropping its incomplete last element."""
    if not isinstance(text, str):
        raise ParseError("not a text")
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    openers = {"array": "[", "object": "{", None: "[{"}[kind]
    for source in sources:
        for start in [i for i, ch in enumerate(source) if ch in openers]:
            span = _span_at(source, start)
            value = _loads(span) if span else _repair_truncated(source[start:])
            if value is not None and (kind is None or isinstance(value, list if kind == "array" else dict)):
                return value
    raise ParseError(f"no JSON {kind or 'value'} found")


def as_bool(value):
    """A yes/no decision from a JSON value; None when it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".").lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    return None


def _text(value):
    return value.strip() if isinstance(value, str) else ""


def parse_aspects(text):
    """Aspect extraction: a list of {aspect, description, evidence: [sentences]}.

    Accepts a bare list, {"aspects": [...]}, or one aspect object; evidence may be one string. Aspects with
    no title are dropped. A repeated title (compared exactly, case-sensitive) keeps its last aspect at the
    place of its first, as the official code's `{x['aspect']: x for x in aspects}` does (alirezasalemi7/ExPerT,
    expert_score/matching/match.py), so the side has one aspect per distinct title.
    Raises ParseError when no aspect survives."""
    value = extract_json(text)
    if isinstance(value, dict):
        value = value.get("aspects", value.get("Aspects")) if "aspect" not in value else [value]
    if not isinstance(value, list):
        raise ParseError("expected a list of aspects")
    by_title = {}
    for entry in value:
        if not isinstance(entry, dict):
            continue
        title = _text(entry.get("aspect") or entry.get("title") or entry.get("name"))
        if not title:
            continue
        evidence = entry.get("evidence", [])
        if isinstance(evidence, str):
            evidence = [evidence]
        evidence = [_text(e) for e in evidence if isinstance(e, str) and _text(e)] if isinstance(evidence, list) else []
        by_title[title] = {"aspect": title, "description": _text(entry.get("description")), "evidence": evidence}
    if not by_title:
        raise ParseError("no aspect with a title")
    return list(by_title.values())


def find_title(title, titles):
    """The entry of `titles` equal to `title` (surrounding space and quotes ignored); failing
    that, the one entry equal ignoring case (None when none or several are: titles are
    distinct case-sensitively, as in the official code)."""
    key = _text(title).strip("\"'") if isinstance(title, str) else ""
    for candidate in titles:
        if candidate.strip() == key:
            return candidate
    folded = [c for c in titles if c.strip().lower() == key.lower()]
    return folded[0] if len(folded) == 1 else None


def _is_matched(text):
    """(the answer's object, its `is_matched` as a bool): the part every yes/no step shares."""
    value = extract_json(text, "object")
    if not isinstance(value, dict) or "is_matched" not in value:
        raise ParseError("expected an object with is_matched")
    decision = as_bool(value["is_matched"])
    if decision is None:
        raise ParseError("is_matched is not a yes/no value")
    return value, decision


def parse_match(text, titles):
    """Aspect matching: {reason, is_matched, matched_aspect}. Returns (matched title or
    None, reason). An unknown `matched_aspect` title is a ParseError (so it is retried)."""
    value, matched = _is_matched(text)
    reason = _text(value.get("reason"))
    if not matched:
        return None, reason
    title = find_title(value.get("matched_aspect"), titles)
    if title is None:
        raise ParseError(f"unknown aspect title {value.get('matched_aspect')!r}")
    return title, reason


def parse_decision(text):
    """Content or style check: {reason, is_matched} -> (bool, reason)."""
    value, decision = _is_matched(text)
    return decision, _text(value.get("reason"))
