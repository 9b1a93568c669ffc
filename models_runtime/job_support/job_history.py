"""A job's history: why each attempt that did not finish ended (issue 31, item 4).

`Job.errors` holds one entry per such ending, `{"error": why, "attempt": n, "resumable"}`
(plus the traceback of a bug): a lost worker (the stale check gave the job back, or a
redelivered message found its worker gone), an error (the job failed), a cancel. A job
requeued after a lost worker so shows what happened to its first attempt, not only that it
took two; `manage.py jobs show ID` and the study's jobs page list the entries by attempt.
"""
from ..models import Job


def lost_worker(job: Job, now) -> str:
    """Why an attempt whose worker stopped beating ended."""
    since = job.heartbeat_at or job.updated_at
    return (f"no heartbeat from worker {job.worker or '?'} for {(now - since).total_seconds():.0f} s: "
            "the worker was lost")


def append(job_id: int, entry: dict) -> None:
    """Add an ending to the job's history (`entry` names its attempt)."""
    job = Job.objects.only("errors").get(pk=job_id)
    Job.objects.filter(pk=job_id).update(errors=list(job.errors or []) + [entry])


def history_lines(job: Job) -> list[str]:
    """`attempt N: why` per ending, then where the job stands now."""
    lines = [f"attempt {e.get('attempt', '?')}: {e.get('error', '')}" for e in job.errors or []]
    return lines + [f"now: {job.state}, {job.done}/{job.total} items, {job.attempts} attempt(s)"]
