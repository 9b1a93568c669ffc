"""Job infrastructure (issues 14.1, 14.10, 16): no server paths from the web or the API
(uploads and downloads instead), background threads without a broker, heartbeats and the
stale-job detector, cancel, and `manage.py jobs`."""
import json
import re
import time
from datetime import timedelta
from html import unescape
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from runtime_judges.scripted import ScriptedBackend
from runtime_judges.test_commands import PAIR_BATCH
from runtime_judges.test_expert_unit import pasta_script

from models_runtime import jobs as jobs_module
from models_runtime.job_support.kinds import job_dir, register_job_kind
from models_runtime.jobs import BACKGROUND_THREADS, cancel_job, prepare_job, requeue_job, requeue_stale_jobs, run_job
from models_runtime.models import Job
from models_runtime.step import advance, counting
from tests.factories import ensure_roles, make_user

from .helpers import make_study


@pytest.fixture(autouse=True)
def no_broker(settings, tmp_path):
    settings.CELERY_BROKER_URL = ""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.SECURE_SSL_REDIRECT = False
    settings.HUMEVAL_JOBS_DIR = str(tmp_path / "jobs")


def _noop_chunk(job, keys):
    return {k: {"ok": k} for k in keys}


register_job_kind("test-three", _noop_chunk, items=lambda job: ["a", "b", "c"], chunk_size=1)


def _slow_chunk(job, keys):
    with counting(2, "units"):
        advance(1)
        time.sleep(float(job.params.get("sleep", 0)))
    return {k: {"ok": k} for k in keys}


register_job_kind("test-slow", _slow_chunk, items=lambda job: ["x", "y"], chunk_size=1)


def _cancelling_chunk(job, keys):
    if keys == ["a"]:
        cancel_job(Job.objects.get(pk=job.pk))  # `jobs cancel` arriving while chunk a runs
    return {k: {"ok": k} for k in keys}


register_job_kind("test-cancel", _cancelling_chunk, items=lambda job: ["a", "b", "c"], chunk_size=1)


# ---- A: no server paths from the web or the API -------------------------------------------

@pytest.mark.django_db
@pytest.mark.parametrize("kind,params,refused", [
    ("rag", {"input": "/etc/passwd", "models": "smollm2", "retriever": "bm25", "k": 1, "slug": "s"}, "input"),
    ("rag", {"input": "/nonexistent/none.jsonl", "models": "smollm2", "retriever": "bm25", "k": 1, "slug": "s"},
     "input"),
    ("expert_batch", {"out": "/tmp/jobsx/x"}, "out"),
    ("expert_batch", {"input": "/etc/passwd", "out": "/tmp/jobsx/x"}, "input, out"),
    ("score", {"study": "whatever", "encoder": "/etc"}, "encoder"),
    ("score", {"study": "whatever", "server_paths": True}, "server_paths"),
])
def test_api_refuses_server_paths_without_a_word_about_the_file(client, kind, params, refused):
    """Issue 14.1: before, an admin could make `rag`/`expert_batch` read and write any path,
    and the errors told whether a file existed and its line count. Now the same 400 for an
    existing and a missing file, and nothing is written or created."""
    ensure_roles()
    client.force_login(make_user("adm", "admins"))
    before = Job.objects.count()
    response = client.post("/api/jobs/", {"kind": kind, "params": params}, content_type="application/json")
    upload = "; upload input as a multipart file field" if kind != "score" else ""
    assert response.status_code == 400
    assert response.json() == {"error": f"{refused}: the web and the API take no server paths{upload}; outputs are "
                                        "written to the job's own files (GET /api/jobs/{id}/files/<name>)"}
    assert Job.objects.count() == before
    assert not Path("/tmp/jobsx/x").exists()


