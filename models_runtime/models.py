"""Runtime jobs: one row per job, one checkpoint row per finished item.

A job is resumable because an item's checkpoint (JobItem) is written in the same
transaction as the item's effects: after a crash, the items with a checkpoint are
skipped and the others are redone from scratch.
"""
from django.conf import settings
from django.db import models


class Job(models.Model):
    QUEUED, RUNNING, DONE, DONE_WITH_ERRORS, FAILED = "queued", "running", "done", "done_with_errors", "failed"
    CANCELLED = "cancelled"
    STATES = [(s, s) for s in (QUEUED, RUNNING, DONE, DONE_WITH_ERRORS, FAILED, CANCELLED)]
    # done: every item succeeded; done_with_errors: every item finished, some with a data
    # error; failed: the job stopped (configuration error, bug, broker down, no heartbeat),
    # resumable; cancelled: stopped between chunks on request (`jobs cancel`), resumable.
    FINISHED_STATES = (DONE, DONE_WITH_ERRORS, FAILED, CANCELLED)
    RESUMABLE_STATES = (QUEUED, RUNNING, FAILED, CANCELLED)

    kind = models.CharField(max_length=64)
    params = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=16, choices=STATES, default=QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    n_errors = models.PositiveIntegerField(default=0)
    # Job-level errors [{"error", "attempt", "traceback"?}]; per-item ones live on JobItem.
    errors = models.JSONField(default=list, blank=True)
    result = models.JSONField(null=True, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    busy_seconds = models.FloatField(default=0.0)  # summed time spent processing chunks
    attempts = models.PositiveIntegerField(default=0)  # how many times a worker picked it up
    celery_task_id = models.CharField(max_length=200, blank=True)
    # The study the job works on (params `study` or `slug`), so the dashboard lists every
    # job touching a study whoever started it (CLI, API, web).
    study = models.CharField(max_length=100, blank=True, db_index=True)
    # Set by whoever runs the job, every HUMEVAL_JOB_HEARTBEAT_SECONDS while it runs: a
    # running job whose heartbeat stopped lost its worker (jobs.requeue_stale_jobs).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)  # who runs (ran) it: host:pid
    cancel_requested = models.BooleanField(default=False)  # checked between chunks
    # Progress inside the running chunk ({"done", "total", "unit"}, models_runtime/step.py).
    step = models.JSONField(default=dict, blank=True)
    # Names of the files in the job's own directory (web/API jobs: uploads and outputs),
    # the only names GET /api/jobs/{id}/files/<name> serves.
    files = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # The job of the chain this one is a step of (a pipeline's generate and score jobs): a
    # chain is cancelled and requeued as one, through its root.
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self):
        return f"job {self.pk} {self.kind} {self.state} {self.done}/{self.total}"

    def save(self, *args, **kwargs):
        if not self.study:  # however the job was made, it carries its study's slug
            self.study = study_slug(self.params)
        super().save(*args, **kwargs)


def study_slug(params) -> str:
    """The slug of the study a job's params name (`study`, or `slug` for the file kinds), or ""."""
    slug = (params.get("study") or params.get("slug")) if isinstance(params, dict) else None
    return slug[:100] if isinstance(slug, str) else ""


class JobItem(models.Model):
    """Checkpoint: item `key` of `job` is finished (with its result or its error)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=300)
    position = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    worker = models.CharField(max_length=200, blank=True)
    finished_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job_id", "position"]
        constraints = [models.UniqueConstraint(fields=["job", "key"], name="jobitem_once")]
