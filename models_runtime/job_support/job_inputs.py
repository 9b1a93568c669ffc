"""A job's JSONL input checked a line at a time (issue 25: uploads "validated with bounded
memory").

A job's input (`expert`, `expert_batch`, `probes`, `icopernicus`, `ip`, `rag`) may be an
upload of hundreds of MB; checking it by reading it whole cost 467 MiB for a 40 MiB file.
`check_lines` reads one line at a time (at most MAX_LINE_BYTES), gives each parsed row to
the kind's check and keeps only the first MAX_ERRORS_SHOWN problems (`line N: why`) and
their count: memory is one line plus what the check itself keeps (a few counters, the ids
seen). The job reads its rows again when it runs.
"""
import json
from collections.abc import Callable, Iterator

from humeval.jsonl import loads_line

from .kinds import JobParamsError

MAX_LINE_BYTES = 64 << 20  # one record (with its profile) at most
MAX_ERRORS_SHOWN = 20


class LinesInvalid(JobParamsError):
    """An input's problems (bad lines; a LaMP file's bad questions, records.py): the first
    MAX_ERRORS_SHOWN, and how many there were."""

    def __init__(self, errors: list[str], total: int):
        more = f" (and {total - len(errors)} more)" if total > len(errors) else ""
        super().__init__("; ".join(errors) + more)
        self.errors, self.total = errors, total


def json_rows(path: str) -> Iterator[tuple[int, object, str | None]]:
    """(line number, row, None) for each non-blank line that parses, (number, None, why)
    for one that does not; one line in memory at a time."""
    with open(path, "rb") as handle:
        number = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                while raw and not raw.endswith(b"\n"):  # skip the rest of the line
                    raw = handle.readline(1 << 20)
                yield number, None, f"longer than {MAX_LINE_BYTES} bytes"
                continue
            if not raw.strip():
                continue
            try:
                yield number, loads_line(raw.decode("utf-8")), None
            except UnicodeDecodeError:
                yield number, None, "not UTF-8 text"
            except json.JSONDecodeError as exc:
                yield number, None, f"not JSON ({exc.msg})"


def check_lines(path: str, check: Callable[[int, object], list[str]]) -> int:
    """Run `check(line number, row) -> [problems]` on every row of the JSONL file at `path`.
    -> how many rows had none; LinesInvalid (`line N: problem; ...`) when any had one;
    JobParamsError when the file cannot be read."""
    errors: list[str] = []
    total = good = 0
    try:
        for number, row, bad in json_rows(path):
            problems = [bad] if bad else check(number, row)
            total += len(problems)
            errors.extend(f"line {number}: {why}" for why in problems[:MAX_ERRORS_SHOWN - len(errors)])
            good += not problems
    except OSError as exc:
        raise JobParamsError(f"cannot read {path}: {exc.strerror}") from None
    if errors:
        raise LinesInvalid(errors, total)
    return good


def is_header(row: object) -> bool:
    """A batch file's first line (`{"study": ...}`), which the judge kinds skip."""
    return isinstance(row, dict) and "study" in row and "item_id" not in row


def text_fields_missing(row: dict, keys: tuple[str, ...]) -> list[str]:
    missing = [key for key in keys if not isinstance(row.get(key), str)]
    return [f"missing or non-text {', '.join(missing)}"] if missing else []