def test_direct_submission_refuses_paths_outside_the_jobs_directory(db, tmp_path):
    """The same rule below the API: only the commands' `server_paths` flag opens the disk."""
    (tmp_path / "in.jsonl").write_text(json.dumps(PAIR_BATCH[1]) + "\n")
    with pytest.raises(jobs_module.JobParamsError) as caught:
        prepare_job("expert_batch", {"input": str(tmp_path / "in.jsonl"), "out": str(tmp_path / "o.jsonl")})
    assert str(caught.value) == ("input, out: server paths are taken from the management commands only; "
                                 "upload input files instead (outputs go to the job's own files)")


@pytest.mark.django_db(transaction=True)
def test_upload_run_in_a_thread_and_download_the_exact_bytes(client, monkeypatch, settings):
    """Issue 14.1 + 14.10: the input is uploaded, the job runs in a background thread (no
    broker), beats while it runs, and its files download byte for byte; only admins and
    researchers, and only the job's own file names."""
    ensure_roles()
    monkeypatch.setattr("models_runtime.judges.jobs._backend", lambda params: ScriptedBackend(
        lambda text, p, j: "Plot A" if "reader" in text else pasta_script(text, p, j)))
    admin, researcher = make_user("adm", "admins"), make_user("res", "researchers")
    annotator = make_user("ann", "annotators")
    uploaded = "".join(json.dumps(r) + "\n" for r in PAIR_BATCH).encode()
    client.force_login(admin)
    response = client.post("/api/jobs/", {"kind": "expert_batch", "params": json.dumps({"slug": "pasta-x"}),
                                          "input": SimpleUploadedFile("mine.jsonl", uploaded)})
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["state"], body["files"]) == ("queued", ["input.jsonl", "batch.jsonl"])
    assert body["params"]["input"] == "input.jsonl"  # the answer names no server path
    assert Job.objects.get(pk=body["id"]).params["input"] == str(job_dir(body["id"]) / "input.jsonl")
    BACKGROUND_THREADS[body["id"]].join(60)
    job = Job.objects.get(pk=body["id"])
    assert (job.state, job.done, job.total, job.errors) == ("done", 1, 1, [])
    assert job.heartbeat_at is not None and job.heartbeat_at >= job.started_at
    assert job.result == {"study": "pasta-x", "items": 1, "failed": 0, "llm_calls": 22,
                          "out": str(job_dir(job.pk) / "batch.jsonl")}
    got_input = client.get(f"/api/jobs/{job.pk}/files/input.jsonl")
    assert (got_input.status_code, b"".join(got_input.streaming_content)) == (200, uploaded)
    client.force_login(researcher)  # the job is about study pasta-x, which does not exist (yet): admins only
    assert client.get(f"/api/jobs/{job.pk}/files/batch.jsonl").status_code == 404
    client.force_login(admin)
    got = client.get(f"/api/jobs/{job.pk}/files/batch.jsonl")
    written = (job_dir(job.pk) / "batch.jsonl").read_bytes()
    assert (got.status_code, b"".join(got.streaming_content)) == (200, written)
    assert got["Content-Disposition"] == 'attachment; filename="batch.jsonl"'
    lines = written.decode().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["study"]["slug"] == "pasta-x"
    assert client.get(f"/api/jobs/{job.pk}/files/settings.py").status_code == 404
    assert client.get(f"/api/jobs/{job.pk}/files/..%2F..%2Fetc%2Fpasswd").status_code == 404
    client.force_login(annotator)
    assert client.get(f"/api/jobs/{job.pk}/files/batch.jsonl").status_code == 404


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres("two threads write the job row at once; SQLite's in-memory test database locks")
def test_the_heartbeat_thread_beats_during_a_long_chunk(client, settings):
    """Issue 16: a chunk of 1.5 s with a 0.2 s heartbeat: the heartbeat moves while the chunk
    runs (read from here while the job's thread works), not only between chunks."""
    ensure_roles()
    settings.HUMEVAL_JOB_HEARTBEAT_SECONDS = 0.2
    job = Job.objects.create(kind="test-slow", params={"sleep": 1.5})
    thread = jobs_module.run_in_thread(job.pk)
    seen, steps = set(), []
    while thread.is_alive():
        row = Job.objects.get(pk=job.pk)
        if row.state == "running" and row.done == 0 and row.heartbeat_at:
            seen.add(row.heartbeat_at)
            steps.append(row.step)
        time.sleep(0.05)
    thread.join()
    row = Job.objects.get(pk=job.pk)
    assert (row.state, row.step) == ("done", {})
    assert len(seen) >= 4, seen  # the start beat plus about 7 thread beats during the first chunk
    assert {"done": 1, "total": 2, "unit": "units"} in steps  # D7: progress inside the chunk


