"""A job as the API, the jobs page and the commands show it (JSON, errors without tracebacks)."""
from ..models import Job, JobItem


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
        "attempts": job.attempts, "study": job.study, "step": job.step or {}, "files": list(job.files or []),
        "heartbeat_at": job.heartbeat_at.isoformat() if job.heartbeat_at else None,
        "created_at": job.created_at.isoformat() if job.created_at else None,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }
