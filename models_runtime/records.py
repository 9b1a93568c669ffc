"""A plan's input records, read with bounded memory: LaMP's own files (a JSON array of
questions `{id, input, profile}` and an outputs file `{task, golds: [{id, output}]}`) or
our JSONL records (`{"id", "input", "profile", "output"}` a line).

A LaMP questions file runs to hundreds of MB (LaMP-4's profiles): it is never loaded
whole. One streaming pass checks every question and keeps only its id and where it lies
in the file (byte offsets); a record is read back from disk when a step needs it. The
outputs (short golds) are read whole. Memory: one question at a time plus the index.
"""
import codecs
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from evaluation.lamp_metrics import canonical_task

from .job_support.job_inputs import MAX_ERRORS_SHOWN, LinesInvalid
from .job_support.kinds import JobParamsError

BLOCK = 1 << 20  # bytes read at a time
MAX_RECORD_BYTES = 64 << 20  # one question (with its profile) at most
_SPACE = re.compile(r"[ \t\n\r]*")


LAMP_HINT = ("this is a LaMP file (a JSON array of questions, or an outputs file with \"golds\"), not JSONL "
             "records: run it through a plan with \"input\": {\"format\": \"lamp\", \"questions\": ..., "
             "\"outputs\": ...} (manage.py pipeline, docs/runtime.md), or convert it to one "
             "{\"id\", \"input\", \"profile\", \"output\"} object a line")


def is_lamp_file(head: bytes) -> bool:
    """A LaMP JSON file (an array of questions, or an outputs object), not JSONL records."""
    return head.startswith(b"[") or (head.startswith(b"{") and b'"golds"' in head)


def record_errors(record, seen) -> list[str]:
    """Why one JSONL record cannot be used (none: []); `seen`: the ids read so far."""
    if not isinstance(record, dict):
        return ["expected a JSON object"]
    errors = []
    rid = record.get("id")
    if not isinstance(rid, (str, int)) or isinstance(rid, bool) or str(rid) == "":
        errors.append("missing \"id\"")
    elif str(rid) in seen:
        errors.append(f"duplicate id {rid!r}")
    if not isinstance(record.get("input"), str) or not record["input"].strip():
        errors.append("missing \"input\" text")
    profile = record.get("profile")
    if not isinstance(profile, list) or not all(isinstance(p, dict) for p in profile):
        errors.append("\"profile\" must be a list of objects")
    if not isinstance(record.get("output"), str) or not record["output"].strip():
        errors.append("missing \"output\" (the expected output is the batch's reference)")
    return errors


