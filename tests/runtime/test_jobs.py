"""Jobs run in process (no broker): the score job's stored values, resuming after a crash
without redoing finished items, retries, failures, the REST API and the score command."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Prediction
from models_runtime.jobs import ItemError, JobParamsError, register_job_kind, run_job, submit_job
from models_runtime.models import Job, JobItem
from models_runtime.metrics.registry import UnknownMetric

from .helpers import make_study, scores

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def eager(settings):
    settings.CELERY_BROKER_URL = ""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.SECURE_SSL_REDIRECT = False  # the test client speaks http


def test_score_job_stores_hand_worked_values():
    """i1: a = "the cat on the mat" (ROUGE-1 = ROUGE-L = 10/11), b = "mat the on cat the"
    (ROUGE-1 10/11, ROUGE-L 6/11). i2: a = "the cat sat on a mat" (BLEU (1/12)^0.25 =
    0.537284966), b = the reference (1). i3: a = "dogs bark" (nothing shared: 0), b = "the cat
    sat": P = 1, R = 3/6, ROUGE-1 F = 2/3."""
    study = make_study()
    job = submit_job("score", {"study": study.slug, "metrics": "rouge1,rougeL,bleu", "chunk_size": 2})
    assert (job.state, job.done, job.total, job.n_errors) == ("done", 3, 3, 0)
    r1, rl, bleu = scores(study, "rouge1"), scores(study, "rougeL"), scores(study, "bleu")
    assert r1 == pytest.approx({("i1", "a"): 10 / 11, ("i1", "b"): 10 / 11, ("i2", "a"): 10 / 12,
                                ("i2", "b"): 1.0, ("i3", "a"): 0.0, ("i3", "b"): 2 / 3})
    assert rl[("i1", "b")] == pytest.approx(6 / 11)
    assert bleu[("i2", "a")] == pytest.approx(0.537284966) and bleu[("i2", "b")] == pytest.approx(1.0)
    assert job.result == {"study": study.slug, "metrics": ["rouge1", "rougeL", "bleu"], "n_scores": 18}
    assert Prediction.objects.get(item__item_id="i1", evaluator="rouge1", question="a").value == "0.9090909091"
    # Re-running upserts: same rows, same values.
    again = submit_job("score", {"study": study.slug, "metrics": ["rouge1"]})
    assert again.state == "done" and Prediction.objects.filter(study=study).count() == 18
    assert list(JobItem.objects.filter(job=job).values_list("position", flat=True)) == [0, 1, 2]


def test_score_params_are_checked_before_anything_runs():
    study = make_study()
    with pytest.raises(UnknownMetric, match="unknown metric 'rogue'"):
        submit_job("score", {"study": study.slug, "metrics": "rogue"})
    with pytest.raises(JobParamsError, match="does not exist"):
        submit_job("score", {"study": "nope", "metrics": "rouge1"})
    with pytest.raises(JobParamsError, match="unknown job kind"):
        submit_job("bake", {})
    assert Job.objects.count() == 0


CALLS = []


def _items(job):
    return [f"k{i}" for i in range(6)]


def _crashing_chunk(job, keys):
    """Writes one Prediction per key (rolled back with the chunk if it fails); the first
    time it sees k2 it dies like a killed worker (BaseException: no error handling runs)."""
    CALLS.append(list(keys))
    study_item = job.params["item"]
    for key in keys:
        Prediction.objects.create(study_id=study_item[0], item_id=study_item[1], evaluator="crash-test",
                                  question=key, value="1")
    if "k2" in keys and sum("k2" in c for c in CALLS) == 1:
        raise KeyboardInterrupt("worker killed")
    return {key: {"ok": key} for key in keys}


register_job_kind("test-crash", items=_items, process_chunk=_crashing_chunk, chunk_size=2)


