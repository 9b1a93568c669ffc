"""Jobs run in process (no broker): the score job's stored values, resuming after a crash
without redoing finished items, retries, failures, the REST API and the score command."""
import json
import logging
import re
from io import StringIO

import pytest
from django.core.management import BaseCommand, CommandError, call_command

from annotate.models import Prediction
from models_runtime.job_support.job_commands import check_outcome, run_command_job
from models_runtime.job_support.kinds import ItemError, JobParamsError, register_job_kind
from models_runtime.job_support.reporting import job_json
from models_runtime.jobs import prepare_job, run_job, submit_job
from models_runtime.metrics.registry import UnknownMetric, register_metric
from models_runtime.models import Job, JobItem

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
    assert job.result == {"study": study.slug, "metrics": ["rouge1", "rougeL", "bleu"], "n_scores": 18,
                          "unparsed": {"rouge1": 0, "rougeL": 0, "bleu": 0},
                          "coverage": {m: {"n_items": 3, "n_scored": 3, "n_unparsed": 0}
                                       for m in ("rouge1", "rougeL", "bleu")}}
    assert Prediction.objects.get(item__item_id="i1", evaluator="rouge1", question="a").value == "0.9090909091"
    # Re-running upserts: same rows, same values.
    again = submit_job("score", {"study": study.slug, "metrics": ["rouge1"]})
    assert again.state == "done" and Prediction.objects.filter(study=study).count() == 18
    assert list(JobItem.objects.filter(job=job).values_list("position", flat=True)) == [0, 1, 2]


def test_gemba_scores_are_never_a_restated_scale_and_unparsed_are_counted(monkeypatch):
    """Issue 13, item 3. GEMBA answers "Score (0 to 100): 72" (the first number in range is
    the restated 0, the score is 72) except for "dogs bark", answered with the scale alone:
    that one is unparsed, stored empty, counted, and not a metric pick in the report."""
    from runtime_judges.scripted import ScriptedBackend

    from annotate.reports.data import fetch_report_input
    from evaluation.report import build_report

    def judge(text, params, j):
        return "Score (0-100):" if "Response: dogs bark" in text else "Score (0 to 100): 72"

    monkeypatch.setattr("models_runtime.judges.metrics._backend", lambda model, device: ScriptedBackend(judge))
    study = make_study()
    job = submit_job("score", {"study": study.slug, "metrics": "gemba"})
    assert job.state == "done" and job.result["unparsed"] == {"gemba": 1}
    assert job.result["coverage"] == {"gemba": {"n_items": 3, "n_scored": 2, "n_unparsed": 1}}  # issue 16 D6
    assert scores(study, "gemba") == {("i1", "a"): 72.0, ("i1", "b"): 72.0, ("i2", "a"): 72.0, ("i2", "b"): 72.0,
                                      ("i3", "a"): None, ("i3", "b"): 72.0}
    assert Prediction.objects.get(item__item_id="i3", evaluator="gemba", question="a").value == ""
    report = build_report(fetch_report_input(study))
    assert report["correlations"]["gemba"]["n"] == 0  # no judgments yet, and i3 has one score only


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
    CALLS.append(list(keys))
    if FLAKY["left"] > 0:
        FLAKY["left"] -= 1
        raise ConnectionError("server busy")
    return {k: {"v": k} for k in keys}


register_job_kind("test-flaky", items=_items, process_chunk=_flaky_chunk, chunk_size=3)


def _messages(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "models_runtime.jobs"]


def test_a_connection_error_is_retried_and_then_succeeds(caplog):
    """Two ConnectionErrors on the first chunk (k0-k2), then it goes through: 4 calls, the
    job ends plain done, one log line per retry."""
    caplog.set_level(logging.INFO, logger="models_runtime.jobs")
    CALLS.clear()
    FLAKY["left"] = 2
    job = submit_job("test-flaky", {"retries": 3, "retry_delay_seconds": 0})
    assert (job.state, job.done, job.total, job.n_errors, job.errors) == ("done", 6, 6, 0, [])
    assert CALLS == [["k0", "k1", "k2"]] * 3 + [["k3", "k4", "k5"]]
    log = _messages(caplog)
    assert log[0].startswith(f"job {job.pk} test-flaky started on ") and log[0].endswith(": 0/6 items done")
    assert log[1:3] == [f"job {job.pk} test-flaky: chunk of 3 items from 'k0' retried in 0.0 s (attempt {n} of 4): "
                        "ConnectionError: server busy" for n in (2, 3)]
    assert log[3].startswith(f"job {job.pk} test-flaky finished: done, 6/6 items, 0 failed, ")


