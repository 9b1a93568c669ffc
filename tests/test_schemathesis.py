"""Schemathesis against the OpenAPI schema at /api/schema/, through the WSGI app in-process:
generated requests for every operation, as a superuser (deepest code paths) and as an
annotator, must never get a 5xx. Path slugs point at a real study half of the time so the
handlers behind the 404 are exercised too. Bounded: a few examples per operation."""
import zlib

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from tests.factories import make_user

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
MAX_EXAMPLES = 15
SLUG = "st-study"


@pytest.fixture
def keep_test_connection():
    """A raw WSGI call closes the database connection at request end (Django's
    close_old_connections), which would end the test transaction; the test client
    disconnects the same handler, and so do we."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def api_world(settings, django_user_model, keep_test_connection):
    """A superuser and an annotator with API tokens, and a real study with an open
    assignment, so generated requests can reach the handlers."""
    import json

    from rest_framework.authtoken.models import Token

    from annotate.desk.assignment import next_assignment
    from annotate.models import Study
    from annotate.studies.importing import import_batch_bytes

    settings.SECURE_SSL_REDIRECT = False
    root = make_user("st-root", None, is_superuser=True, is_staff=True)
    annotator = make_user("st-ann", "annotators")
    lines = [{"study": {"slug": SLUG, "kind": "explanation_choice", "title": "ST", "annotations_per_item": 2}}]
    for n in range(3):
        lines.append({"item_id": f"s{n}", "input": "q", "reference": "r",
                      "candidates": [{"id": "m1", "text": "a"}, {"id": "m2", "text": "b"}],
                      "explanations": {c: {"score": 0.5, "aspects_reference": [], "aspects_generated": [],
                                           "matches": []} for c in ("m1", "m2")},
                      "metric_scores": {"rougeL": {"m1": 0.2, "m2": 0.4}}})
    import_batch_bytes("\n".join(json.dumps(line) for line in lines).encode())
    next_assignment(Study.objects.get(slug=SLUG), annotator)
    return {"root": Token.objects.create(user=root).key, "annotator": Token.objects.create(user=annotator).key}


def _lines_body(ctx, value):
    """Bodies for the file endpoints (batch JSONL, predictions CSV): a string is sent as
    is, a list as one JSON document a line, anything else as one JSON line."""
    import json

    if isinstance(value, bytes):
        return {"data": value}
    if isinstance(value, str):
        return {"data": value.encode("utf-8", "surrogatepass")}
    text = "\n".join(json.dumps(v) for v in value) if isinstance(value, list) else json.dumps(value)
    return {"data": text.encode("utf-8", "surrogatepass")}


schemathesis.transport.register_serializer(_lines_body, "application/x-ndjson", "text/csv")


def load_schema():
    """The schema /api/schema/ serves, generated in-process (same generator, no request),
    bound to the WSGI app so generated cases are sent through the whole middleware stack."""
    from django.core.wsgi import get_wsgi_application
    from drf_spectacular.generators import SchemaGenerator

    loaded = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
    loaded.app = get_wsgi_application()
    return loaded


schema = load_schema()


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_no_server_errors(case, api_world):
    if case.path_parameters and "slug" in case.path_parameters and zlib.crc32(repr(case.body).encode()) % 2 == 0:
        case.path_parameters["slug"] = SLUG
    for who in ("root", "annotator"):
        response = case.call(headers={"Authorization": f"Token {api_world[who]}"})
        assert response.status_code < 500, (
            f"{case.method} {case.formatted_path} as {who} -> {response.status_code}\n"
            f"body={case.body!r} query={case.query!r}\n{response.text[:2000]}")
