"""Spreadsheet-safe CSV cells: the one rule every CSV export of humeval applies.

Why: researchers open exports in Excel or LibreOffice, which run a cell starting with
`=`, `+`, `-` or `@` (tab and CR too) as a formula; the texts, ids and names in a study
come from uploaded files, so `=HYPERLINK(...)` in a candidate id would run on the
researcher's machine (OWASP "CSV injection"). Such a cell is written with a leading `'`,
which spreadsheets hide and treat as "this is text".

Choices (docs/formats.md):
- A cell that is a plain number (`-0.5`, `+3`, `1e-3`) is left alone, so numeric
  columns stay numbers; a number cannot call anything.
- A cell that already starts with `'` gets one more, so that reading a file back
  (`unescape_cell`) restores every value exactly: `'=x` -> `''=x` -> `'=x`.

`SafeWriter` is the csv.writer every export uses: it applies the rule to each cell, and
quotes a row holding a carriage return (Python's csv quotes only the characters of its
line terminator, "\n", so a bare CR would split the row for readers).
"""
import csv
import re
from collections.abc import Iterable
from typing import Any, TextIO

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def is_plain_number(text: str) -> bool:
    return _PLAIN_NUMBER.fullmatch(text) is not None


def _needs_quote(text: str) -> bool:
    if not text:
        return False
    if text[0] == QUOTE:
        return True
    return text[0] in FORMULA_STARTS and not is_plain_number(text)


def safe_cell(value: Any) -> Any:
    """The cell to write: text that a spreadsheet would run gets a leading `'`; numbers,
    None and harmless text are returned unchanged."""
    if isinstance(value, str) and _needs_quote(value):
        return QUOTE + value
    return value


def safe_row(row: Iterable[Any]) -> list[Any]:
    return [safe_cell(value) for value in row]


def unescape_cell(text: str) -> str:
    """Inverse of `safe_cell` for a cell read from a CSV file: drops the `'` that
    `safe_cell` added (and only such a `'`)."""
    if text.startswith(QUOTE) and _needs_quote(text[1:]):
        return text[1:]
    return text


class SafeWriter:
    """csv.writer(stream, lineterminator="\n") with spreadsheet-safe cells."""

    def __init__(self, stream: TextIO) -> None:
        self._minimal = csv.writer(stream, lineterminator="\n")
        self._quoted = csv.writer(stream, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def writerow(self, row: Iterable[Any]) -> None:
        cells = safe_row(row)
        has_cr = any(isinstance(cell, str) and "\r" in cell for cell in cells)
        (self._quoted if has_cr else self._minimal).writerow(cells)

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)
