"""The resumable chunked runner of every job kind.

A job kind (models_runtime/job_support/kinds.py) says how to list a job's items and how to
process a chunk of them.

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
import logging
import os
import socket
import threading
import time
import traceback
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from humeval import background

from .job_support import job_history
from .job_support.heartbeat import Heartbeat
from .job_support.kinds import (
    FATAL_ERRORS,
    ChunkGaveUp,
    ItemError,
    JobCancelled,
    JobKind,
    JobParamsError,
    check_server_paths,
    get_job_kind,
    is_transient,
)
from .models import Job, JobItem

logger = logging.getLogger(__name__)

RUN_JOB_TASK = "models_runtime.run_job"  # the Celery task name (tasks.py); sent by name, no import


# ---- submitting --------------------------------------------------------------------------

def uses_broker() -> bool:
    return bool(getattr(settings, "CELERY_BROKER_URL", "")) and not getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False)


# The runner's own params, taken by every kind: (low, high, integer?).
RUNNER_PARAMS = {"chunk_size": (1, 10_000, True), "retries": (0, 20, True),
                 "retry_delay_seconds": (0, 600, False), "throttle_seconds": (0, 600, False)}


def check_runner_params(params: dict) -> None:
    """Bounds of the runner's params (`throttle_seconds: 1e9` would leave a job running
    for ever); JobParamsError naming each bad one."""
    bad = []
    for name, (low, high, integer) in RUNNER_PARAMS.items():
        value = params.get(name)
        if value is None:
            continue
        kind = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kind) or not low <= value <= high:
            bad.append(f"{name} must be {'an integer' if integer else 'a number'} from {low} to {high}, "
                       f"got {value!r}"[:120])
    if bad:
        raise JobParamsError("; ".join(bad))


def validate_params(kind: str, params: dict | None) -> dict:
    """The kind's normalised params (JobParamsError and friends when they are bad)."""
    job_kind = get_job_kind(kind)
    params = dict(params or {})
    check_server_paths(job_kind, params)
    check_runner_params(params)
    return job_kind.validate(params) if job_kind.validate else params


def create_job(kind: str, params: dict, user=None) -> Job:
    """A queued Job row for already validated params."""
    creator = user if user is not None and user.is_authenticated else None
    return Job.objects.create(kind=kind, params=params, created_by=creator)


def submit_job(kind: str, params: dict | None, user=None, run: bool = True, on_progress=None) -> Job:
    """Validate params, create the Job, start it (Celery or in process). -> Job."""
    params = validate_params(kind, params)
    job = create_job(kind, params, user)
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
        return create_job(kind, params, user), False
    if twin.state in (Job.FAILED, Job.CANCELLED):
        reopen(twin)
        logger.info("job %d %s reopened to resume after %s (%d/%d items done)", twin.pk, kind, twin.state,
                    twin.done, twin.total)
        twin.refresh_from_db()
    return twin, True


def reopen(job: Job) -> None:
    """A failed or cancelled job back to `queued`, its checkpoints kept."""
    Job.objects.filter(pk=job.pk).update(state=Job.QUEUED, finished_at=None, celery_task_id="",
                                         cancel_requested=False)


def start_job(job: Job, on_progress=None, background: bool = False) -> None:
    """Send the job to the Celery workers when a broker is configured; without one, run it
    here, or (`background`, a web request) in a thread of this process once the request's
    transaction commits: never inside the request, which a web server kills after 30 s."""
    if uses_broker():
        task_id = f"humeval-job-{job.pk}-{job.attempts}"
        Job.objects.filter(pk=job.pk).update(celery_task_id=task_id)
        transaction.on_commit(lambda: _enqueue(job, task_id))
    elif background:
        transaction.on_commit(lambda: run_in_thread(job.pk))
    else:
        run_job(job.pk, on_progress=on_progress)


BACKGROUND_THREADS: dict[int, background.Handle] = {}  # job id -> its unit (tests join them)


def run_in_thread(job_id: int) -> background.Handle:
    """Run a job on the background pool (humeval/background.py) with its own database
    connection. If the process dies, the heartbeat stops and the stale-job detector marks
    the job failed (resumable)."""
    def main():
        try:  # a worker name per thread: two threads never run one job at once (run_job's claim)
            run_job(job_id, worker=f"{worker_name()}:{threading.get_ident()}")
        except Exception:  # run_job records its own failures; this is a database outage
            logger.exception("job %d: background thread failed", job_id)
        finally:
            connection.close()

    handle = background.submit(main)
    BACKGROUND_THREADS[job_id] = handle
    return handle


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
    # Claim it, unless another process beat for it within the last three heartbeats: a
    # message redelivered while its job still runs (a job longer than the broker's
    # visibility timeout) must not run it twice at once.
    beat = float(settings.HUMEVAL_JOB_HEARTBEAT_SECONDS)
    busy = Q(state=Job.RUNNING, heartbeat_at__gte=now - timedelta(seconds=3 * beat)) & ~Q(worker=worker[:200])
    claimed = (Job.objects.filter(pk=job.pk).exclude(busy if beat > 0 else Q(pk=None))
               .update(state=Job.RUNNING, attempts=F("attempts") + 1, updated_at=now, heartbeat_at=now,
                       worker=worker[:200]))
    if not claimed:
        logger.info("job %d %s is running on %s (fresh heartbeat): not run again by %s", job.pk, job.kind,
                    job.worker, worker)
        return job
    if job.state == Job.RUNNING and job.worker != worker[:200]:  # a redelivered message of a lost worker
        job_history.append(job.pk, {"error": f"{job_history.lost_worker(job, now)}; resumed by {worker}",
                                    "attempt": job.attempts, "resumable": True})
        logger.warning("job %d %s: attempt %d lost its worker %s; resumed by %s", job.pk, job.kind, job.attempts,
                       job.worker or "?", worker)
    Job.objects.filter(pk=job.pk, started_at__isnull=True).update(started_at=now)
    job.refresh_from_db()
    with Heartbeat(job.pk, on_step=getattr(on_progress, "show_step", None)):
        return run_job_chunks(job, began, worker, on_progress)


