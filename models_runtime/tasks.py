"""The Celery task that runs a job. acks_late + reject_on_worker_lost: a killed worker's
message goes back to the queue, and the next worker resumes from the checkpoints."""
from celery import shared_task

from .jobs import run_job, worker_name


@shared_task(name="models_runtime.run_job", acks_late=True, reject_on_worker_lost=True)
def run_job_task(job_id):
    job = run_job(job_id, worker=worker_name())
    return {"job": job.pk, "state": job.state}
