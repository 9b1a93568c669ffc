"""Job kinds and the resumable chunked runner.

A job kind says how to list a job's items and how to process a chunk of them:

    register_job_kind("score", items=score_items, process_chunk=score_chunk,
                      finish=score_finish, validate=validate_score_params)

- `items(job) -> list[str]`: the item keys, deterministic for given params.
- `process_chunk(job, keys) -> {key: result}`: does the work of those items; its database
  writes run in the same transaction as the checkpoints, so they commit together or not at
  all. A value may be `ItemError("why")` to record a per-item failure. Raising means the
  whole chunk failed: it is retried (transient), or the job fails (`FATAL_ERRORS`).
- `finish(job) -> dict`: the job's result once every item has a checkpoint (optional).
- `validate(params) -> params`: checks and normalises params; raise JobParamsError.

`submit_job` creates a Job and runs it through Celery when a broker is configured, in
process otherwise. `run_job` can be called any number of times for one job (a redelivered
Celery message, a restarted command): finished items are never redone.
"""
import os
import socket
import time
from dataclasses import dataclass
from typing import Callable, Optional

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from .backends.config import ModelNotAvailable
from .metrics.registry import UnknownMetric
from .models import Job, JobItem


class JobParamsError(ValueError):
    """Bad job parameters: reported to the user, the job is not started."""


class ItemError:
    """A per-item failure returned by process_chunk (the item is done, with an error)."""

    def __init__(self, message):
        self.message = str(message)


FATAL_ERRORS = (ModelNotAvailable, UnknownMetric, JobParamsError, FileNotFoundError, PermissionError)


@dataclass
class JobKind:
    kind: str
    items: Callable
    process_chunk: Callable
    finish: Optional[Callable] = None
    validate: Optional[Callable] = None
    chunk_size: int = 16


_KINDS = {}
KIND_MODULES = ["models_runtime.scoring", "models_runtime.rag", "models_runtime.judges.jobs"]


def register_job_kind(kind, process_chunk=None, *, items, finish=None, validate=None, chunk_size=16):
    _KINDS[kind] = JobKind(kind, items, process_chunk, finish, validate, chunk_size)
    return _KINDS[kind]


def _load_kinds():
    import importlib

    for module in KIND_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if not module.startswith(str(exc.name)):
                raise


def get_job_kind(kind):
    if kind not in _KINDS:
        _load_kinds()
    if kind not in _KINDS:
        raise JobParamsError(f"unknown job kind {kind!r} (known: {', '.join(job_kinds())})")
    return _KINDS[kind]


def job_kinds():
    _load_kinds()
    return sorted(_KINDS)


def uses_broker():
    return bool(getattr(settings, "CELERY_BROKER_URL", "")) and not getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False)


def submit_job(kind, params, user=None, run=True, on_progress=None):
    """Validate params, create the Job, start it (Celery or in process). -> Job."""
    job_kind = get_job_kind(kind)
    params = dict(params or {})
    if job_kind.validate:
        params = job_kind.validate(params)
    job = Job.objects.create(kind=kind, params=params, created_by=user if user and user.is_authenticated else None)
    if not run:
        return job
    if uses_broker():
        from .tasks import run_job_task

        task_id = f"humeval-job-{job.pk}"
        Job.objects.filter(pk=job.pk).update(celery_task_id=task_id)
        transaction.on_commit(lambda: _enqueue(run_job_task, job, task_id))
    else:
        run_job(job.pk, on_progress=on_progress)
    job.refresh_from_db()
    return job


def _enqueue(task, job, task_id):
    """Send the job to the broker; if the broker cannot be reached (Redis down), the job
    fails at once with a clear reason instead of staying queued forever."""
    try:
        task.apply_async(args=[job.pk], task_id=task_id)
    except Exception as exc:  # kombu/redis connection errors have no common base class
        Job.objects.filter(pk=job.pk).update(
            state=Job.FAILED, finished_at=timezone.now(),
            errors=[{"error": f"could not reach the task broker (CELERY_BROKER_URL): {exc}; "
                              "start Redis and submit the job again"}])


