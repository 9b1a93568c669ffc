"""REST endpoints for studies, batches, judgments export, predictions; the admin upload form."""
import io
import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotate.models import Batch, Item, Prediction, Study
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_io import import_judgments
from tests.factories import api_client, aspects, header, jsonl, make_user, pairwise

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
NDJSON = "application/x-ndjson"


@pytest.fixture
def admin_client(admin_user_):
    return api_client(admin_user_)


def test_list_and_detail_by_role(admin_user_, researcher, annotators, django_user_model):
    import_batch_bytes(jsonl(header("open", "pairwise_alignment"), pairwise("a"), pairwise("g", gold="m1")))
    import_batch_bytes(jsonl(header("closed", "aspect_pairwise", annotators=["ann2"]), aspects("x")))
    slugs = lambda user: [s["slug"] for s in api_client(user).get("/api/studies/").json()]  # noqa: E731
    assert slugs(admin_user_) == ["closed", "open"] == slugs(researcher)
    assert slugs(annotators[0]) == ["open"]
    assert slugs(annotators[1]) == ["closed", "open"]
    assert slugs(make_user("no-role", None)) == []
    assert APIClient().get("/api/studies/").status_code in (401, 403)
    detail = api_client(researcher).get("/api/studies/open/").json()
    assert {k: detail[k] for k in ("slug", "kind", "n_items", "n_gold_items", "n_judgments", "annotators")} == {
        "slug": "open", "kind": "pairwise_alignment", "n_items": 2, "n_gold_items": 1, "n_judgments": 0,
        "annotators": []}
    assert api_client(annotators[0]).get("/api/studies/closed/").status_code == 404