def run_job_chunks(job: Job, began: float, worker: str, on_progress) -> Job:
    """run_job's work once the job is marked running: every outcome is recorded on the job."""
    kind = None
    try:
        kind = get_job_kind(job.kind)
        validate_params(job.kind, job.params)  # in the worker's own environment (its models, files)
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
        for n, chunk in enumerate(_chunks(todo, size)):
            if n and throttle:  # between chunks, never after the last
                pause(job, throttle)
            check_cancel(job)
            done += _run_chunk(job, kind, chunk, position, worker)
            if on_progress:
                on_progress(done, len(keys))
        finished = set(JobItem.objects.filter(job=job).values_list("key", flat=True))
        missing = sum(1 for k in keys if k not in finished)
        if missing:  # never report a job done that is not
            raise RuntimeError(f"{missing} items have no checkpoint after the last chunk")
        result = kind.finish(job) if kind.finish else None
    except JobCancelled as exc:
        Job.objects.filter(pk=job.pk).update(state=Job.CANCELLED, cancel_requested=False, finished_at=timezone.now())
        job.refresh_from_db()
        _note_error(job, {"error": str(exc) or f"cancelled on request at {job.done}/{job.total} items",
                          "resumable": True})
        logger.info("job %d %s cancelled (%d/%d items done)", job.pk, job.kind, job.done, job.total)
        _stopped(job, kind)
    except FATAL_ERRORS as exc:
        _fail(job, str(exc) or exc.__class__.__name__, seconds=time.monotonic() - began,
              resumable=bool(getattr(exc, "resumable", False)))
        _stopped(job, kind)
    except ChunkGaveUp as exc:
        _fail(job, str(exc), seconds=time.monotonic() - began)
        _stopped(job, kind)
    except Exception as exc:  # a bug: fail the job now, with the traceback in its record
        _fail(job, f"{exc.__class__.__name__}: {exc}", traceback.format_exc(), seconds=time.monotonic() - began,
              resumable=False)
        _stopped(job, kind)
    else:
        _finish(job, result, seconds=time.monotonic() - began)
    job.refresh_from_db()
    return job


def check_cancel(job: Job) -> None:
    """JobCancelled when `jobs cancel` asked this job (or its chain) to stop."""
    if Job.objects.filter(pk=job.pk, cancel_requested=True).exists():
        raise JobCancelled()


def pause(job: Job, seconds: float) -> None:
    """`throttle_seconds` between chunks, a second at a time so that a cancel is seen."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(1.0, left))
        check_cancel(job)


def _stopped(job: Job, kind: "JobKind | None") -> None:
    """Record what a stopped job did so far (JobKind.stopped), never failing the stop."""
    if kind is None or kind.stopped is None:
        return
    try:
        Job.objects.filter(pk=job.pk).update(result=kind.stopped(job))
    except Exception:  # the job is already recorded as stopped; this is a summary
        logger.exception("job %d: could not record what it did before it stopped", job.pk)


def stale_jobs(stale_seconds: float | None = None, now=None):
    """Running jobs whose heartbeat stopped more than `stale_seconds` ago
    (HUMEVAL_JOB_STALE_SECONDS): their worker was killed or lost."""
    now = now or timezone.now()
    limit = now - timedelta(seconds=float(settings.HUMEVAL_JOB_STALE_SECONDS if stale_seconds is None
                                          else stale_seconds))
    return Job.objects.filter(state=Job.RUNNING).filter(
        Q(heartbeat_at__lt=limit) | Q(heartbeat_at__isnull=True, updated_at__lt=limit))


def requeue_stale_jobs(stale_seconds: float | None = None) -> list[int]:
    """Give every stale running job back: with a broker it is queued again and sent to the
    workers (resuming at its checkpoints); without one it is marked failed, and re-running
    its command (or `jobs requeue ID`) resumes it. A job with a fresh heartbeat is never
    touched. -> the ids handled."""
    now = timezone.now()
    handled = []
    for job_id in stale_jobs(stale_seconds, now).values_list("pk", flat=True):
        with transaction.atomic():
            job = stale_jobs(stale_seconds, now).select_for_update().filter(pk=job_id).first()
            if job is None:  # it beat (or ended) meanwhile
                continue
            root = chain_root(job)
            if root.pk != job.pk and root.state == Job.RUNNING:
                continue  # a step of a chain: given back with its chain, through the root
            for step in Job.objects.filter(pk__in=chain_ids(job)[1:], state=Job.RUNNING):
                _give_back(step, now, send=False)  # the chain's worker resumes them inline
            _give_back(job, now, send=True)
        handled.append(job_id)
    return handled


def _give_back(job: Job, now, send: bool) -> None:
    """A lost worker's job: queued again (with a broker; sent only if `send`), else failed."""
    why = job_history.lost_worker(job, now)
    entry = {"error": why + ("; requeued" if uses_broker() else "; re-run to resume"), "attempt": job.attempts,
             "resumable": True}
    job_history.append(job.pk, entry)
    if uses_broker():
        reopen(job)
        job.refresh_from_db()
        if send:
            start_job(job)
    else:
        Job.objects.filter(pk=job.pk).update(state=Job.FAILED, finished_at=now)
    logger.warning("job %d %s: %s", job.pk, job.kind, entry["error"])


