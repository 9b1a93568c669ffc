"""Job kinds and the errors a job reports: what a kind is (`JobKind`) and the registry of
kinds by name, the errors of parameters and items, which exceptions are worth retrying, and
where web/API jobs keep their files (server paths refused unless a command set them).

A job kind says how to list a job's items and how to process a chunk of them:

    SCORE = JobKind("score", items=score_items, process_chunk=score_chunk,
                    finish=score_finish, validate=validate_score_params)

and is registered once, in `ModelsRuntimeConfig.ready()` (models_runtime/apps.py).

- `items(job) -> list[str]`: the item keys, deterministic for given params.
- `process_chunk(job, keys) -> {key: result}`: does the work of those items; its database
  writes run in the same transaction as the checkpoints, so they commit together or not at
  all. A value may be `ItemError("why")`: a data error in that item, recorded with its
  reason while the job goes on.
- `finish(job) -> dict`: the job's result once every item has a checkpoint (optional).
- `validate(params) -> params`: checks and normalises params; raise JobParamsError.
"""
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from ..backends.config import ModelNotAvailable
from ..metrics.registry import UnknownMetric
from ..models import Job


class JobParamsError(ValueError):
    """Bad job parameters: reported to the user, the job is not started."""

    errors: list[str]  # one line per problem, where a caller lists them (plans.PlanInvalid, uploads)


class ItemError:
    """A per-item failure returned by process_chunk (the item is done, with an error)."""

    def __init__(self, message: object):
        self.message = str(message)

    def __repr__(self):
        return f"ItemError({self.message!r})"


class ChunkGaveUp(Exception):
    """A transient error outlived the chunk's retries: the job fails and can be resumed."""


# Configuration errors: the job fails with the message alone (no traceback: not a bug).
FATAL_ERRORS = (ModelNotAvailable, UnknownMetric, JobParamsError, FileNotFoundError, PermissionError)


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: the network, a timeout, memory (CUDA OOM included), or an error that
    says so (`exc.transient = True`, e.g. an HTTP backend that gave up on a busy server).
    Everything else is a bug or a configuration error, and retrying would only hide it."""
    return (isinstance(exc, (ConnectionError, TimeoutError, MemoryError))
            or type(exc).__name__ == "OutOfMemoryError" or bool(getattr(exc, "transient", False)))


class JobCancelled(Exception):
    """`jobs cancel ID` asked the job to stop; the runner stops between chunks."""


@dataclass(frozen=True)
class JobKind:
    """`inputs`: params naming input files; `outputs`: (param, file name) of output files.
    Both are server paths that only the management commands may choose (`server_paths`);
    a job started from the web or the API gets its inputs uploaded and its outputs written
    into the job's own directory under those server-chosen names (job_files.py)."""

    kind: str
    items: Callable[[Job], list[str]]
    process_chunk: Callable[[Job, list[str]], dict[str, Any]]
    finish: Callable[[Job], Any] | None = None
    validate: Callable[[dict], dict] | None = None
    chunk_size: int = 16
    inputs: tuple[str, ...] = ()
    outputs: tuple[tuple[str, str], ...] = ()
    # False: process_chunk runs outside the checkpoint transaction, so what it commits
    # (the pipeline's steps run their own jobs) is visible and kept as it goes.
    atomic: bool = True
    # The result of a job that stopped (cancelled or failed) before `finish`: what it did
    # so far (a pipeline lists the items it already imported).
    stopped: Callable[[Job], Any] | None = None


_KINDS: dict[str, JobKind] = {}


def register(kind: JobKind) -> JobKind:
    """Make a job kind available by name (apps.py registers the runtime's own)."""
    _KINDS[kind.kind] = kind
    return kind


def register_job_kind(kind: str, process_chunk=None, *, items, finish=None, validate=None, chunk_size=16) -> JobKind:
    """register(JobKind(...)) in one call (tests define small kinds this way)."""
    return register(JobKind(kind, items, process_chunk, finish, validate, chunk_size))


def get_job_kind(kind: str) -> JobKind:
    if kind not in _KINDS:
        raise JobParamsError(f"unknown job kind {kind!r} (known: {', '.join(job_kinds())})")
    return _KINDS[kind]


def job_kinds() -> list[str]:
    return sorted(_KINDS)


# Params naming server paths for any kind (a model directory): CLI-only, like inputs/outputs.
CLI_ONLY_PARAMS = ("encoder", "server_paths")


def jobs_root() -> Path:
    """Where web/API jobs keep their files: HUMEVAL_JOBS_DIR/<job id>/."""
    return Path(settings.HUMEVAL_JOBS_DIR).resolve()


def job_dir(job_id: int) -> Path:
    return jobs_root() / str(int(job_id))


def check_server_paths(job_kind: JobKind, params: dict) -> None:
    """Refuse server paths unless the management commands set `server_paths`: a path param
    must then lie in the jobs directory (where job_files.py puts uploads and outputs).
    Checked before anything opens the path, and the message says nothing about the file."""
    if params.get("server_paths") is True:
        return
    names = list(job_kind.inputs) + [name for name, _ in job_kind.outputs] + ["encoder"]
    root = jobs_root()
    bad = [name for name in names if params.get(name) not in (None, "")
           and not (isinstance(params[name], str) and Path(params[name]).resolve().is_relative_to(root))]
    if bad:
        raise JobParamsError(f"{', '.join(bad)}: server paths are taken from the management commands only; "
                             "upload input files instead (outputs go to the job's own files)")


def file_sha256(path: str) -> str:
    """Fingerprint of an input file, kept in a job's params: an edited file is a new job,
    never the resumption of one started on other contents."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