def test_a_crashed_job_resumes_without_redoing_finished_items():
    study = make_study()
    item = study.items.first()
    CALLS.clear()
    job = submit_job("test-crash", {"item": [study.pk, item.pk]}, run=False)
    with pytest.raises(KeyboardInterrupt):
        run_job(job.pk)
    job.refresh_from_db()
    assert (job.state, job.done) == ("running", 2)  # k0, k1 checkpointed; k2, k3 rolled back
    assert set(Prediction.objects.filter(evaluator="crash-test").values_list("question", flat=True)) == {"k0", "k1"}
    job = run_job(job.pk)
    assert CALLS == [["k0", "k1"], ["k2", "k3"], ["k2", "k3"], ["k4", "k5"]]
    assert (job.state, job.done, job.total, job.attempts) == ("done", 6, 6, 2)
    assert Prediction.objects.filter(evaluator="crash-test").count() == 6
    assert [ji.result for ji in JobItem.objects.filter(job=job)] == [{"ok": f"k{i}"} for i in range(6)]
    assert run_job(job.pk).done == 6  # a redelivered message for a done job changes nothing


FLAKY = {"left": 0}


def _flaky_chunk(job, keys):
    if FLAKY["left"] > 0:
        FLAKY["left"] -= 1
        raise ConnectionError("server busy")
    return {k: (ItemError("bad input") if k == "k3" else {"v": k}) for k in keys}


register_job_kind("test-flaky", items=_items, process_chunk=_flaky_chunk, chunk_size=3)


def test_transient_failures_are_retried_and_item_errors_recorded():
    FLAKY["left"] = 2
    job = submit_job("test-flaky", {"retries": 3, "retry_delay_seconds": 0})
    assert (job.state, job.done, job.n_errors) == ("done", 6, 1)
    assert JobItem.objects.get(job=job, key="k3").error == "bad input"
    FLAKY["left"] = 100  # never recovers: every item of each chunk gets the last error
    job = submit_job("test-flaky", {"retries": 1, "retry_delay_seconds": 0})
    assert (job.state, job.done, job.n_errors) == ("done", 6, 6)
    assert JobItem.objects.filter(job=job, error="ConnectionError: server busy").count() == 6


def test_a_missing_model_fails_the_job_with_the_setting_to_change(settings):
    study = make_study()
    settings.HUMEVAL_ENCODER_PATH = "/nonexistent/encoder"
    job = submit_job("score", {"study": study.slug, "metrics": "bertscore"})
    assert job.state == "failed"
    assert "HUMEVAL_ENCODER_PATH" in job.errors[-1]["error"]


def test_jobs_api(client, admin_user_, researcher, annotators):
    study = make_study()
    client.force_login(annotators[0])
    assert client.post("/api/jobs/", {"kind": "score", "study": study.slug}, content_type="application/json").status_code == 403
    client.force_login(admin_user_)
    bad = client.post("/api/jobs/", {"kind": "score", "params": {"study": study.slug, "metrics": ["rogue"]}},
                      content_type="application/json")
    assert bad.status_code == 400 and "unknown metric 'rogue'" in bad.json()["error"]
    assert client.post("/api/jobs/", {}, content_type="application/json").status_code == 400
    # The dashboard form sends the params flat beside "kind".
    made = client.post("/api/jobs/", {"kind": "score", "study": study.slug, "metrics": ["rouge1"], "model": "smollm2"},
                       content_type="application/json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["state"], body["progress"], body["errors"]) == ("done", {"done": 3, "total": 3}, [])
    client.force_login(researcher)
    got = client.get(f"/api/jobs/{body['id']}/")
    assert got.status_code == 200 and got.json()["result"]["n_scores"] == 6
    client.force_login(annotators[0])
    assert client.get(f"/api/jobs/{body['id']}/").status_code == 403
    assert client.get("/api/jobs/999999/").status_code in (403, 404)


def test_score_command_prints_one_json_document():
    study = make_study()
    out = StringIO()
    call_command("score", study.slug, "--metrics", "rougeL,bleu", stdout=out, stderr=StringIO())
    data = json.loads(out.getvalue())
    assert data["state"] == "done" and data["progress"] == {"done": 3, "total": 3}
    assert scores(study, "rougeL")[("i1", "b")] == pytest.approx(6 / 11)
    with pytest.raises(CommandError, match="unknown metric"):
        call_command("score", study.slug, "--metrics", "nope", stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError, match="does not exist"):
        call_command("score", "missing", "--metrics", "bleu", stdout=StringIO(), stderr=StringIO())