# ---- C: heartbeats, stale jobs, cancel, `manage.py jobs` ----------------------------------

def _running(kind="test-three", beat_seconds_ago=None, worker="node-1:42", params=None, **fields):
    now = timezone.now()
    job = Job.objects.create(kind=kind, params=params or {}, state="running", worker=worker, attempts=1, **fields)
    Job.objects.filter(pk=job.pk).update(
        heartbeat_at=None if beat_seconds_ago is None else now - timedelta(seconds=beat_seconds_ago),
        updated_at=now - timedelta(seconds=beat_seconds_ago or 0))
    return job


@pytest.mark.django_db
def test_run_job_sets_the_heartbeat_and_worker():
    job = Job.objects.create(kind="test-three", params={})
    before = timezone.now()
    run_job(job.pk, worker="box:7")
    job.refresh_from_db()
    assert (job.state, job.done, job.worker) == ("done", 3, "box:7")
    assert before <= job.heartbeat_at <= timezone.now()


@pytest.mark.django_db
def test_stale_running_jobs_fail_resumably_and_fresh_ones_are_untouched():
    """D4: a job whose worker died does not stay `running`: 300 s without a heartbeat (limit
    120 s) -> failed, resumable; 5 s -> untouched; queued and finished jobs -> untouched."""
    stale = _running(beat_seconds_ago=300)
    fresh = _running(beat_seconds_ago=5, params={"f": 1})
    queued = Job.objects.create(kind="test-three", params={"q": 1})
    done = Job.objects.create(kind="test-three", params={"d": 1}, state="done")
    assert requeue_stale_jobs(120) == [stale.pk]
    states = {j.pk: j.state for j in Job.objects.all()}
    assert states == {stale.pk: "failed", fresh.pk: "running", queued.pk: "queued", done.pk: "done"}
    stale.refresh_from_db()
    assert stale.errors == [{"error": "no heartbeat from worker node-1:42 for 300 s: the worker was lost; "
                                      "re-run to resume", "attempt": 1, "resumable": True}]
    assert requeue_stale_jobs(120) == []  # nothing left to do
    again, resumed = prepare_job("test-three", {})
    assert (again.pk, resumed, again.state) == (stale.pk, True, "queued")
    assert run_job(again.pk).state == "done"


@pytest.mark.django_db
def test_with_a_broker_a_stale_job_is_sent_again(settings, monkeypatch, django_capture_on_commit_callbacks):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    sent = []
    monkeypatch.setattr("celery.current_app.send_task", lambda name, args, task_id: sent.append((name, args, task_id)))
    stale = _running(beat_seconds_ago=200, kind="test-slow")
    never_beat = _running(beat_seconds_ago=None, kind="test-slow")  # updated just now, no beat yet: fresh
    with django_capture_on_commit_callbacks(execute=True):
        assert requeue_stale_jobs(120) == [stale.pk]
    stale.refresh_from_db()
    assert (stale.state, stale.celery_task_id) == ("queued", f"humeval-job-{stale.pk}-1")
    assert sent == [("models_runtime.run_job", [stale.pk], f"humeval-job-{stale.pk}-1")]
    assert stale.errors[-1]["error"].endswith("the worker was lost; requeued")
    assert Job.objects.get(pk=never_beat.pk).state == "running"


