"""The Celery tasks of jobs. acks_late + reject_on_worker_lost: a killed worker's message
goes back to the queue, and the next worker resumes from the checkpoints. The stale-job
check is no task: it runs inside Celery beat (beat.py), so a killed worker's job is requeued
within HUMEVAL_JOB_STALE_SECONDS, not after the broker's visibility timeout, even when no
worker is alive.

jobs.py sends these tasks by their names and never imports this module."""
from celery import shared_task

from .jobs import RUN_JOB_TASK, run_job, worker_name


@shared_task(name=RUN_JOB_TASK, acks_late=True, reject_on_worker_lost=True)
def run_job_task(job_id: int) -> dict:
    job = run_job(job_id, worker=worker_name())
    return {"job": job.pk, "state": job.state}

