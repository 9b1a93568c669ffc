"""Job kinds and the resumable chunked runner.

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

Outcomes are honest: a job whose items all succeeded ends `done`; one with failed items
ends `done_with_errors`. An exception from process_chunk fails the job at once (state
`failed`, the message and, for an unexpected exception, the traceback in `errors`),
except transient ones (`is_transient`: the network, timeouts, memory), which retry the
chunk with backoff first. A failed job keeps its checkpoints: re-running the same command
resumes it (`prepare_job`).

`submit_job` creates a Job and runs it through Celery when a broker is configured, in
process otherwise. `run_job` can be called any number of times for one job (a redelivered
Celery message, a restarted command): finished items are never redone.
"""
import hashlib
import logging
import os
import socket
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from .backends.config import ModelNotAvailable
from .metrics.registry import UnknownMetric
from .models import Job, JobItem

logger = logging.getLogger(__name__)

RUN_JOB_TASK = "models_runtime.run_job"  # the Celery task name (tasks.py); sent by name, no import


class JobParamsError(ValueError):
    """Bad job parameters: reported to the user, the job is not started."""


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


@dataclass(frozen=True)
class JobKind:
    kind: str
    items: Callable[[Job], list[str]]
    process_chunk: Callable[[Job, list[str]], dict[str, Any]]
    finish: Callable[[Job], Any] | None = None
    validate: Callable[[dict], dict] | None = None
    chunk_size: int = 16
    # False: process_chunk runs outside the checkpoint transaction, so what it commits
    # (the pipeline's steps run their own jobs) is visible and kept as it goes.
    atomic: bool = True


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


def file_sha256(path: str) -> str:
    """Fingerprint of an input file, kept in a job's params: an edited file is a new job,
    never the resumption of one started on other contents."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---- submitting --------------------------------------------------------------------------

def uses_broker() -> bool:
    return bool(getattr(settings, "CELERY_BROKER_URL", "")) and not getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False)


def validate_params(kind: str, params: dict | None) -> dict:
    """The kind's normalised params (JobParamsError and friends when they are bad)."""
    job_kind = get_job_kind(kind)
    params = dict(params or {})
    return job_kind.validate(params) if job_kind.validate else params


def submit_job(kind: str, params: dict | None, user=None, run: bool = True, on_progress=None) -> Job:
    """Validate params, create the Job, start it (Celery or in process). -> Job."""
    params = validate_params(kind, params)
    job = Job.objects.create(kind=kind, params=params, created_by=user if user and user.is_authenticated else None)
    if run:
        start_job(job, on_progress=on_progress)
        job.refresh_from_db()
    return job


def find_twin(kind: str, params: dict) -> Job | None:
    """The newest unfinished (queued, running or failed) job of `kind` with exactly these
    validated params. Compared in Python: JSON equality must not depend on the database."""
    for job in Job.objects.filter(kind=kind, state__in=Job.RESUMABLE_STATES).order_by("-pk"):
        if job.params == params:
            return job
    return None


def prepare_job(kind: str, params: dict | None, user=None) -> tuple[Job, bool]:
    """The job a command should run: an unfinished twin (a failed one is reopened, its
    checkpoints kept), else a new one. -> (job, resumed)."""
    params = validate_params(kind, params)
    twin = find_twin(kind, params)
    if twin is None:
        return Job.objects.create(kind=kind, params=params, created_by=user if user and user.is_authenticated
                                  else None), False
    if twin.state == Job.FAILED:
        Job.objects.filter(pk=twin.pk).update(state=Job.QUEUED, finished_at=None, celery_task_id="")
        twin.refresh_from_db()
        logger.info("job %d %s reopened to resume after failing (%d/%d items done)", twin.pk, kind, twin.done,
                    twin.total)
    return twin, True


def start_job(job: Job, on_progress=None) -> None:
    """Send the job to the Celery workers when a broker is configured, else run it here."""
    if uses_broker():
        task_id = f"humeval-job-{job.pk}-{job.attempts}"
        Job.objects.filter(pk=job.pk).update(celery_task_id=task_id)
        transaction.on_commit(lambda: _enqueue(job, task_id))
    else:
        run_job(job.pk, on_progress=on_progress)


