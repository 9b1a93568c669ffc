"""JSON Lines input, read the one way every importer and command reads it.

Why a helper: error messages name 1-based file lines (blank lines are skipped but
counted), and each caller words its own errors, so a line that is not JSON is
yielded with its parse error rather than raised. Django-free.
"""
import json
import re

NESTED_TOO_DEEPLY = "Nested too deeply"
# A JSON string (skipped: brackets inside it do not nest) or one bracket.
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def loads_line(line: str, **hooks):
    """json.loads of one line without its line break, so that an error at the end of the
    line reports the column after its last character (not column 1 of a next line).
    Nesting deep enough to exhaust Python's recursion raises a JSONDecodeError too.
    `hooks` go to json.loads (parse_float, parse_int, parse_constant)."""
    text = line.rstrip("\r\n")
    try:
        return json.loads(text, **hooks)
    except RecursionError:
        raise json.JSONDecodeError(NESTED_TOO_DEEPLY, text, 0) from None


def error_reason(error: json.JSONDecodeError) -> str:
    """'bad JSON: Expecting value at column 7'. json's own messages that end in 'at'
    ('Unterminated string starting at') read '... starting at column 7', not 'at at'."""
    if error.msg == NESTED_TOO_DEEPLY:
        return "bad JSON: nested too deeply"
    where = f"column {error.colno}" if error.msg.endswith(" at") else f"at column {error.colno}"
    return f"bad JSON: {error.msg} {where}"


def json_nesting_error(text: str, limit: int) -> str | None:
    """Why `text` nests more than `limit` levels, or None. Counts brackets outside strings
    without recursion, so any depth is measured safely (and cheaply when it is shallow)."""
    if text.count("[") + text.count("{") <= limit:
        return None
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return f"JSON nested more than {limit} levels deep"
        elif token in "]}":
            depth -= 1
    return None


def json_lines(lines):
    """(number, value, None) for each non-blank line that parses, (number, None, the
    json.JSONDecodeError) for one that does not; `number` counts blank lines too."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = loads_line(line)
        except json.JSONDecodeError as exc:
            yield number, None, exc
            continue
        yield number, value, None