def worker_name():
    return f"{socket.gethostname()}:{os.getpid()}"


def _chunks(seq, size):
    for start in range(0, len(seq), size):
        yield seq[start:start + size]


def run_job(job_id, on_progress=None, worker=None):
    """Process the unfinished items of a job, chunk by chunk. Safe to call again."""
    worker = worker or worker_name()
    job = Job.objects.get(pk=job_id)
    if job.state in (Job.DONE, Job.FAILED):
        return job
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
        result = kind.finish(job) if kind.finish else None
    except FATAL_ERRORS as exc:
        _fail(job, exc)
    except Exception as exc:  # noqa: BLE001 - an unexpected bug fails the job visibly, then re-raises
        _fail(job, exc)
        raise
    else:
        job.refresh_from_db()
        timings = dict(job.timings or {})
        timings.update({"busy_seconds": round(job.busy_seconds, 3),
                        "wall_seconds": round((timezone.now() - job.started_at).total_seconds(), 3)})
        Job.objects.filter(pk=job.pk).update(state=Job.DONE, result=result, timings=timings,
                                             finished_at=timezone.now())
    job.refresh_from_db()
    return job


def _fail(job, exc):
    message = str(exc) or exc.__class__.__name__
    job.refresh_from_db()
    Job.objects.filter(pk=job.pk).update(state=Job.FAILED, errors=list(job.errors or []) + [{"error": message}],
                                         finished_at=timezone.now())


def _run_chunk(job, kind, chunk, position, worker):
    """Process one chunk with retries; commit its effects and checkpoints together.
    -> number of items newly finished."""
    retries = int(job.params.get("retries", 3))
    delay = float(job.params.get("retry_delay_seconds", 1.0))
    last_error = None
    for attempt in range(retries + 1):
        started = time.perf_counter()
        try:
            with transaction.atomic():
                results = kind.process_chunk(job, list(chunk))
                rows = []
                for key in chunk:
                    value = results.get(key)
                    error = value.message if isinstance(value, ItemError) else ""
                    rows.append(JobItem(job=job, key=key, position=position[key], worker=worker,
                                        result=None if error else value, error=error))
                JobItem.objects.bulk_create(rows)  # IntegrityError: someone else finished them
                n_errors = sum(1 for r in rows if r.error)
                Job.objects.filter(pk=job.pk).update(
                    done=F("done") + len(rows), n_errors=F("n_errors") + n_errors,
                    busy_seconds=F("busy_seconds") + (time.perf_counter() - started), updated_at=timezone.now())
            return len(rows)
        except IntegrityError:
            # A concurrent delivery of the same job finished (some of) these items: redo
            # nothing, count what is really finished.
            finished = JobItem.objects.filter(job=job, key__in=chunk).count()
            return finished
        except FATAL_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - transient: retry with backoff, then per-item errors
            last_error = f"{exc.__class__.__name__}: {exc}"
            if attempt < retries:
                time.sleep(delay * (2 ** attempt))
    with transaction.atomic():
        JobItem.objects.bulk_create(
            [JobItem(job=job, key=k, position=position[k], worker=worker, error=last_error) for k in chunk],
            ignore_conflicts=True)
        Job.objects.filter(pk=job.pk).update(done=F("done") + len(chunk), n_errors=F("n_errors") + len(chunk))
    return len(chunk)


def job_errors(job, limit=100):
    """Job-level errors and the first `limit` per-item errors, as JSON."""
    items = JobItem.objects.filter(job=job).exclude(error="").order_by("position")[:limit]
    return list(job.errors or []) + [{"item": i.key, "error": i.error} for i in items]


def job_json(job):
    return {
        "id": job.pk, "kind": job.kind, "params": job.params, "state": job.state,
        "progress": {"done": job.done, "total": job.total},
        "errors": job_errors(job), "n_errors": job.n_errors, "result": job.result, "timings": job.timings,
        "attempts": job.attempts,
        "created_at": job.created_at.isoformat() if job.created_at else None,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }
