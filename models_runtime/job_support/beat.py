"""Celery beat's scheduler (settings.CELERY_BEAT_SCHEDULER): the stale-job check runs here,
in the beat process, instead of as a message for the workers.

As a message it waited in the jobs' queue behind the jobs: with the only worker dead (the
very case it is for) 403 check messages piled up and nothing was requeued until a worker
came back (issue 31, item 3). Run in beat, a lost worker's job is back in the queue
(`queued`, with the reason in its history) within HUMEVAL_STALE_CHECK_SECONDS whether or
not any worker is alive; the next worker to start resumes it. The other scheduled tasks,
if any, are sent as usual.
"""
import logging

from celery.beat import PersistentScheduler
from django.db import close_old_connections, connection

from ..jobs import requeue_stale_jobs

logger = logging.getLogger(__name__)

STALE_CHECK_TASK = "models_runtime.requeue_stale_jobs"  # its beat entry (settings.CELERY_BEAT_SCHEDULE)


class StaleCheckScheduler(PersistentScheduler):
    def apply_entry(self, entry, producer=None):
        if entry.task != STALE_CHECK_TASK:
            return super().apply_entry(entry, producer)
        close_old_connections()  # a connection left broken by a database restart is replaced
        try:
            handled = requeue_stale_jobs()
        except Exception:  # the database is down: beat lives on and checks again next time
            logger.exception("stale-job check failed")
            connection.close()
            return None
        if handled:
            logger.warning("stale-job check: requeued %d job(s) of lost workers: %s", len(handled),
                           ", ".join(map(str, handled)))
        return None
