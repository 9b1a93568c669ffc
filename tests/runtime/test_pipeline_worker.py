"""LIVE WORKER (slow): a study plan sent to a real Celery worker on Redis, the worker
killed with SIGKILL once mid-chain (after the generate step, before the batch), a second
worker resumes the chain from its checkpoints; every question is generated once, every
item imported once, every score stored once. Same worker setup as test_worker.py."""
import json
import signal
import uuid

import pytest

from annotate.models import Item, Prediction, Study
from models_runtime.models import Job, JobItem
from models_runtime.plans import validate_plan

from .test_pipeline import OUTPUTS, QUESTIONS, plan
from .test_worker import BROKER, groups_back, start_worker, stop_workers, wait_until  # noqa: F401 - fixture

pytestmark = [pytest.mark.worker, pytest.mark.slow, pytest.mark.model]


@pytest.mark.postgres("the worker subprocess shares the test database; the SQLite one is in memory")
def test_worker_killed_mid_chain_finishes_every_item_once(groups_back, transactional_db, settings,  # noqa: F811
                                                           tmp_path, monkeypatch):
    import redis
    from celery import Celery

    redis.Redis.from_url(BROKER).ping()
    (tmp_path / "dev_questions.json").write_text(json.dumps(QUESTIONS))
    (tmp_path / "dev_outputs.json").write_text(json.dumps(OUTPUTS))
    monkeypatch.setenv("HUMEVAL_GENERATION_CACHE", str(tmp_path / "generations.sqlite3"))
    monkeypatch.setenv("HUMEVAL_TORCH_THREADS", "1")
    settings.CELERY_BROKER_URL = ""
    params = validate_plan(plan(), tmp_path, tmp_path / "work")
    params["throttle_seconds"] = 4  # a pause between steps: the moment the worker is killed
    job = Job.objects.create(kind="pipeline", params=params)
    queue = f"humeval-test-{uuid.uuid4().hex[:8]}"
    sender = Celery("sender", broker=BROKER)
    logs = [open(tmp_path / f"worker{n}.log", "w") for n in (1, 2)]  # noqa: SIM115 - closed in `finally`
    workers = []
    try:
        workers.append(start_worker(queue, logs[0]))
        sender.send_task("models_runtime.run_job", args=[job.pk], queue=queue)
        wait_until(lambda: Job.objects.get(pk=job.pk).done >= 1, 400, "the generate step to finish")
        workers[0].send_signal(signal.SIGKILL)
        workers[0].wait(30)
        assert Job.objects.get(pk=job.pk).done == 1, "the worker must die mid-chain"
        workers.append(start_worker(queue, logs[1]))
        wait_until(lambda: Job.objects.get(pk=job.pk).state in Job.FINISHED_STATES, 400, "the chain to finish")
    finally:
        stop_workers(workers, logs, queue)
    logs_text = "".join((tmp_path / f"worker{n}.log").read_text() for n in (1, 2))
    job.refresh_from_db()
    assert (job.state, job.done, job.total, job.attempts) == ("done", 4, 4, 2), logs_text
    steps = list(JobItem.objects.filter(job=job).order_by("position").values_list("key", "worker"))
    assert [k for k, _ in steps] == ["generate", "batch", "import", "score"]
    assert steps[0][1] != steps[1][1]  # the second worker did the rest
    (generate,) = Job.objects.filter(kind="plan_generate")
    assert (generate.state, generate.done, generate.total, generate.attempts) == ("done", 3, 3, 1)
    assert sorted(JobItem.objects.filter(job=generate).values_list("key", flat=True)) == ["q1", "q2", "q3"]
    study = Study.objects.get(slug="lamp5-pilot")
    assert sorted(Item.objects.filter(study=study).values_list("item_id", flat=True)) == ["q1", "q2"]
    assert Prediction.objects.filter(study=study, evaluator__in=["rougeL", "bleu"]).count() == 8
    assert job.result["steps"]["batch"]["left_out"] == [{"id": "q3", "why": "empty profile (system bm25-k2 retrieves)"}]
