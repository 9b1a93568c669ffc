"""/api/schema/ documents every endpoint: request bodies, JSON responses with properties,
the enums of kind/state/format (issue 12 part 5); and the serializers that produce the
responses reproduce the bodies the API always sent, key for key."""
import json

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db
TAKES_NO_BODY = {("post", "/api/studies/{slug}/assignments/next/"), ("post", "/api/token/rotate/"),
                 ("post", "/api/assignments/{id}/extend/")}
NOT_JSON_API = {"/api/schema/"}  # served by drf-spectacular itself


@pytest.fixture
def schema(client, settings):
    settings.SECURE_SSL_REDIRECT = False
    response = client.get(reverse("api-schema"), {"format": "json"})
    assert response.status_code == 200
    return json.loads(response.content)


def resolve(schema, node):
    """Follow $ref (a single allOf wrapper, an array's items) to the object schema."""
    while True:
        if "$ref" in node:
            node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
        elif "allOf" in node and len(node["allOf"]) == 1:
            node = node["allOf"][0]
        elif node.get("type") == "array":
            node = node["items"]
        else:
            return node


def operations(schema):
    for path, methods in schema["paths"].items():
        if path in NOT_JSON_API:
            continue
        for method, operation in methods.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield path, method, operation


def test_every_operation_documents_its_bodies(schema):
    problems = []
    seen = 0
    for path, method, operation in operations(schema):
        seen += 1
        where = f"{method.upper()} {path}"
        if method in ("post", "put", "patch") and (method, path) not in TAKES_NO_BODY:
            content = operation.get("requestBody", {}).get("content", {})
            if not content:
                problems.append(f"{where}: no request body documented")
            for media, body in content.items():
                target = resolve(schema, body.get("schema", {}))
                if media == "application/json" and not target.get("properties"):
                    problems.append(f"{where}: request {media} has no properties")
                if media != "application/json" and target.get("type") != "string" and not target.get("properties"):
                    problems.append(f"{where}: request {media} is undescribed")
        elif "requestBody" in operation:
            problems.append(f"{where}: documents a body it does not take")
        if not any(code.startswith("2") for code in operation["responses"]):
            problems.append(f"{where}: no success response")
        for code, response in operation["responses"].items():
            for media, body in response.get("content", {}).items():
                target = resolve(schema, body["schema"])
                if media == "application/json" and not target.get("properties"):
                    problems.append(f"{where} {code}: JSON response without properties")
                if media != "application/json" and target.get("type") != "string":
                    problems.append(f"{where} {code}: {media} response is not a string")
            if code.startswith("2") and code != "204" and not response.get("content"):
                problems.append(f"{where} {code}: no content documented")
        if method != "get" and "403" not in operation["responses"]:
            problems.append(f"{where}: the 403 of a refused role is not documented")
    assert seen == 23  # 15 + skip, extend, participants.csv, job files, report version, pipelines, designs (2)
    assert not problems, "\n".join(problems)


def test_enums_for_kind_state_and_format(schema):
    components = schema["components"]["schemas"]
    from annotate.kinds import KINDS

    study_kinds = list(KINDS)
    for name in ("Study", "StudyCreate", "Report"):
        assert resolve(schema, components[name]["properties"]["kind"])["enum"] == study_kinds, name
    assert resolve(schema, components["Job"]["properties"]["state"])["enum"] == [
        "queued", "running", "done", "done_with_errors", "failed", "cancelled"]
    job_kinds = resolve(schema, components["JobCreate"]["properties"]["kind"])["enum"]
    assert {"score", "rag", "perse", "expert_batch"} <= set(job_kinds)
    formats = {}
    for path, _, operation in operations(schema):
        for parameter in operation.get("parameters", []):
            if parameter["name"] == "format":
                formats[path] = parameter["schema"]["enum"]
    assert formats == {"/api/studies/{slug}/report/": ["csv", "html", "json"],
                       "/api/studies/{slug}/judgments/": ["csv", "jsonl"]}


def test_answers_are_documented_as_question_keyed_values(schema):
    answers = schema["components"]["schemas"]["Answers"]
    assert set(answers["properties"]) == {"seconds", "edit", "comment", "pastes", "focus_losses"}
    one_of = answers["additionalProperties"]["oneOf"]
    assert one_of[:2] == [{"type": "string"}, {"type": "integer"}]
    # a full order (the listwise ranking's `rank`): a list of tokens, ties as lists inside it
    assert one_of[2]["type"] == "array" and one_of[2]["items"] == {
        "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}


def test_study_create_serializer_names_every_header_key():
    from annotate.api.serializers import StudyCreateSerializer
    from annotate.studies.batch_format import HEADER_KEYS

    assert set(StudyCreateSerializer().fields) == set(HEADER_KEYS)


def test_serializers_reproduce_the_bodies_exactly(django_user_model, admin_user_):
    """Next-assignment payloads of all four kinds and a job record go through their
    serializers unchanged: nothing is dropped, renamed or reformatted."""
    from annotate.api.serializers import NextAssignmentSerializer
    from annotate.desk.assignment import next_assignment
    from annotate.desk.display import assignment_payload
    from annotate.kinds import KINDS, get_kind
    from models_runtime.api import JobSerializer
    from models_runtime.job_support.reporting import job_json
    from models_runtime.models import Job, JobItem
    from tests.factories import make_items, make_study, make_user

    annotator = make_user("ser-ann")
    for kind in KINDS:
        study = make_study(kind, allow_tie=get_kind(kind).allows_tie)
        make_items(study, 1)
        payload = assignment_payload(next_assignment(study, annotator))
        assert NextAssignmentSerializer(payload).data == payload, kind
    job = Job.objects.create(kind="score", params={"study": "s", "metrics": ["rougeL"]}, created_by=admin_user_,
                             errors=[{"error": "job-level"}], result={"n": 2}, timings={"load": 1.5})
    JobItem.objects.create(job=job, key="item-1", error="no such candidate")
    body = job_json(job)
    assert body["errors"] == [{"error": "job-level"}, {"item": "item-1", "error": "no such candidate"}]
    assert JobSerializer(body).data == body


def test_skip_and_extend_are_documented(schema):
    skip = schema["paths"]["/api/assignments/{id}/skip/"]["post"]
    body = resolve(schema, skip["requestBody"]["content"]["application/json"]["schema"])
    assert sorted(body["properties"]) == ["comment", "reason", "seconds"] and body["required"] == ["reason"]
    assert resolve(schema, body["properties"]["reason"])["enum"] == ["not_understood", "unsafe", "technical", "other"]
    assert sorted(skip["responses"]) == ["200", "201", "400", "403", "404", "409"]
    extend = schema["paths"]["/api/assignments/{id}/extend/"]["post"]
    ok = resolve(schema, extend["responses"]["200"]["content"]["application/json"]["schema"])
    assert sorted(ok["properties"]) == ["assignment", "expires_at", "extended"]
