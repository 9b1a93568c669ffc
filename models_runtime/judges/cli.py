"""Shared bits of the judge commands: reading JSONL with per-line errors, the backend,
and a progress bar on stderr."""
import json

from django.core.management.base import CommandError

from evaluation.vocabulary import DEFAULT_MODEL
from humeval.jsonl import json_lines


def read_jsonl(path, required=()):
    """Rows of a JSONL file; CommandError listing every `line N: ...` problem."""
    rows, errors = [], []
    try:
        with open(path, encoding="utf-8") as handle:
            parsed = list(json_lines(handle))
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
    for number, row, error in parsed:
        if error:
            errors.append(f"line {number}: not JSON ({error.msg})")
            continue
        if not isinstance(row, dict):
            errors.append(f"line {number}: expected a JSON object")
            continue
        if "study" in row and "item_id" not in row:
            rows.append(row)  # a batch header; callers skip it
            continue
        missing = [k for k in required if not isinstance(row.get(k), str)]
        if missing:
            errors.append(f"line {number}: missing or non-text {', '.join(missing)}")
            continue
        rows.append(row)
    if errors:
        raise CommandError("; ".join(errors))
    return rows


def add_model_arguments(parser):
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help=f"a model name from HUMEVAL_MODELS (default: {DEFAULT_MODEL})")
    parser.add_argument("--device", choices=["cpu", "cuda"], default=None)


def print_json(command, document):
    command.stdout.write(json.dumps(document, ensure_ascii=False))