def _decode_value(text: str, what: str):
    """json.loads with the bounds of a hostile upload: nesting and huge numbers are
    refused with a reason (never a RecursionError or a 500)."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(f"{what} is nested too deeply") from None


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


class _ArrayReader:
    """A JSON array read a block at a time: `buf[pos:]` is unread text, `at` the byte
    offset of buf[pos] in the file (JSON whitespace and separators are ASCII)."""

    def __init__(self, handle, what: str):
        self.handle, self.what = handle, what
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.decoder = json.JSONDecoder(parse_constant=_no_constant)
        self.buf, self.pos, self.at, self.eof = "", 0, 0, False

    def fill(self, size: int = BLOCK) -> None:
        self.buf, self.pos = self.buf[self.pos:], 0  # drop what was consumed
        block = self.handle.read(size)
        try:
            self.buf += self.utf8.decode(block, final=not block)
        except UnicodeDecodeError:
            raise JobParamsError(f"{self.what}: not UTF-8 text (after byte {self.at})") from None
        self.eof = not block

    def skip_space(self) -> None:
        while True:
            match = _SPACE.match(self.buf, self.pos)
            end = match.end() if match else self.pos  # [ \t\n\r]* always matches
            self.at, self.pos = self.at + end - self.pos, end
            if self.pos < len(self.buf) or self.eof:
                return
            self.fill()

    def expect(self, char: str) -> bool:
        self.skip_space()
        if self.buf.startswith(char, self.pos):
            self.pos, self.at = self.pos + 1, self.at + 1
            return True
        return False

    def value(self, n: int):
        """(start byte, end byte, the element) of element n, reading more as needed."""
        self.skip_space()
        size = BLOCK
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
                break
            except RecursionError:
                raise JobParamsError(f"{self.what}: element {n} is nested too deeply") from None
            except ValueError as exc:  # incomplete in the buffer, or invalid
                if self.eof or len(self.buf) - self.pos > MAX_RECORD_BYTES:
                    reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                    raise JobParamsError(f"{self.what}: element {n} is not valid JSON ({reason})") from None
                self.fill(size)
                size *= 2
        start = self.at
        self.at += len(self.buf[self.pos:end].encode("utf-8"))
        self.pos = end
        return start, self.at, value


def iter_json_array(path: str, what: str) -> Iterator[tuple[int, int, Any]]:
    """(start byte, end byte, value) of each element of the JSON array in `path`, read a
    block at a time (one element in memory). JobParamsError naming the element and why."""
    with open(path, "rb") as handle:
        reader = _ArrayReader(handle, what)
        reader.fill()
        if reader.buf.startswith("\ufeff"):
            reader.pos, reader.at = 1, 3
        if not reader.expect("["):
            raise JobParamsError(f"{what}: expected a JSON array of questions ([{{\"id\", \"input\", \"profile\"}}, "
                                 "...])")
        if reader.expect("]"):
            return
        n = 0
        while True:
            yield reader.value(n)
            n += 1
            if reader.expect(","):
                continue
            if reader.expect("]"):
                return
            raise JobParamsError(f"{what}: expected ',' or ']' after element {n - 1}")


def read_span(path: str, start: int, stop: int):
    with open(path, "rb") as handle:
        handle.seek(start)
        return json.loads(handle.read(stop - start))


def question_error(q) -> str | None:
    if not isinstance(q, dict):
        return "expected an object {id, input, profile}"
    if q.get("id") is None or isinstance(q.get("id"), (dict, list, bool)) or str(q.get("id")) == "":
        return "missing \"id\""
    if not isinstance(q.get("input"), str) or not q["input"].strip():
        return "missing \"input\" text"
    profile = q.get("profile")
    if profile is not None and not (isinstance(profile, list) and all(isinstance(p, dict) for p in profile)):
        return "\"profile\" must be a list of objects"
    return None


def read_golds(path: str) -> tuple[dict[str, object], str | None]:
    """({question id: output}, the file's canonical task or None) of a LaMP outputs file."""
    name = Path(path).name
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except UnicodeDecodeError:
        raise JobParamsError(f"{name}: the LaMP outputs file is not UTF-8 text") from None
    from humeval.jsonl import json_nesting_error

    nested = json_nesting_error(text, 32)
    try:
        if nested:
            raise ValueError(nested)
        outputs = _decode_value(text, name)
    except ValueError as exc:
        raise JobParamsError(f"{name}: the LaMP outputs file is not valid JSON ({exc})") from None
    if not (isinstance(outputs, dict) and isinstance(outputs.get("golds"), list)):
        raise JobParamsError(f"{name}: LaMP outputs are an object {{\"task\", \"golds\": [{{\"id\", \"output\"}}]}}")
    golds = {str(g.get("id")): g.get("output") for g in outputs["golds"] if isinstance(g, dict)}
    task = outputs.get("task")
    if task is not None and canonical_task(task) is None:
        raise JobParamsError(f"{name}: \"task\" {task!r} is not a LaMP task (LaMP_1 ... LaMP_7)")
    return golds, canonical_task(task)


class Records(Mapping):
    """The records of a plan's input by id, in file order; each read from disk on access
    (`{"id", "input", "profile", "output", "task"?}`)."""

    def __init__(self, path: str, spans: dict[str, tuple[int, int]], golds: dict | None, task: str):
        self.path, self.spans, self.golds, self.task = path, spans, golds, task

    def __getitem__(self, key):
        start, stop = self.spans[key]
        raw = read_span(self.path, start, stop)
        record = {"id": key, "input": raw["input"], "profile": raw.get("profile") or []}
        record["output"] = self.golds[key] if self.golds is not None else raw.get("output")
        task = self.task or canonical_task(raw.get("task"))
        return dict(record, task=task) if task else record

    def __iter__(self):
        return iter(self.spans)

    def __len__(self):
        return len(self.spans)


def index_lamp(questions: str, outputs: str, task: str | None) -> Records:
    """Check LaMP's two files and index the questions (LinesInvalid lists the problems)."""
    golds, file_task = read_golds(outputs)
    if task and file_task and task != file_task:
        raise JobParamsError(f"input.task is {task} but {Path(outputs).name} says \"task\": {file_task}: "
                             "fix the plan or give the other task's files")
    name, spans, errors, total = Path(questions).name, {}, list[str](), 0
    for n, (start, stop, q) in enumerate(iter_json_array(questions, name)):
        why = question_error(q)
        if why is None:
            key = str(q["id"])
            gold = golds.get(key)
            if key in spans:
                why = f"id {key!r} appears twice"
            elif not isinstance(gold, str):
                why = f"no output for id {key!r} in {Path(outputs).name}"
            elif not gold.strip():  # LaMP's metrics count it; annotators would compare against nothing
                why = (f"empty output for id {key!r} in {Path(outputs).name} (a study compares the outputs with "
                       "the user's own text)")
            else:
                spans[key] = (start, stop)
        if why:
            total += 1
            if len(errors) < MAX_ERRORS_SHOWN:
                errors.append(f"{name} question {n}: {why}")
    if errors:
        raise LinesInvalid(errors, total)
    if not spans:
        raise JobParamsError(f"{name}: no questions")
    kept = {key: golds[key] for key in spans}
    return Records(questions, spans, kept, task or file_task or "")


def index_jsonl(path: str, task: str | None) -> Records:
    """Check our JSONL records (`line N: ...`) and index them by line."""
    name, spans, errors, total, offset, seen = Path(path).name, {}, list[str](), 0, 0, set[str]()
    with open(path, "rb") as handle:
        head = handle.read(4096).lstrip()
        if is_lamp_file(head):
            raise JobParamsError(f"{name}: {LAMP_HINT}")
        handle.seek(0)
        for number, raw in enumerate(handle, start=1):
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            try:
                record = _decode_value(raw.decode("utf-8"), f"line {number}")
            except (ValueError, UnicodeDecodeError) as exc:
                reasons = [f"not valid JSON ({exc})"]
            else:
                reasons = record_errors(record, seen=seen)
                if isinstance(record, dict) and isinstance(record.get("id"), (str, int)):
                    seen.add(str(record["id"]))
            if reasons:
                total += len(reasons)
                errors.extend(f"{name} line {number}: {r}" for r in reasons[:MAX_ERRORS_SHOWN - len(errors)])
            else:
                spans[str(record["id"])] = (start, offset)
    if errors:
        raise LinesInvalid(errors[:MAX_ERRORS_SHOWN], total)
    if not spans:
        raise JobParamsError(f"{name}: the input file has no records")
    return Records(path, spans, None, task or "")


_cache: dict = {}


def load_records(spec: dict) -> Records:
    """The plan's input records (indexed once per file version in each process)."""
    paths = [spec[k] for k in ("questions", "outputs", "records") if k in spec]
    key = tuple((p, os.stat(p).st_mtime_ns, os.stat(p).st_size) for p in paths) + (spec.get("task"),)
    if key not in _cache:
        if spec["format"] == "lamp":
            records = index_lamp(spec["questions"], spec["outputs"], spec.get("task") or None)
        else:
            records = index_jsonl(spec["records"], spec.get("task") or None)
        _cache.clear()
        _cache[key] = records
    return _cache[key]