def requeue_job(job: Job) -> Job:
    """`jobs requeue ID`: a failed, cancelled or stale job back to work (the workers, or
    this process without a broker), resuming at its checkpoints. A step of a chain is
    requeued through its chain (its pipeline runs it again inline), never on its own."""
    root = chain_root(job)
    if root.pk != job.pk:
        job = root
    if job.state not in (Job.FAILED, Job.CANCELLED, Job.QUEUED, Job.RUNNING):
        raise JobParamsError(f"job {job.pk} is {job.state}: only failed, cancelled, queued or stale jobs are requeued")
    if job.state == Job.RUNNING and not stale_jobs().filter(pk=job.pk).exists():
        raise JobParamsError(f"job {job.pk} is running with a fresh heartbeat: cancel it first")
    reopen(job)
    job.refresh_from_db()
    start_job(job)
    job.refresh_from_db()
    return job


def chain_root(job: Job) -> Job:
    """The first job of the chain `job` is a step of (itself when it is no step)."""
    seen = set()
    while job.parent_id is not None and job.parent_id not in seen:
        seen.add(job.pk)
        job = Job.objects.get(pk=job.parent_id)
    return job


def chain_ids(root: Job) -> list[int]:
    """The root and every job under it."""
    ids, frontier = [root.pk], [root.pk]
    while frontier:
        frontier = list(Job.objects.filter(parent_id__in=frontier).exclude(pk__in=ids).values_list("pk", flat=True))
        ids += frontier
    return ids


def cancel_job(job: Job) -> Job:
    """Cancel the whole chain `job` belongs to (a pipeline and its steps' jobs): queued jobs
    at once, running ones when their runner next checks (between chunks). A job whose chain
    has finished is left as it is (JobParamsError)."""
    root = chain_root(job)
    ids = chain_ids(root)
    live = Job.objects.filter(pk__in=ids).exclude(state__in=Job.FINISHED_STATES)
    if not live.exists():
        raise JobParamsError(f"job {job.pk} is already {job.state}" + (
            f" (its chain, job {root.pk}, is {root.state})" if root.pk != job.pk else ""))
    live.filter(state=Job.QUEUED).update(state=Job.CANCELLED, finished_at=timezone.now())
    live.filter(state=Job.RUNNING).update(cancel_requested=True)
    job.refresh_from_db()
    return job


def interrupt_job(job: Job, why: str) -> None:
    """The process running `job` is stopping (Ctrl-C): its chain's running jobs become
    cancelled with `why`, resumable, instead of staying `running` until the stale check."""
    now = timezone.now()
    for running in Job.objects.filter(pk__in=chain_ids(chain_root(job)), state=Job.RUNNING):
        Job.objects.filter(pk=running.pk).update(
            state=Job.CANCELLED, finished_at=now, cancel_requested=False, step={},
            errors=list(running.errors or []) + [{"error": why, "attempt": running.attempts, "resumable": True}])


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


def _note_error(job, entry):
    job.refresh_from_db()
    job_history.append(job.pk, dict(entry, attempt=job.attempts))


def _fail(job, message, trace=None, seconds=None, resumable=True):
    """State failed; the error (with the traceback of a bug) appended to the job's record.
    `resumable`: whether running it again can succeed as it is (a lost server, a full
    disk), or something must be fixed first (a bad parameter, a bug)."""
    job.refresh_from_db()
    entry = {"error": message, "attempt": job.attempts, "resumable": resumable}
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
                    busy_seconds=F("busy_seconds") + (time.perf_counter() - started), updated_at=timezone.now(),
                    heartbeat_at=timezone.now(), step={})
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
                raise ChunkGaveUp(f"{why} (chunk of {len(chunk)} items from {chunk[0]!r}, {retries + 1} attempts)") \
                    from exc
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
