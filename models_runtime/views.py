"""The study dashboard's jobs panel (GET /studies/<slug>/jobs/, an htmx partial polled by
the dashboard): every job touching the study, whoever started it (CLI, API, web), with its
progress bar, errors, heartbeat and file downloads. It lives here, not in annotate, so
annotate never imports the runtime."""
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.utils import timezone

from annotate.services import may_read_study

from .job_support.job_files import job_file_path, redact
from .job_support.reporting import job_errors
from .models import Job

JOBS_SHOWN = 20
HISTORY_SHOWN = 5  # the last endings of a job's attempts


def ago(seconds: float | None) -> str:
    """42s, 5m, 3h, 2d (rounded down); '-' for never."""
    if seconds is None:
        return "-"
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def job_row(job: Job, now) -> dict:
    errors = redact(job_errors(job, limit=3))
    return {
        "job": job, "percent": round(100 * job.done / job.total) if job.total else (100 if job.state == "done" else 0),
        # the job's history (why each unfinished attempt ended: job_history.py), then item errors
        "errors": [e for e in errors if "item" not in e][-HISTORY_SHOWN:] + [e for e in errors if "item" in e],
        "heartbeat_age": ago((now - job.heartbeat_at).total_seconds()) if job.heartbeat_at else None,
        "downloads": [name for name in job.files or [] if job_file_path(job, name).is_file()],
    }


@login_required
def jobs_panel(request, slug):
    if not may_read_study(request.user, slug):  # missing and unreadable: the same 404
        raise Http404("No such study.")
    now = timezone.now()
    rows = [job_row(job, now) for job in Job.objects.filter(study=slug).order_by("-pk")[:JOBS_SHOWN]]
    return render(request, "dashboard/_jobs.html", {"rows": rows, "slug": slug})
