"""JSON Lines input, read the one way every importer and command reads it.

Why a helper: error messages name 1-based file lines (blank lines are skipped but
counted), and each caller words its own errors, so a line that is not JSON is
yielded with its parse error rather than raised.
"""
import json


def json_lines(lines):
    """(number, value, None) for each non-blank line that parses, (number, None, the
    json.JSONDecodeError) for one that does not; `number` counts blank lines too."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, None, exc
            continue
        yield number, value, None