def test_admin_creates_a_study(admin_client, researcher):
    response = admin_client.post("/api/studies/", {"slug": "new-one", "kind": "similarity_survey", "title": "New",
                                                   "scale": [1, 4]}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["config"] == {"scale": [1, 4]}
    assert Study.objects.get(slug="new-one").kind == "similarity_survey"
    again = admin_client.post("/api/studies/", {"slug": "new-one", "kind": "similarity_survey", "title": "New"},
                              format="json")
    assert again.status_code == 400 and again.json() == {"errors": ["line 1: study 'new-one' already exists"]}
    bad = admin_client.post("/api/studies/", {"slug": "x", "kind": "poll", "title": "X"}, format="json")
    assert bad.status_code == 400
    assert bad.json()["errors"][0].startswith("line 1: 'kind' must be one of")
    assert api_client(researcher).post("/api/studies/", {"slug": "y", "kind": "aspect_pairwise", "title": "Y"},
                                       format="json").status_code == 403


def test_batch_upload(admin_client, annotators):
    body = jsonl(header("api-batch", "pairwise_alignment"), pairwise("a"), pairwise("b"))
    response = admin_client.post("/api/studies/api-batch/batches/", body, content_type=NDJSON)
    assert response.status_code == 201
    assert response.json() == {"study": "api-batch", "created": 2, "skipped": 0}
    assert admin_client.post("/api/studies/api-batch/batches/", body, content_type=NDJSON).json() == {
        "study": "api-batch", "created": 0, "skipped": 2}
    bad = jsonl(header("api-batch", "pairwise_alignment"), pairwise("c"), {**pairwise("d"), "candidates": []})
    response = admin_client.post("/api/studies/api-batch/batches/", bad, content_type=NDJSON)
    assert response.status_code == 400
    assert response.json() == {"errors": ["line 3: 'candidates' must be a list of 2 to 8, got 0"]}
    assert Item.objects.count() == 2 and Batch.objects.count() == 2
    wrong = admin_client.post("/api/studies/other/batches/", body, content_type=NDJSON)
    assert wrong.json() == {"errors": ["line 1: header slug 'api-batch' does not match the study 'other'"]}
    denied = api_client(annotators[0]).post("/api/studies/api-batch/batches/", body, content_type=NDJSON)
    assert denied.status_code == 403


def test_batch_upload_with_a_token(admin_user_):
    token = Token.objects.create(user=admin_user_)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    body = jsonl(header("tok", "aspect_pairwise"), aspects("a"))
    assert client.post("/api/studies/tok/batches/", body, content_type=NDJSON).status_code == 201


def test_judgments_export_and_predictions_upload(admin_client, researcher, annotators):
    import_batch_bytes(jsonl(header("exp", "pairwise_alignment"), pairwise("a")))
    csv_text = ("study,item_id,annotator,question,value,shown_order,seconds,submitted_at\n"
                "exp,a,ann1,choice,m1,m2|m1,4.5,2026-01-02T03:04:05+00:00\n")
    import_judgments(io.BytesIO(csv_text.encode()))
    response = api_client(researcher).get("/api/studies/exp/judgments/?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert b"".join(response.streaming_content).decode() == (  # comment and platform columns, empty
        "study,item_id,annotator,question,value,shown_order,seconds,submitted_at,comment,platform,study_id,session_id\n"
        "exp,a,ann1,choice,m1,m2|m1,4.5,2026-01-02T03:04:05+00:00,,,,\n")
    response = api_client(researcher).get("/api/studies/exp/judgments/?format=jsonl")
    assert json.loads(b"".join(response.streaming_content)) == {
        "study": "exp", "item_id": "a", "annotator": "ann1", "question": "choice", "value": "m1",
        "shown_order": "m2|m1", "seconds": 4.5, "submitted_at": "2026-01-02T03:04:05+00:00", "comment": "",
        "platform": "", "study_id": "", "session_id": ""}
    assert api_client(researcher).get("/api/studies/exp/judgments/?format=xml").status_code == 400
    assert api_client(annotators[0]).get("/api/studies/exp/judgments/").status_code == 403

    preds = "study,item_id,evaluator,annotator,question,value\nexp,a,bleu,,m1,21.5\nexp,a,bleu,,m2,30\n"
    response = admin_client.post("/api/studies/exp/predictions/", preds, content_type="text/csv")
    assert response.status_code == 200
    assert response.json() == {"studies": ["exp"], "created": 2, "updated": 0, "skipped": 0}
    bad = admin_client.post("/api/studies/exp/predictions/", preds.replace("21.5", "lots"), content_type="text/csv")
    assert bad.status_code == 400
    assert bad.json() == {"errors": ["line 2: value for 'm1' must be a number, N/A or empty, got 'lots'"]}
    assert Prediction.objects.get(question="m1").value == "21.5"
    assert api_client(researcher).post("/api/studies/exp/predictions/", preds,
                                       content_type="text/csv").status_code == 403


def test_schema_lists_the_endpoints(admin_client):
    response = admin_client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    paths = json.loads(response.content)["paths"]
    for path in ("/api/studies/", "/api/studies/{slug}/", "/api/studies/{slug}/batches/",
                 "/api/studies/{slug}/judgments/", "/api/studies/{slug}/predictions/"):
        assert path in paths


# --- the admin upload form --------------------------------------------------------------------

def upload(client, url, data, name="batch.jsonl"):
    file = io.BytesIO(data)
    file.name = name
    return client.post(url, {"batch": file})


def test_upload_form(client, admin_user_, annotators):
    client.force_login(admin_user_)
    assert client.get("/batches/upload/").status_code == 200
    good = jsonl(header("form-study", "aspect_pairwise"), aspects("a"), aspects("b"))
    response = upload(client, "/batches/upload/", good)
    assert response.status_code == 200
    assert "<strong>2</strong> new items" in response.content.decode()
    assert Batch.objects.get().source == "batch.jsonl"
    bad = jsonl(header("form-study", "aspect_pairwise"), aspects("c"), aspects("d", premise=""), "oops")
    response = upload(client, "/studies/form-study/upload/", bad)
    page = response.content.decode()
    assert response.status_code == 400
    assert "<li>line 3: &#x27;premise&#x27; must be a non-empty string</li>" in page
    assert "<li>line 4: expected a JSON object, got str</li>" in page
    assert Item.objects.count() == 2
    other = jsonl(header("elsewhere", "aspect_pairwise"), aspects("z"))
    assert upload(client, "/studies/form-study/upload/", other).status_code == 400
    assert upload(client, "/studies/form-study/upload/", b"", name="empty.jsonl").status_code == 400

    client.force_login(annotators[0])
    assert client.get("/studies/form-study/upload/").status_code == 403
    client.logout()
    assert client.get("/batches/upload/").status_code == 302


def test_django_admin_lists_every_annotate_model(client, django_user_model):
    superuser = django_user_model.objects.create_superuser("root-admin", password=None)
    import_batch_bytes(jsonl(header("adm", "pairwise_alignment"), pairwise("a", metric_scores={"b": {"m1": 1}})))
    client.force_login(superuser)
    for model in ("study", "batch", "item", "assignment", "judgment", "prediction", "auditlog"):
        response = client.get(f"/admin/annotate/{model}/")
        assert response.status_code == 200, model
    item = Item.objects.get()
    assert client.get(f"/admin/annotate/item/{item.pk}/change/").status_code == 200
