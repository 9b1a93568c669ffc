"""A live Celery worker on Redis: kill it mid-job with SIGKILL, start another, and the job
completes (state done, its result stored) with every item processed exactly once; a job
whose code breaks ends failed with its traceback, and the worker goes on.

The worker runs `celery -A humeval worker` in a subprocess against this test's PostgreSQL
database, on its own queue in Redis DB 15 (CELERY_TEST_BROKER_URL), with a 5 s visibility
timeout so the unacknowledged message of the killed worker is redelivered quickly.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from annotate.models import Prediction
from models_runtime.jobs import stale_jobs, submit_job
from models_runtime.models import Job, JobItem
from tests.factories import ensure_roles

from .helpers import make_study

ROOT = Path(__file__).resolve().parents[2]
BROKER = os.environ.get("CELERY_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
N_ITEMS = 30

pytestmark = [pytest.mark.worker, pytest.mark.slow]


@pytest.fixture
def groups_back(django_db_blocker):
    """The transactional test flushes every table, including the role groups that a
    migration created; put them back for the tests that follow."""
    yield
    with django_db_blocker.unblock():
        ensure_roles()


def database_url():
    db = settings.DATABASES["default"]
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def start_worker(queue, log):
    env = dict(os.environ, DATABASE_URL=database_url(), CELERY_BROKER_URL=BROKER, CELERY_TASK_DEFAULT_QUEUE=queue,
               CELERY_VISIBILITY_TIMEOUT="5", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HUMEVAL_JOB_HEARTBEAT_SECONDS="0.2",
               HUMEVAL_LOG_LEVEL="INFO")  # the level a deployment sets (scripts/test.sh quiets the suite to WARNING)
    env.pop("TEST_DATABASE_NAME", None)
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "humeval", "worker", "-Q", queue, "-P", "solo", "-c", "1",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "warning"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def run_in_worker(job, tmp_path, what="the job", timeout=300):
    """Send `job` to a live worker on a queue of its own, wait until it ends, stop the worker;
    the job (refreshed) must be done (the worker's log otherwise)."""
    from celery import Celery

    queue = f"humeval-test-{uuid.uuid4().hex[:8]}"
    log = open(tmp_path / "worker.log", "w")  # noqa: SIM115 - closed by stop_workers
    workers = [start_worker(queue, log)]
    try:
        Celery("sender", broker=BROKER).send_task("models_runtime.run_job", args=[job.pk], queue=queue)
        wait_until(lambda: type(job).objects.get(pk=job.pk).state in type(job).FINISHED_STATES, timeout, what)
    finally:
        stop_workers(workers, [log], queue)
    job.refresh_from_db()
    assert job.state == "done", (tmp_path / "worker.log").read_text()
    return job


def stop_workers(workers, logs, queue):
    """SIGKILL the workers still running, close their logs, drop the test queue."""
    import redis

    for w in workers:
        if w.poll() is None:
            w.send_signal(signal.SIGKILL)
            w.wait(30)
    for log in logs:
        log.close()
    redis.Redis.from_url(BROKER).delete(queue)


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.postgres("the worker subprocess shares the test database; the SQLite one is in memory")
def test_killed_worker_resumes_without_redoing_items(groups_back, transactional_db, settings, tmp_path):
    import redis
    from celery import Celery

    redis.Redis.from_url(BROKER).ping()  # Redis must be up (CI starts it)
    queue = f"humeval-test-{uuid.uuid4().hex[:8]}"
    study = make_study(items=[(f"i{n:02d}", f"the cat sat {n}", f"a dog ran {n}") for n in range(N_ITEMS)])
    settings.CELERY_BROKER_URL = ""  # create the job here without running it
    job = submit_job("score", {"study": study.slug, "metrics": "rouge1", "chunk_size": 2, "throttle_seconds": 0.4},
                     run=False)
    sender = Celery("sender", broker=BROKER)
    logs = [open(tmp_path / f"worker{n}.log", "w") for n in (1, 2)]  # noqa: SIM115 - closed in `finally`
    workers = []
    try:
        workers.append(start_worker(queue, logs[0]))
        sender.send_task("models_runtime.run_job", args=[job.pk], queue=queue)
        beats = set()

        def beating():
            row = Job.objects.get(pk=job.pk)
            if row.heartbeat_at is not None:
                beats.add(row.heartbeat_at)
            return row.done >= 6

        wait_until(beating, 180, "the first worker to finish 3 chunks")
        workers[0].send_signal(signal.SIGKILL)
        workers[0].wait(30)
        dead = Job.objects.get(pk=job.pk)
        killed_at = dead.done
        assert 6 <= killed_at < N_ITEMS, "the worker must die mid-job"
        # Issue 16: the worker beat while it ran; once killed its job is still `running`
        # with the last beat, and turns stale for the detector (which only reads here).
        assert len(beats) >= 3 and dead.state == "running" and dead.heartbeat_at >= max(beats)
        assert dead.worker.startswith(socket.gethostname() + ":")
        time.sleep(0.6)
        assert list(stale_jobs(0.5).values_list("pk", flat=True)) == [job.pk]
        workers.append(start_worker(queue, logs[1]))
        wait_until(lambda: Job.objects.get(pk=job.pk).state in Job.FINISHED_STATES, 180, "the job to finish")
        # A job whose code breaks (here: a metric name that is an object, which the score
        # kind's own check trips on) ends failed on the worker at once, with the traceback
        # in its record; the worker lives on.
        broken = Job.objects.create(kind="score", params=dict(job.params, metrics=[{"name": "rouge1"}]))
        sender.send_task("models_runtime.run_job", args=[broken.pk], queue=queue)
        wait_until(lambda: Job.objects.get(pk=broken.pk).state in Job.FINISHED_STATES, 120, "the broken job to end")
        assert workers[1].poll() is None, "the worker must survive a failing job"
    finally:
        stop_workers(workers, logs, queue)
    job.refresh_from_db()
    logs_text = "".join((tmp_path / f"worker{n}.log").read_text() for n in (1, 2))
    assert job.state == "done", logs_text
    assert (job.result, job.finished_at is not None) == (
        {"study": study.slug, "metrics": ["rouge1"], "n_scores": 2 * N_ITEMS, "unparsed": {"rouge1": 0},
         "coverage": {"rouge1": {"n_items": N_ITEMS, "n_scored": N_ITEMS, "n_unparsed": 0}}}, True)
    # Issue 31, item 4: the redelivered message's worker records why attempt 1 ended, and
    # `manage.py jobs show` lists it; both workers log the job's INFO lines (run with -l warning).
    (lost,) = job.errors
    assert (lost["attempt"], lost["resumable"]) == (1, True)
    assert re.fullmatch(rf"no heartbeat from worker {re.escape(dead.worker)} for \d+ s: the worker was lost; "
                        rf"resumed by {re.escape(job.worker)}", lost["error"]), lost
    out = StringIO()
    call_command("jobs", "show", str(job.pk), stdout=out)
    assert out.getvalue().splitlines()[2:] == [f"attempt 1: {lost['error']}", "now: done, 30/30 items, 2 attempt(s)"]
    first, second = ((tmp_path / f"worker{n}.log").read_text() for n in (1, 2))
    assert f"INFO models_runtime.jobs job {job.pk} score started on {dead.worker}: 0/30 items done" in first
    assert f"INFO models_runtime.jobs job {job.pk} score resumed on {job.worker}: {killed_at}/30 items done" in second
    assert f"INFO models_runtime.jobs job {job.pk} score finished: done, 30/30 items, 0 failed" in second
    # Each item finished exactly once: one checkpoint per key, the F() counter matches,
    # and the scores exist once per (item, candidate).
    keys = list(JobItem.objects.filter(job=job).values_list("key", flat=True))
    assert len(keys) == len(set(keys)) == N_ITEMS
    assert (job.done, job.total, job.n_errors) == (N_ITEMS, N_ITEMS, 0)
    assert job.attempts == 2
    assert job.heartbeat_at is not None and job.heartbeat_at > dead.heartbeat_at and job.worker != dead.worker
    workers_seen = set(JobItem.objects.filter(job=job).values_list("worker", flat=True))
    assert len(workers_seen) == 2, workers_seen
    assert Prediction.objects.filter(study=study, evaluator="rouge1").count() == 2 * N_ITEMS
    broken.refresh_from_db()
    assert (broken.state, broken.attempts, broken.done, broken.total) == ("failed", 1, 0, 0), logs_text
    (error,) = broken.errors
    assert error["error"] == "AttributeError: 'dict' object has no attribute 'strip'"
    assert error["traceback"].startswith("Traceback (most recent call last):") and "in run_job" in error["traceback"]
