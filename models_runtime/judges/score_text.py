"""Reading a score out of a judge's answer (G-Eval, GEMBA; statistics.md, "G-Eval and GEMBA").

A restated scale is not the score: "Rating (1-5): 4" and "On a scale from 1 to 5, I would
rate this a 4." give 4, "Score (0 to 100): 72" gives 72, "covers 2 of the 3 points; score
60" gives 60. The rules, in order:
1. a JSON object with a numeric "score" in range;
2. numbers that belong to a range ("1-5", "1 to 5", "between 1 and 5") or to an "N of M"
   count are never the score; in "N out of M" / "N/M", M is the scale and N counts only
   when M is the scale's top;
3. the first remaining number after the last label ("score", "rating", "rate", "grade"),
   when there is a label; out of range means unparsed;
4. otherwise the last remaining number in range.
No such number: ParseError (unparsed, counted by the caller), never a guess.
"""
import re

from .json_parsing import ParseError, extract_json

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
_RANGE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:-|–|—|to)\s*(\d+(?:\.\d+)?)(?!\w|\.\d)", re.I)
_BETWEEN = re.compile(r"\bbetween\s+(\d+(?:\.\d+)?)\s+and\s+(\d+(?:\.\d+)?)(?!\w|\.\d)", re.I)
_N_OF_M = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s+of\s+(?:the\s+|all\s+)?(\d+(?:\.\d+)?)(?!\w|\.\d)", re.I)
_OUT_OF = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*(\d+(?:\.\d+)?)(?!\w|\.\d)", re.I)
_LABEL = re.compile(r"\b(?:score|rating|rate|grade)\b", re.I)


def _json_score(text: str, low: float, high: float) -> float | None:
    try:
        value = extract_json(text, "object")
    except ParseError:
        return None
    score = value.get("score") if isinstance(value, dict) else None
    if isinstance(score, int | float) and not isinstance(score, bool) and low <= score <= high:
        return float(score)
    return None


def _excluded(text: str, high: float) -> set[int]:
    """Start offsets of the numbers that cannot be the score."""
    out: set[int] = set()
    for pattern in (_RANGE, _BETWEEN, _N_OF_M):
        for match in pattern.finditer(text):
            out.update((match.start(1), match.start(2)))
    for match in _OUT_OF.finditer(text):
        out.add(match.start(2))
        if float(match.group(2)) != high:
            out.add(match.start(1))
    return out


def parse_score(text: str, low: float, high: float) -> float:
    """The score in [low, high] that a judge's answer gives; ParseError when it gives none.

    >>> [parse_score(t, 1, 5) for t in ("Rating (1-5): 4", "On a scale from 1 to 5, I would rate this a 4.")]
    [4.0, 4.0]
    >>> parse_score("Score (0 to 100): 72", 0, 100), parse_score("covers 2 of the 3 points; score 60", 0, 100)
    (72.0, 60.0)
    """
    if not isinstance(text, str):
        raise ParseError("not a text")
    found = _json_score(text, low, high)
    if found is not None:
        return found
    excluded = _excluded(text, high)
    numbers = [(m.start(), float(m.group())) for m in _NUMBER.finditer(text) if m.start() not in excluded]
    labels = [m.end() for m in _LABEL.finditer(text)]
    if labels:
        after = [x for start, x in numbers if start >= labels[-1]]
        if after:
            if low <= after[0] <= high:
                return after[0]
            raise ParseError(f"the score {after[0]:g} is not between {low:g} and {high:g}")
    in_range = [x for _, x in numbers if low <= x <= high]
    if in_range:
        return in_range[-1]
    raise ParseError(f"no score between {low:g} and {high:g}")
