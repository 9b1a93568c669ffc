"""The judgments CSV/JSONL and predictions CSV of interfaces.md: reading and writing rows.

Pure format code (no database): readers turn a binary file into (line, dict of strings)
or `line N: reason` errors; writers turn dicts into CSV or JSONL text. Values stay strings
exactly as in the CSV, except that JSONL writes `seconds` as a number or null.
CSV cells are spreadsheet-safe (evaluation.csv_cells): a cell a spreadsheet would run as a
formula is written with a leading `'`, and the reader removes it again.
"""
import csv
import io
import itertools
import json
import math
from datetime import UTC, datetime

from evaluation.csv_cells import SafeWriter, unescape_cell
from humeval.jsonl import error_reason, json_lines

JUDGMENT_COLUMNS = ("study", "item_id", "annotator", "question", "value", "shown_order", "seconds", "submitted_at")
# Written at the end of every export, optional on import (older files lack them): the
# annotator's comment on the item, then the recruiting platform's ids of a participant
# (empty for staff-made annotators; ignored on import).
PLATFORM_COLUMNS = ("platform", "study_id", "session_id")
JUDGMENT_OPTIONAL_COLUMNS = ("comment", *PLATFORM_COLUMNS)
JUDGMENT_EXPORT_COLUMNS = JUDGMENT_COLUMNS + JUDGMENT_OPTIONAL_COLUMNS
# A test-retest repeat (interfaces.md): `1` in an optional last column, written only by
# the export of a study that has repeats (`JudgmentRows.repeat_column`); read on import.
REPEAT_COLUMN = "repeat"
PREDICTION_COLUMNS = ("study", "item_id", "evaluator", "annotator", "question", "value")
REQUIRED_JUDGMENT_CELLS = ("study", "item_id", "annotator", "question", "value")
REQUIRED_PREDICTION_CELLS = ("study", "item_id", "evaluator", "question")


def read_rows(binary_file, columns, optional=()):
    """Yield (line, {column: str}) or (line, "reason") for every data row. `optional`
    columns may be absent from the header (their cells then read as "").

    CSV by default; a file whose first non-blank line starts with `{` is read as JSONL
    with the same keys. Line numbers are 1-based file lines (a quoted multi-line CSV cell
    reports the line where its row starts)."""
    state = {"line": 0}

    def decoded():
        for number, raw in enumerate(binary_file, 1):
            state["line"] = number
            yield raw.decode("utf-8-sig" if number == 1 else "utf-8")

    lines = decoded()
    try:
        head = []
        for text in lines:
            head.append(text)
            if text.strip():
                break
        is_jsonl = bool(head) and head[-1].lstrip().startswith("{")
        stream = itertools.chain(head, lines)
        yield from (_read_jsonl(stream, columns, optional) if is_jsonl else _read_csv(stream, columns, optional))
    except UnicodeDecodeError:
        yield state["line"], "not valid UTF-8"


def _read_csv(text, columns, optional=()):
    reader = csv.reader(text)
    header = next(reader, None)
    if header is None:
        yield 1, f"empty file, expected the header {','.join(columns)}"
        return
    header = [h.strip() for h in header]
    if sorted(h for h in header if h not in optional) != sorted(columns) or len(set(header)) != len(header):
        missing = [c for c in columns if c not in header]
        extra = [h for h in header if h not in columns and h not in optional]
        optional_text = f" (optional at the end: {','.join(optional)})" if optional else ""
        yield 1, (f"header must be {','.join(columns)}{optional_text}"
                  f" (missing: {missing or 'none'}, unexpected: {extra or 'none'})")
        return
    start = reader.line_num + 1
    try:
        for cells in reader:
            line, start = start, reader.line_num + 1
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                yield line, f"expected {len(header)} fields, got {len(cells)}"
                continue
            yield line, {**dict.fromkeys(optional, ""), **dict(zip(header, (unescape_cell(c) for c in cells)))}
    except csv.Error as exc:
        yield start, f"bad CSV: {exc}"