def _enqueue(job, task_id):
    """Send the job to the broker; if the broker cannot be reached (Redis down), the job
    fails at once with a clear reason instead of staying queued forever."""
    from celery import current_app

    try:
        current_app.send_task(RUN_JOB_TASK, args=[job.pk], task_id=task_id)
    except Exception as exc:  # kombu/redis connection errors have no common base class
        _fail(job, f"could not reach the task broker (CELERY_BROKER_URL): {exc}; start Redis and submit the job again")


# ---- running -----------------------------------------------------------------------------

def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _chunks(seq, size):
    for start in range(0, len(seq), size):
        yield seq[start:start + size]


def run_job(job_id: int, on_progress=None, worker: str | None = None) -> Job:
    """Process the unfinished items of a job, chunk by chunk. Safe to call again; a
    finished job (done, done_with_errors, failed) is left as it is."""
    worker = worker or worker_name()
    job = Job.objects.get(pk=job_id)
    if job.state in Job.FINISHED_STATES:
        return job
    began = time.monotonic()
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(state=Job.RUNNING, attempts=F("attempts") + 1, updated_at=now)
    Job.objects.filter(pk=job.pk, started_at__isnull=True).update(started_at=now)
    job.refresh_from_db()
    try:
        kind = get_job_kind(job.kind)
        keys = list(kind.items(job))
        if len(set(keys)) != len(keys):
            raise JobParamsError("the job's item keys are not unique")
        finished = set(JobItem.objects.filter(job=job).values_list("key", flat=True))
        done = sum(1 for k in keys if k in finished)
        Job.objects.filter(pk=job.pk).update(total=len(keys), done=done)
        logger.info("job %d %s %s on %s: %d/%d items done", job.pk, job.kind,
                    "resumed" if job.attempts > 1 or done else "started", worker, done, len(keys))
        position = {k: i for i, k in enumerate(keys)}
        todo = [k for k in keys if k not in finished]
        size = max(1, int(job.params.get("chunk_size") or kind.chunk_size))
        throttle = float(job.params.get("throttle_seconds") or 0)
        if on_progress:
            on_progress(done, len(keys))
        for chunk in _chunks(todo, size):
            done += _run_chunk(job, kind, chunk, position, worker)
            if on_progress:
                on_progress(done, len(keys))
            if throttle:
                time.sleep(throttle)
        finished = set(JobItem.objects.filter(job=job).values_list("key", flat=True))
        missing = sum(1 for k in keys if k not in finished)
        if missing:  # never report a job done that is not
            raise RuntimeError(f"{missing} items have no checkpoint after the last chunk")
        result = kind.finish(job) if kind.finish else None
    except FATAL_ERRORS as exc:
        _fail(job, str(exc) or exc.__class__.__name__, seconds=time.monotonic() - began)
    except ChunkGaveUp as exc:
        _fail(job, str(exc), seconds=time.monotonic() - began)
    except Exception as exc:  # a bug: fail the job now, with the traceback in its record
        _fail(job, f"{exc.__class__.__name__}: {exc}", traceback.format_exc(), seconds=time.monotonic() - began)
    else:
        _finish(job, result, seconds=time.monotonic() - began)
    job.refresh_from_db()
    return job


def _finish(job, result, seconds):
    """done, or done_with_errors when any item failed (counted from the checkpoints)."""
    n_errors = JobItem.objects.filter(job=job).exclude(error="").count()
    job.refresh_from_db()
    state = Job.DONE_WITH_ERRORS if n_errors else Job.DONE
    timings = dict(job.timings or {})
    timings.update({"busy_seconds": round(job.busy_seconds, 3),
                    "wall_seconds": round((timezone.now() - job.started_at).total_seconds(), 3)})
    Job.objects.filter(pk=job.pk).update(state=state, result=result, timings=timings, n_errors=n_errors,
                                         finished_at=timezone.now())
    logger.info("job %d %s finished: %s, %d/%d items, %d failed, %.1f s", job.pk, job.kind, state, job.done,
                job.total, n_errors, seconds)


