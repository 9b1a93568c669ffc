"""The admin page "New study from a plan" in Debian's Chromium: a plan with several
problems lists each of them and runs nothing; a good plan answers at once (202, the chain
queued in the background: a broker that is never read here) with no server path on the
page."""
import json

import pytest

from models_runtime.models import Job
from tests.factories import make_user
from tests.runtime.test_plans import OUTPUTS, QUESTIONS, plan

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


@pytest.fixture
def page(new_page, logged_in, settings, tmp_path):
    settings.HUMEVAL_PIPELINE_DIR = str(tmp_path / "work")
    settings.CELERY_BROKER_URL, settings.CELERY_TASK_ALWAYS_EAGER = "redis://127.0.0.1:6379/3", False
    return logged_in(new_page(), make_user("plan-admin", "admins"))


def upload(page, url, the_plan):
    page.goto(f"{url}/plans/new/")
    page.set_input_files("#plan", files=[{"name": "plan.json", "mimeType": "application/json",
                                          "buffer": json.dumps(the_plan).encode()}])
    page.set_input_files("#files", files=[
        {"name": "dev_questions.json", "mimeType": "application/json", "buffer": json.dumps(QUESTIONS).encode()},
        {"name": "dev_outputs.json", "mimeType": "application/json", "buffer": json.dumps(OUTPUTS).encode()}])
    page.click("#plan-submit")


def test_the_plan_page_lists_every_problem_then_queues_a_good_plan(page, live_server, monkeypatch, tmp_path):
    from models_runtime import jobs

    monkeypatch.setattr(jobs, "_enqueue", lambda job, task_id: None)  # queued; no worker here
    bad = plan()
    bad["systems"][0]["top_k"] = 2
    bad["study"]["slug"] = "../elsewhere"
    bad["generation"]["temprature"] = 0.3
    upload(page, live_server.url, bad)
    page.wait_for_selector("#plan-error", timeout=30000)
    assert page.locator("#plan-error li").all_inner_texts() == [
        "study.slug: must be 1-50 lowercase letters, digits or '-', got '../elsewhere'",
        "systems[0] (bm25-k1).top_k: unknown key (did you mean `k`?); allowed: id, model, retriever, k, prompt",
        "systems[0] (bm25-k1).model: unknown model 'fake': add it to HUMEVAL_MODELS (known: smollm2) in the "
        "environment of the process that runs the job: the Celery workers' when CELERY_BROKER_URL is set, else "
        "this one's",
        "systems[1] (no-profile).model: unknown model 'fake': add it to HUMEVAL_MODELS (known: smollm2) in the "
        "environment of the process that runs the job: the Celery workers' when CELERY_BROKER_URL is set, else "
        "this one's",
        "generation.temprature: unknown key (did you mean `temperature`?); allowed: max_tokens, temperature, stop, "
        "postprocess, budget"]
    page.screenshot(path=str(tmp_path / "plan-refused.png"), full_page=True)
    assert not Job.objects.exists()
    good = plan(systems=[{"id": "bm25-k1", "model": "smollm2", "retriever": "bm25", "k": 1},
                         {"id": "no-profile", "model": "smollm2", "retriever": "none"}])
    upload(page, live_server.url, good)
    page.wait_for_selector("#plan-job", timeout=30000)
    job = Job.objects.get(kind="pipeline")
    text = page.locator("#plan-job").inner_text()
    assert text.startswith(f"Job {job.pk} (pipeline) is queued. It runs in the background: generate, build the "
                           "batch, import it, score it. The study's dashboard (/studies/lamp4-pilot/) opens once the "
                           "batch is imported.")
    assert str(tmp_path) not in page.content()
    page.screenshot(path=str(tmp_path / "plan-queued.png"), full_page=True)
