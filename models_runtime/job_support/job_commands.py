"""How a runtime command runs its job, the same way for every command in
management/commands: submit it, or resume the unfinished twin left by an earlier run of the
same command; wait for it with a progress bar on a terminal (or, with `--no-wait`, print
`{"job": id, "state": ...}` and return); then report the outcome honestly:

- `failed`: the traceback (if a bug caused it) on stderr, and a CommandError (exit 1)
  naming the error. Re-running the same command resumes the job.
- `done_with_errors`: exit 0, with one warning line on stderr counting the failed items.
- `cancelled` (`manage.py jobs cancel ID`): a CommandError; re-running resumes it.

The commands set `server_paths` in the params of kinds that read or write files: only they
may name server paths (the web and the API upload files instead, job_files.py).
"""
import json

from django.core.management.base import CommandError

from ..backends.config import ModelNotAvailable
from ..jobs import interrupt_job, prepare_job, run_job, start_job, uses_broker
from ..metrics.registry import UnknownMetric
from ..models import Job
from ..progress import ProgressBar, wait_for_job
from .kinds import get_job_kind
from .reporting import job_errors

# Raised while checking a command's parameters: the user's mistake, shown without a traceback.
USER_ERRORS = (ValueError, ModelNotAvailable, UnknownMetric, FileNotFoundError, PermissionError)


def add_wait_argument(parser) -> None:
    parser.add_argument("--no-wait", action="store_true",
                        help="send the job to the Celery workers (needs CELERY_BROKER_URL), print "
                             '{"job": id, "state": ...} and return')


def run_command_job(command, kind: str, params: dict, *, desc: str, no_wait: bool = False,
                    local: bool = False) -> Job | None:
    """Submit or resume the job and wait for it. -> the finished Job, or None after
    printing the job id (`no_wait`). `local`: the job reads or writes files on this
    machine, so waiting runs it in this process even when a broker is configured."""
    if no_wait and not uses_broker():
        raise CommandError("--no-wait needs a Celery broker (set CELERY_BROKER_URL); without one the job runs "
                           "in this process: leave out --no-wait")
    try:
        job_kind = get_job_kind(kind)
        if job_kind.inputs or job_kind.outputs or params.get("encoder"):
            params = dict(params, server_paths=True)  # a command may read and write the server's files
        job, resumed = prepare_job(kind, params)
    except USER_ERRORS as exc:
        raise CommandError(str(exc)) from exc
    if resumed:
        command.stderr.write(f"resuming job {job.pk} ({kind}, {job.done}/{job.total} items done)")
    on_workers = bool(job.celery_task_id) and job.state != Job.FAILED  # its message is in the broker
    if no_wait:
        if not on_workers:
            start_job(job)
            job.refresh_from_db()
        command.stdout.write(json.dumps({"job": job.pk, "state": job.state}))
        return None
    bar = ProgressBar(desc, getattr(command.stderr, "_out", command.stderr))
    try:
        if on_workers and uses_broker():
            job = wait_for_job(job, on_progress=bar)
        elif uses_broker() and not local:
            start_job(job)
            job = wait_for_job(job, on_progress=bar)
        else:
            job = run_job(job.pk, on_progress=bar)
    except KeyboardInterrupt:
        job.refresh_from_db()
        if not (uses_broker() and (on_workers or not local)):  # this process ran it: stop it cleanly
            interrupt_job(job, f"interrupted (Ctrl-C) at {job.done}/{job.total} items")
            raise CommandError(f"interrupted: job {job.pk} ({kind}) stopped at {job.done}/{job.total} items; "
                               "re-running the same command resumes it") from None
        raise CommandError(f"stopped waiting: job {job.pk} ({kind}) goes on on the workers "
                           f"(manage.py jobs cancel {job.pk} stops it)") from None
    finally:
        bar.close()
    return job


def imported_note(job: Job) -> str:
    """What a stopped chain leaves in its study (pipeline_stopped's `imported`)."""
    if job.kind != "pipeline" or not isinstance(job.result, dict):
        return ""
    ids = job.result.get("imported") or []
    if not ids:
        return "; nothing was imported"
    shown = ", ".join(str(i) for i in ids[:10]) + (f", ... ({len(ids) - 10} more)" if len(ids) > 10 else "")
    return f"; {len(ids)} items were imported into study {job.result.get('study')} and stay there: {shown}"


def check_outcome(command, job: Job) -> None:
    """CommandError for a failed or cancelled job (a bug's traceback first, on stderr),
    saying whether re-running resumes it or what must change first; a warning line on
    stderr for one that finished with failed items."""
    units = "steps" if job.kind == "pipeline" else "items"
    if job.state == Job.CANCELLED:
        raise CommandError(f"job {job.pk} ({job.kind}) was cancelled at {job.done}/{job.total} {units}"
                           f"{imported_note(job)} (re-running the same command resumes it)")
    if job.state == Job.FAILED:
        last = (job.errors or [{}])[-1]
        if last.get("traceback"):
            command.stderr.write(last["traceback"].rstrip())
        hint = ("re-running the same command resumes it" if last.get("resumable") else
                "a bug: the traceback is above; please report it" if last.get("traceback") else
                "fix what the message says, then run the command again")
        raise CommandError(f"job {job.pk} ({job.kind}) failed: {last.get('error', 'unknown error')}"
                           f"{imported_note(job)} ({hint})")
    for metric, counts in sample_counts_of(job).items():
        if counts.get("unparsed_samples"):
            command.stderr.write(f"warning: {metric}: {counts['unparsed_samples']} of {counts['samples']} samples had "
                                 "no score in them and were left out of the means (the result's \"samples\")")
    if job.state == Job.DONE_WITH_ERRORS:
        first = next((e for e in job_errors(job, limit=1) if "item" in e), None)
        example = f" (first: item {first['item']}: {first['error']})" if first else ""
        command.stderr.write(f"warning: job {job.pk} finished with {job.n_errors} of {job.total} items failed"
                             f"{example}; all errors: GET /api/jobs/{job.pk}/")


def sample_counts_of(job: Job) -> dict:
    """The score job's `samples` (also inside a pipeline's score step)."""
    result = job.result if isinstance(job.result, dict) else {}
    if job.kind == "pipeline":
        result = ((result.get("steps") or {}).get("score") or {}).get("result") or {}
    elif job.kind != "score":
        return {}  # other kinds' `samples` mean something else (ip: samples per cue)
    samples = result.get("samples")
    return samples if isinstance(samples, dict) else {}


def job_summary(job: Job) -> dict:
    """The `{"job", "state", "progress", "result", "errors"}` document that `score` and
    `generate rag` print."""
    return {"job": job.pk, "state": job.state, "progress": {"done": job.done, "total": job.total},
            "result": job.result, "errors": job_errors(job)}
