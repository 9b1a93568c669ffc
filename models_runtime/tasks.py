"""The Celery task that runs a job. acks_late + reject_on_worker_lost: a killed worker's
message goes back to the queue, and the next worker resumes from the checkpoints.

jobs.py sends this task by its name (RUN_JOB_TASK) and never imports this module."""
from celery import shared_task

from .jobs import RUN_JOB_TASK, run_job, worker_name


@shared_task(name=RUN_JOB_TASK, acks_late=True, reject_on_worker_lost=True)
def run_job_task(job_id: int) -> dict:
    job = run_job(job_id, worker=worker_name())
    return {"job": job.pk, "state": job.state}
