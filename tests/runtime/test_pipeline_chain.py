"""The plan's chain against an OpenAI-compatible test server (tests/runtime/fake_llm.py:
real HTTP, real generation cache, every prompt counted): stored prompts and meta.task in
the batch, 2-8 systems in the batch file, --dry-run, chain-wide cancel with the imported
items listed, Ctrl-C, empty answers never cached, a server answering HTML, progress inside
the generate step, one requeue per chain, no server path in the web's answers."""
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotate.models import Item, Study
from models_runtime import jobs
from models_runtime.job_support import kinds
from models_runtime.job_support.heartbeat import Heartbeat
from models_runtime.job_support.kinds import JobKind
from models_runtime.jobs import cancel_job, requeue_stale_jobs
from models_runtime.models import Job
from models_runtime.pipeline import StepProgress
from tests.factories import make_user

from .test_plans import OUTPUTS, QUESTIONS, plan

pytestmark = pytest.mark.django_db


@pytest.fixture
def plan_file(tmp_path):
    (tmp_path / "dev_questions.json").write_text(json.dumps(QUESTIONS))
    (tmp_path / "dev_outputs.json").write_text(json.dumps(OUTPUTS))

    def write(the_plan=None):
        (tmp_path / "plan.json").write_text(json.dumps(the_plan or plan()))
        return tmp_path / "plan.json"
    return write


