"""LIVE WORKERS (slow): a plan's chain whose worker died mid-generate (the pipeline and its
generate job both `running`, their heartbeats stale, 2 of 6 questions checkpointed) is
given back by the stale check, and two live Celery workers share the queue. Before, the
pipeline and its generate job were requeued separately, so one worker ran the generate job
while the other ran it again inside the pipeline: questions were generated twice. Now the
chain is requeued once, through its pipeline: every prompt reaches the model server once.

The model is an OpenAI-compatible test server in this process (tests/runtime/fake_llm.py)
that counts prompts; the generation cache is off, so a repeat would be sent again."""
import json
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from annotate.models import Item
from models_runtime import jobs
from models_runtime.job_support import kinds
from models_runtime.job_support.kinds import JobKind
from models_runtime.jobs import create_job, requeue_stale_jobs, run_job
from models_runtime.models import Job, JobItem
from models_runtime.plans import validate_plan

from .fake_llm import FakeLLM
from .test_plans import plan
from .test_worker import BROKER, groups_back, start_worker, stop_workers, wait_until  # noqa: F401 - fixture

pytestmark = [pytest.mark.worker, pytest.mark.slow]

ASK = "Generate a headline for the following article: "
TOPICS = ["bike lanes open downtown", "rain floods the market", "schools add music classes", "a bakery wins a prize",
          "the river bridge reopens", "a new library branch"]
QUESTIONS = [{"id": str(n), "input": ASK + topic,
              "profile": [{"id": f"{n}a", "title": f"About {topic}", "text": f"readers wrote about {topic} before"},
                          {"id": f"{n}b", "title": "Other news", "text": "the weather stays mild this week"}]}
             for n, topic in enumerate(TOPICS)]
OUTPUTS = {"task": "LaMP_4", "golds": [{"id": str(n), "output": f"Headline {n}"} for n in range(len(TOPICS))]}


def die_in_second_chunk(monkeypatch):
    """The generate job in chunks of 2; the process 'dies' in the second (a BaseException
    no handler catches: both jobs stay `running`, as after a SIGKILL)."""
    real = kinds.get_job_kind("plan_generate")
    calls = []

    def chunk(job, keys):
        calls.append(keys)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real.process_chunk(job, keys)
    monkeypatch.setitem(kinds._KINDS, "plan_generate", JobKind(real.kind, real.items, chunk, chunk_size=2))


@pytest.mark.postgres("the worker subprocesses share the test database; the SQLite one is in memory")
def test_a_stale_chain_is_requeued_once_and_two_workers_generate_every_prompt_once(
        groups_back, transactional_db, settings, tmp_path, monkeypatch):  # noqa: F811
    import redis
    from celery import Celery

    redis.Redis.from_url(BROKER).ping()
    server = FakeLLM()
    try:
        run_the_scenario(server, settings, tmp_path, monkeypatch, Celery)
    finally:
        server.close()