def _fail(job, message, trace=None, seconds=None):
    """State failed; the error (with the traceback of a bug) appended to the job's record."""
    job.refresh_from_db()
    entry = {"error": message, "attempt": job.attempts}
    if trace:
        entry["traceback"] = trace
    Job.objects.filter(pk=job.pk).update(state=Job.FAILED, errors=list(job.errors or []) + [entry],
                                         finished_at=timezone.now())
    logger.error("job %d %s failed: %s (%d/%d items done%s)", job.pk, job.kind, message, job.done, job.total,
                 f", {seconds:.1f} s" if seconds is not None else "")


def _run_chunk(job, kind, chunk, position, worker):
    """Process one chunk; commit its effects and checkpoints together. Transient errors
    are retried with backoff; any other exception propagates (the job fails).
    -> number of items newly finished."""
    retries = int(job.params.get("retries", 3))
    delay = float(job.params.get("retry_delay_seconds", 1.0))
    for attempt in range(retries + 1):
        started = time.perf_counter()
        try:
            early = None if kind.atomic else kind.process_chunk(job, list(chunk))
            with transaction.atomic():
                results = kind.process_chunk(job, list(chunk)) if kind.atomic else early
                rows = [_checkpoint(job, key, position[key], worker, results) for key in chunk]
                JobItem.objects.bulk_create(rows)  # IntegrityError: someone else finished some of them
                n_errors = sum(1 for r in rows if r.error)
                Job.objects.filter(pk=job.pk).update(
                    done=F("done") + len(rows), n_errors=F("n_errors") + n_errors,
                    busy_seconds=F("busy_seconds") + (time.perf_counter() - started), updated_at=timezone.now())
            for row in rows:
                if row.error:
                    logger.warning("job %d %s: item %s failed: %s", job.pk, job.kind, row.key, row.error)
            return len(rows)
        except IntegrityError:
            # A concurrent delivery of the same job finished (some of) these items: redo only
            # the others. If nobody did, the IntegrityError came from the kind's own writes.
            finished = set(JobItem.objects.filter(job=job, key__in=chunk).values_list("key", flat=True))
            if not finished:
                raise
            rest = [k for k in chunk if k not in finished]
            return len(finished) + (_run_chunk(job, kind, rest, position, worker) if rest else 0)
        except Exception as exc:
            if not is_transient(exc):
                raise
            why = f"{exc.__class__.__name__}: {exc}"
            if attempt == retries:
                raise ChunkGaveUp(f"{why} (chunk of {len(chunk)} items from {chunk[0]!r}, {retries + 1} attempts); "
                                  "re-run the same command to resume") from exc
            wait = delay * (2 ** attempt)
            logger.warning("job %d %s: chunk of %d items from %r retried in %.1f s (attempt %d of %d): %s",
                           job.pk, job.kind, len(chunk), chunk[0], wait, attempt + 2, retries + 1, why)
            time.sleep(wait)
    raise AssertionError("unreachable")


def _checkpoint(job, key, position, worker, results):
    if key not in results:
        raise KeyError(f"process_chunk of {job.kind!r} returned no result for item {key!r}")
    value = results[key]
    error = value.message if isinstance(value, ItemError) else ""
    return JobItem(job=job, key=key, position=position, worker=worker, result=None if error else value, error=error)


# ---- reporting ---------------------------------------------------------------------------

def job_errors(job: Job, limit: int = 100) -> list[dict]:
    """Job-level errors ({"error", "attempt"}) and the first `limit` per-item errors
    ({"item", "error"}), as JSON. Tracebacks stay in the record (the Django admin, a
    command's stderr): the API shows what went wrong, not the server's source."""
    items = JobItem.objects.filter(job=job).exclude(error="").order_by("position")[:limit]
    return ([{k: v for k, v in e.items() if k != "traceback"} for e in job.errors or []]
            + [{"item": i.key, "error": i.error} for i in items])


def job_json(job: Job) -> dict:
    return {
        "id": job.pk, "kind": job.kind, "params": job.params, "state": job.state,
        "progress": {"done": job.done, "total": job.total},
        "errors": job_errors(job), "n_errors": job.n_errors, "result": job.result, "timings": job.timings,
        "attempts": job.attempts,
        "created_at": job.created_at.isoformat() if job.created_at else None,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }
