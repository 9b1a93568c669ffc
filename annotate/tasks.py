"""Celery tasks of annotate: the background refresh of a cached report
(annotate/reports/cache.py). Without a broker Celery runs it eagerly, in process."""
from celery import shared_task

from annotate.reports.cache import REFRESH_TASK, refresh


@shared_task(name=REFRESH_TASK, acks_late=True, reject_on_worker_lost=True)
def refresh_report_task(study_id: int, key: str) -> str:
    return refresh(study_id, key)
