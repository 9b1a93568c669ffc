"""Terminal progress for runtime commands: a tqdm bar on stderr when it is a terminal,
and waiting on a job run by Celery workers (polling its progress row)."""
import sys
import time

from .models import Job


class ProgressBar:
    def __init__(self, desc, stream=None):
        self.stream = stream or sys.stderr
        self.desc = desc
        self.bar = None

    def __call__(self, done, total):
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=self.desc, file=self.stream, unit="item",
                            disable=not getattr(self.stream, "isatty", lambda: False)())
        if total != self.bar.total:
            self.bar.total = total
        self.bar.n = done
        self.bar.refresh()

    def show_step(self, step):
        """Progress inside the running chunk (models_runtime/step.py), beside the item count."""
        if self.bar is not None:
            self.bar.set_postfix_str(f"{step.unit} {step.done}/{step.total}")

    def close(self):
        if self.bar is not None:
            self.bar.close()


def wait_for_job(job, on_progress=None, poll_seconds=1.0, timeout=None):
    """Block until a job run elsewhere is finished (done, done_with_errors or failed), or
    `timeout` seconds have passed. -> the Job as last read."""
    started = time.monotonic()
    while True:
        job.refresh_from_db()
        if on_progress:
            on_progress(job.done, job.total)
        if job.state in Job.FINISHED_STATES:
            return job
        if timeout is not None and time.monotonic() - started > timeout:
            return job
        time.sleep(poll_seconds)