@pytest.mark.django_db
def test_cancel_stops_between_chunks_and_requeue_resumes():
    job = Job.objects.create(kind="test-cancel", params={})
    run_job(job.pk)
    job.refresh_from_db()
    assert (job.state, job.done, job.total, job.cancel_requested, job.errors) == (
        "cancelled", 1, 3, False, [{"error": "cancelled on request at 1/3 items", "attempt": 1, "resumable": True}])
    out = StringIO()
    call_command("jobs", "requeue", str(job.pk), stdout=out)  # no broker: runs here, from item b
    assert out.getvalue() == f"job {job.pk}: done (3/3 items done)\n"
    with pytest.raises(CommandError, match=f"job {job.pk} is already done"):
        call_command("jobs", "cancel", str(job.pk), stdout=StringIO())
    queued = Job.objects.create(kind="test-three", params={})
    out = StringIO()
    call_command("jobs", "cancel", str(queued.pk), stdout=out)
    assert out.getvalue() == f"job {queued.pk}: cancelled (0/0 items done)\n"
    assert run_job(queued.pk).state == "cancelled"  # a redelivered message does not run it
    fresh = _running(beat_seconds_ago=1)
    with pytest.raises(CommandError, match=f"job {fresh.pk} is running with a fresh heartbeat: cancel it first"):
        call_command("jobs", "requeue", str(fresh.pk), stdout=StringIO())
    out = StringIO()
    call_command("jobs", "cancel", str(fresh.pk), stdout=out)
    assert out.getvalue() == f"job {fresh.pk}: cancel requested; it stops after its current chunk\n"
    assert Job.objects.get(pk=fresh.pk).cancel_requested is True


@pytest.mark.django_db
def test_jobs_command_lists_and_handles_stale_jobs():
    study = make_study()
    now = timezone.now()
    a = Job.objects.create(kind="score", params={"study": study.slug}, study=study.slug, state="done", done=3, total=3)
    b = _running(beat_seconds_ago=400)
    Job.objects.filter(pk=a.pk).update(created_at=now - timedelta(hours=2, minutes=5))
    Job.objects.filter(pk=b.pk).update(created_at=now - timedelta(minutes=30), done=1, total=3)
    out = StringIO()
    call_command("jobs", stdout=out)
    assert out.getvalue().splitlines() == [
        "id     kind           state            progress    study                    age   heartbeat",
        f"{b.pk:<6} test-three     running          1/3         -                        30m   6m",
        f"{a.pk:<6} score          done             3/3         rt-study                 2h    -",
    ]
    out = StringIO()
    call_command("jobs", "--stale", "--stale-seconds", "300", stdout=out)
    assert out.getvalue() == f"requeued 1 stale job(s): {b.pk}\n"
    out = StringIO()
    call_command("jobs", "--study", study.slug, stdout=out)
    assert len(out.getvalue().splitlines()) == 2


# ---- D18: the study dashboard lists every job touching the study ---------------------------

@pytest.mark.django_db
def test_dashboard_jobs_panel_lists_the_study_jobs(client, settings):
    ensure_roles()
    study = make_study()
    researcher, annotator = make_user("res", "researchers"), make_user("ann", "annotators")
    from_cli = Job.objects.create(kind="score", params={"study": study.slug}, state="running", done=1, total=3,
                                  step={"done": 5, "total": 32, "unit": "generations"})
    failed = Job.objects.create(kind="rag", params={"slug": study.slug}, state="failed", done=2, total=4,
                                errors=[{"error": "ConnectionError: refused", "attempt": 1, "traceback": "T"}],
                                files=["input.jsonl", "batch.jsonl"])
    Job.objects.create(kind="score", params={"study": "another"}, state="done")
    job_dir(failed.pk).mkdir(parents=True)
    (job_dir(failed.pk) / "input.jsonl").write_text("{}\n")
    Job.objects.filter(pk=from_cli.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=150))
    client.force_login(researcher)
    page = client.get(f"/studies/{study.slug}/")
    assert f'hx-get="/studies/{study.slug}/jobs/"' in page.content.decode()
    html = client.get(f"/studies/{study.slug}/jobs/").content.decode()
    assert [int(x) for x in re.findall(r'<tr id="job-(\d+)"', html)] == [failed.pk, from_cli.pk]
    assert ('<span class="job-count">1/3</span><div class="bar" role="progressbar" aria-label="job '
            f'{from_cli.pk} progress" aria-valuemin="0" aria-valuemax="100" aria-valuenow="33">') in html
    assert '<small class="job-step">generations: 5/32 in the current chunk</small>' in html
    assert 'aria-valuenow="50"' in html and "<td>2h ago</td>" in html
    assert '<div class="job-error">attempt 1: ConnectionError: refused</div>' in html and "T</" not in html
    assert (f'<a href="/api/jobs/{failed.pk}/files/input.jsonl" download="input.jsonl">input.jsonl</a>' in html
            and "batch.jsonl" not in html)  # not written yet: no link
    client.force_login(annotator)
    assert client.get(f"/studies/{study.slug}/jobs/").status_code == 404


