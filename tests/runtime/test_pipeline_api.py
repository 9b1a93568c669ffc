"""POST /api/pipelines/ and the "New study from a plan" page: admins only, the plan's
input names are the uploaded files (never server paths, and none in the answers), a bad
plan answers 400 with its reasons, the same upload twice is the same job, and the chain is
queued (202), never run inside the request. With a broker configured the job is queued
(the test transaction never commits, so nothing is sent)."""
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from models_runtime.models import Job
from tests.factories import make_user

from .helpers import make_study
from .test_pipeline import OUTPUTS, QUESTIONS, plan
from .test_worker import groups_back  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(settings, tmp_path, plain_http):
    settings.HUMEVAL_PIPELINE_DIR = str(tmp_path / "work")
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/12"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    return tmp_path


def uploads(the_plan=None):
    return {"plan": SimpleUploadedFile("plan.json", json.dumps(the_plan or plan()).encode()),
            "files": [SimpleUploadedFile("dev_questions.json", json.dumps(QUESTIONS).encode()),
                      SimpleUploadedFile("dev_outputs.json", json.dumps(OUTPUTS).encode())]}


def api_as(role):
    client = APIClient()
    client.force_authenticate(make_user(f"u-{role}", role=role))
    return client


def test_api_queues_the_plan_on_the_uploaded_files(queued):
    client = api_as("admins")
    response = client.post("/api/pipelines/", uploads(), format="multipart")
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["kind"], body["state"], body["params"]["study"]) == ("pipeline", "queued", "lamp5-pilot")
    # the answer names the files, never where the server keeps them
    assert body["params"]["input"]["questions"] == "dev_questions.json"
    assert body["params"]["workdir"] == "work" and str(queued) not in response.content.decode()
    questions = Path(Job.objects.get(pk=body["id"]).params["input"]["questions"])
    assert questions.is_relative_to(queued / "work" / "uploads") and questions.name == "dev_questions.json"
    assert json.loads(questions.read_text()) == QUESTIONS
    assert [s["id"] for s in body["params"]["systems"]] == ["bm25-k2", "no-profile"]
    again = client.post("/api/pipelines/", uploads(), format="multipart")
    assert again.status_code == 202 and again.json()["id"] == body["id"]
    assert Job.objects.filter(kind="pipeline").count() == 1


def test_api_refuses_server_paths_bad_plans_and_non_admins(queued):
    client = api_as("admins")
    sneaky = plan()
    sneaky["input"]["questions"] = "/etc/passwd"
    response = client.post("/api/pipelines/", uploads(sneaky), format="multipart")
    assert response.status_code == 400
    why = ("input.questions: 'passwd' was not uploaded (uploaded: dev_outputs.json, dev_questions.json): upload it "
           "with the plan, under its name")
    assert response.json() == {"error": why, "errors": [why]}
    bad = {"plan": SimpleUploadedFile("plan.json", b"{not json")}
    response = client.post("/api/pipelines/", bad, format="multipart")
    assert response.status_code == 400 and response.json()["error"].startswith("the plan is not valid JSON")
    assert client.post("/api/pipelines/", {}, format="multipart").status_code == 400
    assert api_as("researchers").post("/api/pipelines/", uploads(), format="multipart").status_code == 403
    response = client.post("/api/jobs/", {"kind": "pipeline", "params": {"input": {"questions": "/etc/passwd"}}},
                           format="json")
    assert response.status_code == 400 and "POST /api/pipelines/" in response.json()["error"]
    assert not Job.objects.exists()


def test_page_is_for_admins_and_goes_to_the_dashboard(queued):
    web = Client()
    web.force_login(make_user("page-annotator"))
    assert web.get("/plans/new/").status_code == 403
    web.force_login(make_user("page-admin", role="admins"))
    assert web.get("/plans/new/").status_code == 200
    response = web.post("/plans/new/", uploads())
    assert response.status_code == 202  # queued; the study does not exist yet
    job = Job.objects.get(kind="pipeline")
    assert f"Job {job.pk} (pipeline) is <strong>queued</strong>" in response.content.decode()
    make_study("lamp5-pilot")
    response = web.post("/plans/new/", uploads())
    assert (response.status_code, response["Location"]) == (302, "/studies/lamp5-pilot/")
    response = web.post("/plans/new/", {"files": uploads()["files"]})
    assert response.status_code == 400 and "Choose the plan file" in response.content.decode()