def run_the_scenario(server, settings, tmp_path, monkeypatch, Celery):
    (tmp_path / "dev_questions.json").write_text(json.dumps(QUESTIONS))
    (tmp_path / "dev_outputs.json").write_text(json.dumps(OUTPUTS))
    models = server.models_json()
    settings.HUMEVAL_MODELS_JSON = models
    settings.HUMEVAL_GENERATION_CACHE = ""
    settings.CELERY_BROKER_URL = ""
    from models_runtime.backends import registry

    registry.clear()
    params = validate_plan(plan(metrics=["rougeL"]), tmp_path, tmp_path / "work")
    root = create_job("pipeline", params)
    die_in_second_chunk(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        run_job(root.pk)
    monkeypatch.undo()
    generate = Job.objects.get(kind="plan_generate")
    assert (Job.objects.get(pk=root.pk).state, generate.state, generate.parent_id) == ("running", "running", root.pk)
    assert JobItem.objects.filter(job=generate).count() == 2 and len(server.prompts) == 4
    old = timezone.now() - timedelta(minutes=5)
    Job.objects.update(heartbeat_at=old, worker="lost-host:1")

    queue = f"humeval-test-{uuid.uuid4().hex[:8]}"
    sender = Celery("sender", broker=BROKER)
    sent = []

    def enqueue(job, task_id):
        sent.append(job.pk)
        sender.send_task(jobs.RUN_JOB_TASK, args=[job.pk], task_id=task_id, queue=queue)
    monkeypatch.setattr(jobs, "_enqueue", enqueue)
    for key, value in {"HUMEVAL_MODELS": models, "HUMEVAL_GENERATION_CACHE": "",
                       "HUMEVAL_PIPELINE_DIR": str(tmp_path / "work")}.items():
        monkeypatch.setenv(key, value)
    logs = [open(tmp_path / f"worker{n}.log", "w") for n in (1, 2)]  # noqa: SIM115 - closed in `finally`
    workers = []
    try:
        workers = [start_worker(queue, log) for log in logs]
        settings.CELERY_BROKER_URL, settings.CELERY_TASK_ALWAYS_EAGER = BROKER, False
        assert requeue_stale_jobs() == [root.pk]
        settings.CELERY_BROKER_URL = ""
        assert sent == [root.pk]  # one message for the chain
        wait_until(lambda: Job.objects.get(pk=root.pk).state in Job.FINISHED_STATES, 300, "the chain to finish")
    finally:
        stop_workers(workers, logs, queue)
    text = "".join((tmp_path / f"worker{n}.log").read_text() for n in (1, 2))
    root.refresh_from_db()
    generate.refresh_from_db()
    assert (root.state, root.done, root.total) == ("done", 4, 4), text
    assert (generate.state, generate.done, generate.total) == ("done", 6, 6)
    sent_prompts = Counter(server.prompts)
    assert len(sent_prompts) == 12 and set(sent_prompts.values()) == {1}, sent_prompts  # 6 questions x 2 systems
    assert Item.objects.filter(study__slug="lamp4-pilot").count() == 6
    assert any("no heartbeat from worker lost-host:1" in e["error"] for e in generate.errors)


@pytest.mark.postgres("the worker subprocesses share the test database; the SQLite one is in memory")
def test_a_running_chain_keeps_beating_and_a_second_worker_never_runs_it_again(
        groups_back, transactional_db, settings, tmp_path, monkeypatch):  # noqa: F811
    """Issue 31, item 2: while the generate step's chunk runs (each prompt answered after
    2 s, so one chunk lasts longer than the 1 s stale limit used here), the pipeline's
    heartbeat stays fresh (beats every 0.2 s); beat's stale check, run every 0.2 s with
    that limit, never requeues the chain; the second worker (a free one, given the
    message redelivered after the 5 s visibility timeout) never runs it: every prompt
    reaches the model once, the chain has one attempt. Before, the step wrote the
    pipeline's row inside its chunk transaction and the pipeline's heartbeat waited behind
    that lock: here it aged to 4.2 s (21 beats; 23-60 s with real chunks), long enough for
    a stale check or a redelivered message to take the chain for lost."""
    import threading
    import time

    import redis
    from celery import Celery
    from django.db import connection

    redis.Redis.from_url(BROKER).ping()
    server = FakeLLM()
    server.on_request = lambda prompt: time.sleep(2.0)
    try:
        (tmp_path / "dev_questions.json").write_text(json.dumps(QUESTIONS))
        (tmp_path / "dev_outputs.json").write_text(json.dumps(OUTPUTS))
        models = server.models_json()
        settings.HUMEVAL_MODELS_JSON, settings.HUMEVAL_GENERATION_CACHE, settings.CELERY_BROKER_URL = models, "", ""
        from models_runtime.backends import registry

        registry.clear()
        root = create_job("pipeline", validate_plan(plan(metrics=["rougeL"]), tmp_path, tmp_path / "work"))
        queue = f"humeval-test-{uuid.uuid4().hex[:8]}"
        sender = Celery("sender", broker=BROKER)
        monkeypatch.setattr(jobs, "_enqueue", lambda job, task_id: sender.send_task(
            jobs.RUN_JOB_TASK, args=[job.pk], task_id=task_id, queue=queue))
        for key, value in {"HUMEVAL_MODELS": models, "HUMEVAL_GENERATION_CACHE": "",
                           "HUMEVAL_PIPELINE_DIR": str(tmp_path / "work")}.items():
            monkeypatch.setenv(key, value)
        logs = [open(tmp_path / f"worker{n}.log", "w") for n in (1, 2)]  # noqa: SIM115 - closed in `finally`
        workers, ages, requeued = [], [], []
        try:
            workers = [start_worker(queue, log) for log in logs]
            sender.send_task(jobs.RUN_JOB_TASK, args=[root.pk], queue=queue)
            settings.CELERY_BROKER_URL, settings.CELERY_TASK_ALWAYS_EAGER = BROKER, False
            checking = threading.Event()
            checking.set()

            def check():  # beat's check, in its own thread: it may wait on a row lock, the sampling never does
                try:
                    while checking.is_set():
                        requeued.extend(requeue_stale_jobs(1.0))
                        time.sleep(0.2)
                finally:
                    connection.close()
            checker = threading.Thread(target=check)
            checker.start()
            deadline = time.monotonic() + 300
            while Job.objects.get(pk=root.pk).state not in Job.FINISHED_STATES and time.monotonic() < deadline:
                row = Job.objects.get(pk=root.pk)
                if row.state == "running" and Job.objects.filter(kind="plan_generate", state="running").exists():
                    ages.append((timezone.now() - row.heartbeat_at).total_seconds())
                time.sleep(0.1)
            checking.clear()
            checker.join()
            settings.CELERY_BROKER_URL = ""
        finally:
            stop_workers(workers, logs, queue)
        text = "".join((tmp_path / f"worker{n}.log").read_text() for n in (1, 2))
        root.refresh_from_db()
        assert (root.state, root.attempts, requeued) == ("done", 1, []), text
        assert len(ages) >= 40 and max(ages) < 1.0, ages  # sampled for over 4 s, never older than 5 beats
        sent_prompts = Counter(server.prompts)
        assert len(sent_prompts) == 12 and set(sent_prompts.values()) == {1}, sent_prompts
    finally:
        server.close()