def test_a_transient_error_that_outlives_the_retries_fails_the_job_and_a_rerun_resumes_it():
    """retries 1 = 2 attempts per chunk. The server stays down for the first chunk: the job
    fails with nothing checkpointed (no item is marked failed for the server's fault);
    once it is back, the same params resume that job."""
    CALLS.clear()
    FLAKY["left"] = 2
    params = {"retries": 1, "retry_delay_seconds": 0}
    job = submit_job("test-flaky", params)
    assert (job.state, job.done, JobItem.objects.filter(job=job).count()) == ("failed", 0, 0)
    assert job.errors == [{"error": "ConnectionError: server busy (chunk of 3 items from 'k0', 2 attempts)",
                           "attempt": 1, "resumable": True}]
    again, resumed = prepare_job("test-flaky", params)
    assert (again.pk, resumed, again.state) == (job.pk, True, "queued")
    again = run_job(again.pk)
    assert (again.state, again.done, again.attempts, again.n_errors) == ("done", 6, 2, 0)
    assert len(again.errors) == 1  # the first attempt's failure stays on the record


def _three_items(job):
    return ["k0", "k1", "k2"]


def _one_bad_item(job, keys):
    return {k: ItemError("no reference text") if k == "k1" else {"score": 0.5} for k in keys}


register_job_kind("test-item-error", items=_three_items, process_chunk=_one_bad_item, chunk_size=2)


def test_a_data_error_fails_that_item_and_the_job_ends_done_with_errors(caplog):
    caplog.set_level(logging.INFO, logger="models_runtime.jobs")
    job = submit_job("test-item-error", {})
    assert (job.state, job.done, job.total, job.n_errors) == ("done_with_errors", 3, 3, 1)
    assert job_json(job)["errors"] == [{"item": "k1", "error": "no reference text"}]
    assert [(ji.key, ji.result, ji.error) for ji in JobItem.objects.filter(job=job)] == [
        ("k0", {"score": 0.5}, ""), ("k1", None, "no reference text"), ("k2", {"score": 0.5}, "")]
    log = _messages(caplog)
    assert f"job {job.pk} test-item-error: item k1 failed: no reference text" in log
    assert log[-1].startswith(f"job {job.pk} test-item-error finished: done_with_errors, 3/3 items, 1 failed, ")


BUG = {"on": True}


def _buggy_chunk(job, keys):
    CALLS.append(list(keys))
    if "k2" in keys and BUG["on"]:
        return {k: None + 1 for k in keys}  # a programming error: TypeError
    return {k: {"ok": k} for k in keys}


register_job_kind("test-bug", items=_items, process_chunk=_buggy_chunk, chunk_size=2)


def test_a_programming_error_fails_the_job_at_once_with_its_traceback(caplog):
    """No retry (one call for k2-k3), no item marked failed, nothing after it runs; the
    traceback is in the record. Fixed, the same params resume from k2."""
    caplog.set_level(logging.INFO, logger="models_runtime.jobs")
    CALLS.clear()
    BUG["on"] = True
    job = submit_job("test-bug", {"retry_delay_seconds": 0})
    assert CALLS == [["k0", "k1"], ["k2", "k3"]]
    assert (job.state, job.done, job.total, job.n_errors) == ("failed", 2, 6, 0)
    assert list(JobItem.objects.filter(job=job).values_list("key", flat=True)) == ["k0", "k1"]
    (error,) = job.errors
    assert error["error"] == "TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'"
    assert error["attempt"] == 1
    assert error["traceback"].startswith("Traceback (most recent call last):")
    assert "in _buggy_chunk" in error["traceback"]
    assert error["traceback"].rstrip().endswith("TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'")
    assert (job_json(job)["state"], job_json(job)["errors"]) == (
        "failed", [{"error": error["error"], "attempt": 1, "resumable": False}])
    (failed,) = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert re.fullmatch(rf"job {job.pk} test-bug failed: TypeError: unsupported operand type\(s\) for \+: "
                        r"'NoneType' and 'int' \(2/6 items done, \d+\.\d s\)", failed), failed
    BUG["on"] = False
    CALLS.clear()
    again, resumed = prepare_job("test-bug", {"retry_delay_seconds": 0})
    assert (again.pk, resumed) == (job.pk, True)
    again = run_job(again.pk)
    assert CALLS == [["k2", "k3"], ["k4", "k5"]]
    assert (again.state, again.done, again.attempts) == ("done", 6, 2)


def test_a_missing_model_fails_the_job_with_the_setting_to_change(settings):
    study = make_study()
    settings.HUMEVAL_ENCODER_PATH = "/nonexistent/encoder"
    job = submit_job("score", {"study": study.slug, "metrics": "bertscore"})
    assert job.state == "failed"
    assert "HUMEVAL_ENCODER_PATH" in job.errors[-1]["error"]