@pytest.mark.postgres("the background thread needs the committed rows of a shared database")
@pytest.mark.usefixtures("groups_back")
def test_without_a_broker_the_web_answers_202_at_once_and_the_chain_runs_in_the_background(
        fake_llm, transactional_db, settings, plain_http):
    """Each answer of the test server takes 1.5 s: the chain needs more than that, the
    request answers in under one second, and the chain finishes in a thread of this process."""
    import time

    from models_runtime.jobs import BACKGROUND_THREADS
    from tests.runtime.test_plans import OUTPUTS as LAMP4_OUTPUTS
    from tests.runtime.test_plans import QUESTIONS as LAMP4_QUESTIONS
    from tests.runtime.test_plans import plan as lamp4_plan

    fake_llm.on_request = lambda prompt: time.sleep(1.5)
    client = api_as("admins")
    files = {"plan": SimpleUploadedFile("plan.json", json.dumps(lamp4_plan()).encode()),
             "files": [SimpleUploadedFile("dev_questions.json", json.dumps(LAMP4_QUESTIONS).encode()),
                       SimpleUploadedFile("dev_outputs.json", json.dumps(LAMP4_OUTPUTS).encode())]}
    started = time.monotonic()
    response = client.post("/api/pipelines/", files, format="multipart")
    answered = time.monotonic() - started
    assert response.status_code == 202, response.content
    assert answered < 1.0 and response.json()["state"] == "queued"
    first = BACKGROUND_THREADS[response.json()["id"]]
    time.sleep(0.5)  # the chain is generating; the same upload again is the same job, not run twice
    files = {"plan": SimpleUploadedFile("plan.json", json.dumps(lamp4_plan()).encode()),
             "files": [SimpleUploadedFile("dev_questions.json", json.dumps(LAMP4_QUESTIONS).encode()),
                       SimpleUploadedFile("dev_outputs.json", json.dumps(LAMP4_OUTPUTS).encode())]}
    again = client.post("/api/pipelines/", files, format="multipart")
    assert again.status_code == 202 and again.json()["id"] == response.json()["id"]
    first.join(60)
    BACKGROUND_THREADS[response.json()["id"]].join(60)
    assert len(fake_llm.prompts) == 4  # 2 questions x 2 systems, each sent once
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.state, job.done, job.total) == ("done", 4, 4)
    assert time.monotonic() - started > 1.5
    from annotate.models import Item

    assert Item.objects.filter(study__slug="lamp4-pilot").count() == 2


def test_a_hostile_plan_answers_400_not_500(queued):
    client = api_as("admins")
    deep = {"plan": SimpleUploadedFile("plan.json", b"[" * 3000 + b"]" * 3000)}
    response = client.post("/api/pipelines/", deep, format="multipart")
    assert response.status_code == 400
    assert response.json() == {"error": "the plan is not a plan: JSON nested more than 32 levels deep (a plan needs 4)"}
    huge = {"plan": SimpleUploadedFile("plan.json", b'{"study": {"annotations_per_item": ' + b"9" * 5000 + b"}}")}
    response = client.post("/api/pipelines/", huge, format="multipart")
    assert response.status_code == 400
    assert response.json() == {"error": "the plan is not a plan: a number of 5000 digits (at most 30)"}
    web = Client()
    web.force_login(make_user("deep-admin", role="admins"))
    page = web.post("/plans/new/", {"plan": SimpleUploadedFile("plan.json", b"[" * 3000 + b"]" * 3000)})
    assert page.status_code == 400 and "nested more than 32 levels deep" in page.content.decode()
    assert not Job.objects.exists()
