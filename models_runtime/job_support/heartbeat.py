"""A running job's heartbeat: proof of life that beat's stale-job check reads."""
import logging
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from humeval import background

from .. import step
from ..models import Job

logger = logging.getLogger("models_runtime.jobs")


class Heartbeat:
    """While a job runs, a unit of the background pool (humeval/background.py, uncounted: it
    must never wait behind jobs) sets its `heartbeat_at` every HUMEVAL_JOB_HEARTBEAT_SECONDS
    (a chunk of LLM calls can take minutes; the runner also beats after every chunk). It has
    its own database connection, closed when the job ends."""

    def __init__(self, job_id: int, on_step: Callable[[step.Step], None] | None = None):
        self.job_id = job_id
        self.on_step = on_step  # a command's progress bar shows the count too
        self.interval = float(settings.HUMEVAL_JOB_HEARTBEAT_SECONDS)
        self.stop = threading.Event()
        self.thread: background.Handle | None = None
        self.current: step.Step | None = None
        self.written: dict | None = None

    def _listen(self, current: "step.Step | None") -> None:
        self.current = current
        if current is not None and self.on_step is not None:
            current.on_advance = self.on_step

    def __enter__(self):
        self.outer = step.listener()  # a chain's step job runs inside its pipeline's heartbeat
        step.listen(self._listen)
        if self.interval > 0:
            self.thread = background.submit(self._beat, counted=False)
        return self

    def _beat(self):
        try:
            while not self.stop.wait(self.interval):
                fields: dict[str, Any] = {"heartbeat_at": timezone.now()}
                current = self.current.as_json() if self.current is not None else {}
                if current != self.written:
                    fields["step"] = current
                try:
                    Job.objects.filter(pk=self.job_id, state=Job.RUNNING).update(**fields)
                    self.written = current
                except Exception as exc:  # a busy database: the next beat tries again
                    logger.debug("job %d: heartbeat not written: %s", self.job_id, exc)
        finally:
            connection.close()

    def __exit__(self, *exc_info):
        step.listen(self.outer)
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