def _read_jsonl(text, columns, optional=()):
    for line, obj, error in json_lines(text):
        if error:
            yield line, error_reason(error)
            continue
        if not isinstance(obj, dict):
            yield line, "expected a JSON object"
            continue
        missing = [c for c in columns if c not in obj]
        extra = [k for k in obj if k not in columns and k not in optional]
        if missing or extra:
            yield line, (f"keys must be {', '.join(columns)} "
                         f"(missing: {missing or 'none'}, unexpected: {extra or 'none'})")
            continue
        yield line, {c: _cell(obj.get(c)) for c in (*columns, *optional)}


def _cell(value):
    """A JSON value as the CSV cell it stands for."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return format_number(value)
    return str(value)


def format_number(value):
    """Shortest exact text for a float; whole numbers without '.0'."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def parse_seconds(cell):
    """'' -> None; otherwise a finite float >= 0, or ValueError."""
    cell = cell.strip()
    if not cell:
        return None
    value = float(cell)
    if not math.isfinite(value) or value < 0:
        raise ValueError("seconds must be a finite number >= 0")
    return value


def parse_timestamp(cell):
    """'' -> None; ISO 8601 -> aware datetime (naive means UTC), or ValueError."""
    cell = cell.strip()
    if not cell:
        return None
    value = datetime.fromisoformat(cell)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def format_timestamp(value):
    return value.astimezone(UTC).isoformat() if value else ""


def judgment_cells(row):
    """A judgments row dict (typed values) as CSV cells."""
    seconds = row["seconds"]
    return [row["study"], row["item_id"], row["annotator"], row["question"], row["value"], row["shown_order"] or "",
            "" if seconds is None else format_number(float(seconds)), format_timestamp(row["submitted_at"]),
            row.get("comment") or "", *(row.get(column) or "" for column in PLATFORM_COLUMNS)]


class JudgmentRows:
    """Judgment row dicts to export, and whether the file gets the `repeat` column (a
    study with test-retest repeats: their rows carry `repeat` = 1)."""

    def __init__(self, rows, repeat_column=False):
        self.rows, self.repeat_column = rows, repeat_column

    def __iter__(self):
        return iter(self.rows)


def write_judgments(rows, out, fmt="csv"):
    """Write judgment dicts (keys = JUDGMENT_COLUMNS, typed; JUDGMENT_OPTIONAL_COLUMNS may be
    absent) to a text stream."""
    for chunk in iter_judgments(rows, fmt):
        out.write(chunk)


def iter_judgments(rows, fmt="csv"):
    """Yield the export text piece by piece (for streaming HTTP responses)."""
    if fmt not in ("csv", "jsonl"):
        raise ValueError("format must be csv or jsonl")
    buffer = io.StringIO()
    writer = SafeWriter(buffer)
    repeat = getattr(rows, "repeat_column", False)
    columns = JUDGMENT_EXPORT_COLUMNS + ((REPEAT_COLUMN,) if repeat else ())
    if fmt == "csv":
        writer.writerow(columns)
    for n, row in enumerate(rows, 1):
        cells = judgment_cells(row) + (["1" if row.get(REPEAT_COLUMN) else ""] if repeat else [])
        if fmt == "csv":
            writer.writerow(cells)
        else:
            obj = dict(zip(columns, cells))
            obj["seconds"] = None if row["seconds"] is None else float(row["seconds"])
            obj["submitted_at"] = obj["submitted_at"] or None
            buffer.write(json.dumps(obj, ensure_ascii=False) + "\n")
        if n % 1000 == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def write_predictions(rows, out):
    """Write prediction dicts (keys = PREDICTION_COLUMNS) as CSV (a data release read back
    through import_predictions: annotate/studies/release.py)."""
    writer = SafeWriter(out)
    writer.writerow(PREDICTION_COLUMNS)
    for row in rows:
        writer.writerow([row[c] for c in PREDICTION_COLUMNS])