def run_plan(path, *extra):
    out, err = StringIO(), StringIO()
    call_command("pipeline", str(path), *extra, stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_the_chain_stores_prompts_and_the_task_and_warns_of_questions_left_out(fake_llm, plan_file, settings):
    report, stderr = run_plan(plan_file())
    assert (report["state"], report["progress"]) == ("done", {"done": 4, "total": 4}), report
    batch = report["result"]["steps"]["batch"]
    assert (batch["n_items"], batch["item_ids"], batch["left_out"]) == (
        2, ["310", "311"], [{"id": "312", "why": "empty profile (system bm25-k1 retrieves)"}])
    assert stderr.strip().endswith(
        "warning: 1 of 3 questions were left out of the batch (first: 312: empty profile (system bm25-k1 retrieves)); "
        f"all: steps.batch.left_out in the job's result (GET /api/jobs/{report['job']}/)")
    folder = Path(settings.HUMEVAL_PIPELINE_DIR) / "lamp4-pilot"
    header, *items = read_jsonl(folder / "batch.jsonl")
    assert header["study"]["slug"] == "lamp4-pilot"
    assert [[c["id"] for c in i["candidates"]] for i in items] == [["bm25-k1", "no-profile"]] * 2
    assert [i["meta"]["task"] for i in items] == ["LaMP-4", "LaMP-4"]
    # LaMP's BM25 on two-item profiles (query: the article after "article:"): a word in one
    # item of two has idf ln(2 - 1 + 0.5) - ln(1 + 0.5) = 0, a word in both a negative idf
    # floored to 0.25 x the (negative) mean. 310: only "the" and "a" count, in both items,
    # negative: the longer item, 3100 (10 tokens against 9), loses less. 311: every shared
    # word is in one item: all scores 0, and argsort reversed picks the last item, 3111.
    assert [i["meta"]["retrieved"]["bm25-k1"] for i in items] == [["3100"], ["3111"]]
    prompts = read_jsonl(folder / "prompts.jsonl")
    assert [(p["id"], p["system"]) for p in prompts] == [("310", "bm25-k1"), ("310", "no-profile"),
                                                         ("311", "bm25-k1"), ("311", "no-profile")]
    assert prompts[1]["prompt"] == QUESTIONS[0]["input"]  # no profile: LaMP's bare input
    assert prompts[0]["prompt"] == ('"Bike lane plans" is the title for "the council discussed a bike lane downtown" '
                                    '. ' + QUESTIONS[0]["input"])
    assert sorted(fake_llm.prompts) == sorted(p["prompt"] for p in prompts)  # what was sent is what is stored
    assert all(p["output"] == i["candidates"][n % 2]["text"] for n, (p, i) in
               enumerate(zip(prompts, [items[0], items[0], items[1], items[1]])))
    assert Job.objects.get(pk=report["job"]).files == ["batch.jsonl", "prompts.jsonl"]
    assert Item.objects.filter(study__slug="lamp4-pilot").count() == 2
    # the generation cache keeps each prompt with its answer (every model call: judges' too)
    import sqlite3

    with sqlite3.connect(settings.HUMEVAL_GENERATION_CACHE) as db:
        cached = sorted(json.loads(p) for (p,) in db.execute("SELECT prompt FROM generations"))
    assert cached == sorted(p["prompt"] for p in prompts)


def test_a_cache_file_from_before_gets_the_prompt_column(tmp_path):
    import sqlite3

    from models_runtime.backends.cache import GenerationCache

    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE generations (key TEXT PRIMARY KEY, model TEXT NOT NULL, texts TEXT NOT NULL, "
                   "tokens_in INTEGER NOT NULL, tokens_out TEXT NOT NULL, seconds TEXT NOT NULL)")
        db.execute("INSERT INTO generations VALUES ('old', 'm', '[\"kept\"]', 1, '[1]', '[0.1]')")
    cache = GenerationCache(path)
    cache.put_many([("new", "m", ["fresh"], 2, [1], [0.2], "the prompt")])
    assert cache.get_many(["old", "new"]) == {"old": (["kept"], 1, [1], [0.1]), "new": (["fresh"], 2, [1], [0.2])}
    with sqlite3.connect(path) as db:
        assert dict(db.execute("SELECT key, prompt FROM generations")) == {"old": "", "new": '"the prompt"'}


def test_three_systems_run_end_to_end_into_items_of_three_candidates(fake_llm, plan_file, settings):
    """A plan with three systems (issue 22) passes the plan's checks and runs the whole chain:
    each batch item carries every system's candidate, the import stores items of three, the
    score step scores each, and an annotator is shown two of them."""
    three = plan()
    three["systems"].append({"id": "recent-k2", "model": "fake", "retriever": "recency", "k": 2})
    report, _ = run_plan(plan_file(three))
    assert (report["state"], report["progress"]) == ("done", {"done": 4, "total": 4}), report
    assert report["result"]["steps"]["import"] == {"study": "lamp4-pilot", "created": 2, "skipped": 0}
    systems = ["bm25-k1", "no-profile", "recent-k2"]
    header, *items = read_jsonl(Path(settings.HUMEVAL_PIPELINE_DIR) / "lamp4-pilot" / "batch.jsonl")
    assert [[c["id"] for c in i["candidates"]] for i in items] == [systems] * 2
    assert all(len({c["text"] for c in i["candidates"]}) == 3 for i in items)
    assert [sorted(i["meta"]["systems"]) for i in items] == [systems] * 2
    assert len(fake_llm.prompts) == 6
    stored = Item.objects.filter(study__slug="lamp4-pilot").order_by("position")
    assert [[c["id"] for c in i.data["candidates"]] for i in stored] == [systems] * 2
    assert report["result"]["steps"]["score"]["result"]["n_scores"] == 2 * 3 * 2  # items x systems x metrics
    from annotate.desk.assignment import next_assignment

    shown = next_assignment(Study.objects.get(slug="lamp4-pilot"), make_user("ann-three")).shown_order["candidates"]
    assert len(shown) == 2 and set(shown) < set(systems)


def test_dry_run_prints_the_first_prompts_and_runs_nothing(fake_llm, plan_file):
    shown, _ = run_plan(plan_file(), "--dry-run", "1")
    assert shown["task"] == "LaMP-4" and shown["n_questions"] == 3
    assert shown["prompts"]["no-profile"] == [{"id": "310", "prompt": QUESTIONS[0]["input"], "retrieved": []}]
    assert shown["prompts"]["bm25-k1"][0]["retrieved"] == ["3100"]
    assert fake_llm.prompts == [] and not Job.objects.exists()


def cancel_in_first_chunk(monkeypatch, kind_name):
    """`jobs cancel` on the step's job while its first chunk runs (chunks of 1)."""
    real = kinds.get_job_kind(kind_name)

    def chunk(job, keys):
        result = real.process_chunk(job, keys)
        cancel_job(job)
        return result
    monkeypatch.setitem(kinds._KINDS, kind_name, JobKind(real.kind, real.items, chunk, real.finish, real.validate,
                                                          chunk_size=1))


def cancelled_run(monkeypatch, plan_file, kind_name):
    """Runs the plan with a cancel in the first chunk of `kind_name`: (the command's error, the pipeline job)."""
    cancel_in_first_chunk(monkeypatch, kind_name)
    with pytest.raises(CommandError) as caught:
        run_plan(plan_file())
    return str(caught.value), Job.objects.get(kind="pipeline")


def test_cancelling_the_generate_job_cancels_the_chain_with_nothing_imported(fake_llm, plan_file, monkeypatch):
    error, pipeline = cancelled_run(monkeypatch, plan_file, "plan_generate")
    assert error == (f"job {pipeline.pk} (pipeline) was cancelled at 0/4 steps; nothing was imported "
                                 "(re-running the same command resumes it)")
    generate = Job.objects.get(kind="plan_generate")
    assert (pipeline.state, generate.state, generate.done, generate.parent_id) == ("cancelled", "cancelled", 1,
                                                                                  pipeline.pk)
    assert pipeline.result["imported"] == [] and pipeline.result["stopped_at"] == "generate"
    assert not Study.objects.filter(slug="lamp4-pilot").exists()
    monkeypatch.undo()
    report, _ = run_plan(plan_file())  # the same command resumes the chain and its generate job
    assert report["state"] == "done" and report["job"] == pipeline.pk
    assert Job.objects.filter(kind="plan_generate").count() == 1 and len(fake_llm.prompts) == 4


def test_cancelling_during_scoring_lists_the_items_that_stay_imported(fake_llm, plan_file, monkeypatch):
    error, pipeline = cancelled_run(monkeypatch, plan_file, "score")
    assert error == (f"job {pipeline.pk} (pipeline) was cancelled at 3/4 steps; 2 items were imported "
                                 "into study lamp4-pilot and stay there: 310, 311 (re-running the same command "
                                 "resumes it)")
    assert pipeline.result["imported"] == ["310", "311"] and pipeline.state == "cancelled"
    assert Item.objects.filter(study__slug="lamp4-pilot").count() == 2


def test_cancel_on_the_pipeline_reaches_its_running_step():
    root = Job.objects.create(kind="pipeline", params={"study": "x"}, state=Job.RUNNING)
    child = Job.objects.create(kind="plan_generate", params={"study": "x"}, state=Job.RUNNING, parent=root)
    waiting = Job.objects.create(kind="score", params={"study": "x"}, state=Job.QUEUED, parent=root)
    cancel_job(root)
    assert [Job.objects.get(pk=j.pk).cancel_requested for j in (root, child)] == [True, True]
    assert Job.objects.get(pk=waiting.pk).state == Job.CANCELLED


def test_ctrl_c_stops_the_chain_cleanly_and_the_command_resumes(fake_llm, plan_file, monkeypatch):
    real = kinds.get_job_kind("plan_generate")

    def interrupted(job, keys):
        raise KeyboardInterrupt
    monkeypatch.setitem(kinds._KINDS, "plan_generate", JobKind(real.kind, real.items, interrupted, chunk_size=8))
    with pytest.raises(CommandError) as caught:
        run_plan(plan_file())
    pipeline = Job.objects.get(kind="pipeline")
    assert str(caught.value) == (f"interrupted: job {pipeline.pk} (pipeline) stopped at 0/4 items; re-running the "
                                 "same command resumes it")
    assert sorted(Job.objects.values_list("kind", "state")) == [("pipeline", "cancelled"),
                                                                ("plan_generate", "cancelled")]
    assert pipeline.errors[-1]["error"].startswith("interrupted (Ctrl-C)")
    monkeypatch.undo()
    assert run_plan(plan_file())[0]["state"] == "done"


def test_an_empty_answer_is_not_cached_so_a_rerun_asks_again(fake_llm, plan_file):
    fake_llm.script["heavy rain floods"] = ["", ""]  # both systems' prompts of 311, the first time
    report, stderr = run_plan(plan_file())
    assert report["state"] == "done" and report["result"]["steps"]["batch"]["failed"] == 1
    assert report["result"]["steps"]["batch"]["item_ids"] == ["310"]
    asked = fake_llm.count("heavy rain floods")
    assert asked == 2
    again, _ = run_plan(plan_file())  # a new chain: 310 from the cache, 311 asked again
    assert again["result"]["steps"]["batch"]["item_ids"] == ["310", "311"]
    assert fake_llm.count("heavy rain floods") == 4 and fake_llm.count("bike lane") == 2
    assert again["result"]["steps"]["import"] == {"study": "lamp4-pilot", "created": 1, "skipped": 1}


def test_a_server_answering_html_fails_with_the_model_and_url(fake_llm, plan_file):
    fake_llm.html = True
    with pytest.raises(CommandError) as caught:
        run_plan(plan_file())
    message = str(caught.value)
    assert (f"step generate: job {Job.objects.get(kind='plan_generate').pk} failed: model fake: {fake_llm.url}"
            "/chat/completions answered HTTP 200 with text/html, not JSON ('<!DOCTYPE html><html><body>Welcome to "
            "nginx</body></html>'...): does base_url point at the server's OpenAI API (usually ending in /v1)? Fix "
            "HUMEVAL_MODELS") in message
    assert message.endswith("(fix what the message says, then run the command again)")
    assert "Traceback" not in message


def test_the_generate_step_reports_its_generations_while_it_runs(fake_llm, plan_file, monkeypatch):
    """The count inside the generate step goes to the pipeline's own heartbeat (which writes
    it with its next beat, outside the step's chunk transaction: issue 31, item 2)."""
    notes, shown = [], []
    real_note, real_listen = StepProgress.note, Heartbeat._listen

    def note(self, state=None):
        notes.append((self.step, state))
        real_note(self, state)

    def listen(self, current):
        shown.append((Job.objects.get(pk=self.job_id).kind, current.as_json() if current else None))
        real_listen(self, current)
    monkeypatch.setattr(StepProgress, "note", note)
    monkeypatch.setattr(Heartbeat, "_listen", listen)
    run_plan(plan_file())
    told = [count for kind, count in shown if kind == "pipeline"]
    counts = [count for count in told if count is not None]
    assert counts[-1] == {"done": 4, "total": 4, "unit": "generations (step generate)"} and told[-1] is None
    assert [count["done"] for count in counts] == sorted(count["done"] for count in counts)
    assert ("generate", "running") in notes  # its item count, labelled running, not queued
    assert Job.objects.get(kind="pipeline").step == {}


def test_a_stale_chain_is_requeued_once_through_its_pipeline(settings, monkeypatch,
                                                            django_capture_on_commit_callbacks):
    settings.CELERY_BROKER_URL, settings.CELERY_TASK_ALWAYS_EAGER = "redis://127.0.0.1:6379/3", False
    sent = []
    monkeypatch.setattr(jobs, "_enqueue", lambda job, task_id: sent.append(job.pk))
    from datetime import timedelta

    from django.utils import timezone
    old = timezone.now() - timedelta(minutes=10)
    root = Job.objects.create(kind="pipeline", params={"study": "x"}, state=Job.RUNNING, heartbeat_at=old,
                              worker="dead:1")
    child = Job.objects.create(kind="plan_generate", params={"study": "x"}, state=Job.RUNNING, heartbeat_at=old,
                               worker="dead:1", parent=root)
    with django_capture_on_commit_callbacks(execute=True):
        handled = requeue_stale_jobs()
    assert sorted(handled) == sorted([root.pk])
    assert sent == [root.pk]  # the chain's one message: its worker resumes the step inline
    assert [Job.objects.get(pk=j.pk).state for j in (root, child)] == ["queued", "queued"]
    assert Job.objects.get(pk=child.pk).errors[0]["error"].startswith("no heartbeat from worker dead:1 for ")


def test_web_answers_hold_no_server_path(fake_llm, plan_file, tmp_path, settings):
    settings.SECURE_SSL_REDIRECT = False
    report, _ = run_plan(plan_file())
    admin = make_user("paths-admin", role="admins")
    web = Client()
    web.force_login(admin)
    body = web.get(f"/api/jobs/{report['job']}/").content.decode()
    panel = web.get("/studies/lamp4-pilot/jobs/").content.decode()
    for text in (body, panel):
        assert str(tmp_path) not in text and "/tmp/" not in text
    assert json.loads(body)["params"]["input"]["questions"] == "dev_questions.json"
    assert web.get(f"/api/jobs/{report['job']}/files/prompts.jsonl").status_code == 200


def test_runner_params_are_bounded(settings):
    settings.SECURE_SSL_REDIRECT = False
    admin = make_user("bounds-admin", role="admins")
    web = Client()
    web.force_login(admin)
    response = web.post("/api/jobs/", {"kind": "score", "params": {"study": "x", "throttle_seconds": 1e9,
                                                                   "chunk_size": 0}}, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"error": "chunk_size must be an integer from 1 to 10000, got 0; throttle_seconds must "
                                        "be a number from 0 to 600, got 1000000000.0"}


def test_a_full_disk_names_the_file_and_what_to_do(fake_llm, plan_file, monkeypatch):
    import errno

    from models_runtime.job_support import job_files

    def full(path, *args, **kwargs):
        if str(path).endswith(".part"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return open(path, *args, **kwargs)
    monkeypatch.setattr(job_files, "open", full, raising=False)
    with pytest.raises(CommandError) as caught:
        run_plan(plan_file())
    assert str(caught.value) == (f"job {Job.objects.get(kind='pipeline').pk} (pipeline) failed: could not write "
                                 "batch.jsonl: No space left on device (free disk space in its folder, then re-run: "
                                 "finished items are not generated again); nothing was imported (fix what the "
                                 "message says, then run the command again)")
    monkeypatch.undo()
    assert run_plan(plan_file())[0]["state"] == "done"
    assert len(fake_llm.prompts) == 4  # the re-run generated nothing again


def test_a_cache_on_a_full_disk_keeps_the_answers(tmp_path, caplog):
    """SQLite's own message for a full disk; the answers already paid for are returned."""
    import sqlite3

    from models_runtime.backends.cache import GenerationCache

    class FullDisk:
        def executemany(self, *args):
            raise sqlite3.OperationalError("database or disk is full")

    cache = GenerationCache(tmp_path / "cache.sqlite3")
    cache._conn = FullDisk()
    cache.put_many([("k", "m", ["an answer"], 3, [4], [0.1])])
    assert "cache.sqlite3 not written (database or disk is full): 1 answers will be generated again" in caplog.text