@pytest.mark.django_db
def test_a_command_bar_shows_the_count_inside_the_chunk():
    """D7: the command's progress bar gets every advance of the running chunk."""
    shown = []

    class Bar:
        def __call__(self, done, total):
            shown.append(("items", done, total))

        def show_step(self, step):
            shown.append((step.unit, step.done, step.total))

    job = Job.objects.create(kind="test-slow", params={})
    run_job(job.pk, on_progress=Bar())
    assert shown == [("items", 0, 2), ("units", 1, 2), ("items", 1, 2), ("units", 1, 2), ("items", 2, 2)]


def test_model_loading_is_quiet_off_a_terminal():
    import logging

    from transformers.utils import logging as hf_logging

    from models_runtime.backends.registry import quiet_loading

    class Tty(StringIO):
        def isatty(self):
            return True

    assert quiet_loading(Tty()) is False
    assert quiet_loading(StringIO()) is True
    assert hf_logging.get_verbosity() == logging.ERROR and not hf_logging.is_progress_bar_enabled()
    # a bar made with tqdm directly, as transformers' GGUF loader does, prints nothing
    from tqdm.auto import tqdm

    out = StringIO()
    assert list(tqdm(range(3), desc="Converting and de-quantizing GGUF tensors...", file=out)) == [0, 1, 2]
    assert out.getvalue() == ""


@pytest.mark.django_db
def test_each_ended_attempt_is_in_the_jobs_history_shown_by_the_command_and_the_page(client):
    """Issue 31, item 4: a lost worker, a cancel and an error each leave why their attempt
    ended; `manage.py jobs show ID` and the study's jobs page list them by attempt."""
    study = make_study()
    job = _running(kind="test-cancel", beat_seconds_ago=300, params={"study": study.slug})
    assert requeue_stale_jobs(120) == [job.pk]  # attempt 1: lost worker (no broker: failed)
    requeue_job(Job.objects.get(pk=job.pk))  # attempt 2 runs here and cancels itself after item a
    Job.objects.filter(pk=job.pk).update(kind="test-three", params={"study": study.slug, "chunk_size": "x"})
    requeue_job(Job.objects.get(pk=job.pk))  # attempt 3: a bad param fails it
    job.refresh_from_db()
    lost = "no heartbeat from worker node-1:42 for 300 s: the worker was lost; re-run to resume"
    bad = "chunk_size must be an integer from 1 to 10000, got 'x'"
    out = StringIO()
    call_command("jobs", "show", str(job.pk), stdout=out)
    assert out.getvalue().splitlines()[2:] == [
        f"attempt 1: {lost}", "attempt 2: cancelled on request at 1/3 items", f"attempt 3: {bad}",
        "now: failed, 1/3 items, 3 attempt(s)"]
    ensure_roles()
    client.force_login(make_user("hist-res", "researchers"))
    html = client.get(f"/studies/{study.slug}/jobs/").content.decode()
    assert [unescape(e) for e in re.findall(r'<div class="job-error">(.*?)</div>', html)] == [
        f"attempt 1: {lost}", "attempt 2: cancelled on request at 1/3 items", f"attempt 3: {bad}"]
