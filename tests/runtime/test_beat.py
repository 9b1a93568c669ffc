"""LIVE BEAT (slow): the stale-job check runs inside `celery beat`, so a lost worker's job is
requeued while no worker is alive (issue 31, item 3). Before, the check was a message in
the jobs' own queue: with the only worker dead, 403 of them piled up there and nothing was
requeued until a worker came back.

`celery -A humeval beat` runs in a subprocess against this test's PostgreSQL database and
its own Redis queue, checking every 0.5 s; no worker runs until the job is requeued."""
import base64
import json
import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from models_runtime.jobs import submit_job
from models_runtime.models import Job

from .helpers import make_study
from .test_worker import BROKER, ROOT, database_url, groups_back, start_worker, stop_workers, wait_until  # noqa: F401

pytestmark = [pytest.mark.worker, pytest.mark.slow]


def start_beat(queue, tmp_path, log):
    env = dict(os.environ, DATABASE_URL=database_url(), CELERY_BROKER_URL=BROKER, CELERY_TASK_DEFAULT_QUEUE=queue,
               HUMEVAL_STALE_CHECK_SECONDS="0.5", HUMEVAL_JOB_STALE_SECONDS="60")
    env.pop("TEST_DATABASE_NAME", None)
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "humeval", "beat", "-l", "info",
                             "-s", str(tmp_path / "beat-schedule"), "--pidfile="],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def queued_tasks(queue) -> list[tuple[str, list]]:
    """(task name, args) of each message waiting in `queue` (kombu's Redis layout)."""
    import redis

    messages = [json.loads(raw) for raw in redis.Redis.from_url(BROKER).lrange(queue, 0, -1)]
    return [(m["headers"]["task"], json.loads(base64.b64decode(m["body"]))[0]) for m in messages]


@pytest.mark.postgres("the beat and worker subprocesses share the test database; the SQLite one is in memory")
def test_beat_requeues_a_lost_workers_job_with_no_worker_alive(groups_back, transactional_db, settings,  # noqa: F811
                                                                tmp_path):
    import redis

    redis.Redis.from_url(BROKER).ping()
    queue = f"humeval-test-{uuid.uuid4().hex[:8]}"
    study = make_study()
    settings.CELERY_BROKER_URL = ""
    job = submit_job("score", {"study": study.slug, "metrics": "rouge1"}, run=False)
    # As a SIGKILLed worker leaves it: running, its last beat 5 minutes old (limit 60 s).
    Job.objects.filter(pk=job.pk).update(state="running", attempts=1, worker="lost-host:7",
                                         heartbeat_at=timezone.now() - timedelta(minutes=5))
    logs = [open(tmp_path / name, "w") for name in ("beat.log", "worker.log")]  # noqa: SIM115 - closed below
    processes = []
    try:
        processes.append(start_beat(queue, tmp_path, logs[0]))
        wait_until(lambda: Job.objects.get(pk=job.pk).state == "queued", 60, "beat to requeue the job")
        time.sleep(2.0)  # four more checks: none of them is a message
        assert queued_tasks(queue) == [("models_runtime.run_job", [job.pk])]
        row = Job.objects.get(pk=job.pk)
        assert row.errors[0]["error"].startswith("no heartbeat from worker lost-host:7 for ")
        assert row.errors[0]["error"].endswith(" s: the worker was lost; requeued")
        processes.append(start_worker(queue, logs[1]))  # a worker comes back: it resumes the job
        wait_until(lambda: Job.objects.get(pk=job.pk).state in Job.FINISHED_STATES, 120, "the job to finish")
    finally:
        stop_workers(processes, logs, queue)
    text = (tmp_path / "beat.log").read_text()
    row = Job.objects.get(pk=job.pk)
    assert (row.state, row.done, row.total, row.attempts) == ("done", 3, 3, 2), text
    assert f"stale-job check: requeued 1 job(s) of lost workers: {job.pk}" in text