def test_jobs_api(client, admin_user_, researcher, annotators):
    study = make_study()
    client.force_login(annotators[0])
    refused = client.post("/api/jobs/", {"kind": "score", "study": study.slug}, content_type="application/json")
    assert refused.status_code == 403
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
    # Never run inside the request: queued, for a thread started when the request commits
    # (this test's transaction never does: run it here; test_job_api_files covers the thread).
    assert (body["state"], body["progress"], body["errors"], body["study"]) == ("queued", {"done": 0, "total": 0},
                                                                                [], study.slug)
    assert run_job(body["id"]).state == "done"
    client.force_login(researcher)
    got = client.get(f"/api/jobs/{body['id']}/")
    assert got.status_code == 200 and got.json()["result"]["n_scores"] == 6
    client.force_login(annotators[0])
    assert client.get(f"/api/jobs/{body['id']}/").status_code == 404  # not theirs to read: as if missing
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


@register_metric("test-buggy")
def _buggy_metric(records, *, model=None, device=None):
    return [len(r["output"]) / None for r in records]  # TypeError


class _Command(BaseCommand):
    def __init__(self):
        super().__init__(stdout=StringIO(), stderr=StringIO())


def test_the_score_command_exits_non_zero_when_its_job_fails():
    """A bug in a metric: the JSON on stdout says failed, the traceback is on stderr, and
    the command raises CommandError (exit status 1)."""
    study = make_study()
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("score", study.slug, "--metrics", "test-buggy", stdout=out, stderr=err)
    data = json.loads(out.getvalue())
    message = "TypeError: unsupported operand type(s) for /: 'int' and 'NoneType'"
    assert str(raised.value) == f"job {data['job']} (score) failed: {message} (a bug: the traceback is above; " \
                                "please report it)"
    assert (data["state"], data["progress"]) == ("failed", {"done": 0, "total": 3})
    assert "in _buggy_metric" in err.getvalue() and err.getvalue().rstrip().endswith(message)


def test_a_command_job_with_failed_items_exits_zero_with_a_warning():
    command = _Command()
    job = run_command_job(command, "test-item-error", {}, desc="test")
    check_outcome(command, job)
    assert command.stderr.getvalue().splitlines()[-1] == (
        f"warning: job {job.pk} finished with 1 of 3 items failed (first: item k1: no reference text); "
        f"all errors: GET /api/jobs/{job.pk}/")


def test_running_a_command_again_resumes_its_interrupted_job():
    """The first run is stopped on k2 by Ctrl-C: a one-line error, the job cancelled (not
    left running); the second run of the same command takes up the same job and does only
    k2-k5."""
    study = make_study()
    item = study.items.first()
    CALLS.clear()
    params = {"item": [study.pk, item.pk]}
    with pytest.raises(CommandError, match=r"^interrupted: job \d+ \(test-crash\) stopped at 2/6 items; re-running "
                                           "the same command resumes it$"):
        run_command_job(_Command(), "test-crash", params, desc="test")
    first = Job.objects.get()
    assert first.state == "cancelled" and first.errors[-1]["error"] == "interrupted (Ctrl-C) at 2/6 items"
    command = _Command()
    job = run_command_job(command, "test-crash", params, desc="test")
    assert job.pk == first.pk and Job.objects.count() == 1
    assert command.stderr.getvalue().splitlines()[0] == f"resuming job {job.pk} (test-crash, 2/6 items done)"
    assert CALLS == [["k0", "k1"], ["k2", "k3"], ["k2", "k3"], ["k4", "k5"]]
    assert (job.state, job.done, job.attempts) == ("done", 6, 2)
    # Finished: the next run is a new job.
    assert run_command_job(_Command(), "test-crash", params, desc="test").pk != first.pk


def test_no_wait_prints_the_job_id(settings):
    study = make_study()
    with pytest.raises(CommandError, match="--no-wait needs a Celery broker"):
        call_command("score", study.slug, "--metrics", "rouge1", "--no-wait", stdout=StringIO())
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/3"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    out = StringIO()
    call_command("score", study.slug, "--metrics", "rouge1", "--no-wait", stdout=out)  # sent on commit
    job = Job.objects.get()
    assert json.loads(out.getvalue()) == {"job": job.pk, "state": "queued"}
    assert job.celery_task_id == f"humeval-job-{job.pk}-0"


def test_the_admin_shows_the_state_and_the_traceback(admin_client):
    BUG["on"] = True
    job = submit_job("test-bug", {})
    listing = admin_client.get("/admin/models_runtime/job/?state__exact=failed").content.decode()
    assert f'href="/admin/models_runtime/job/{job.pk}/change/' in listing
    page = admin_client.get(f"/admin/models_runtime/job/{job.pk}/change/").content.decode()
    assert "attempt 1: TypeError: unsupported operand type(s) for +: &#x27;NoneType&#x27; and &#x27;int&#x27;" in page
    assert "<pre>Traceback (most recent call last):" in page
    done = submit_job("test-item-error", {})
    listing = admin_client.get("/admin/models_runtime/job/?state__exact=done_with_errors").content.decode()
    assert f'href="/admin/models_runtime/job/{done.pk}/change/' in listing and f"/job/{job.pk}/change/" not in listing
