"""Bounded requests (issue 14, items 2, 8 and 9): body size per view, JSON nesting depth,
API throttles. Each test sends the attack, then checks the status, the message and that
no row changed."""
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings
from django.test.client import ClientHandler

from annotate.models import AuditLog, Item, Study
from humeval.api_limits import MAX_JSON_DEPTH
from humeval.jsonl import json_nesting_error
from tests.factories import header, jsonl, make_user, pairwise

pytestmark = pytest.mark.django_db
MiB = 1024 * 1024


@pytest.fixture(autouse=True)
def plain_http(settings):
    settings.SECURE_SSL_REDIRECT = False


def row_counts():
    return (Study.objects.count(), Item.objects.count(), AuditLog.objects.count(), get_user_model().objects.count())


class CountingBody(io.RawIOBase):
    """A request body of `size` bytes that exists only as a counter of what was read."""

    def __init__(self, size):
        self.size, self.read_bytes = size, 0

    def readable(self):
        return True

    def readinto(self, buffer):
        n = min(len(buffer), self.size - self.read_bytes)
        buffer[:n] = b"x" * n
        self.read_bytes += n
        return n


def wsgi_post(path, body, content_type="application/x-www-form-urlencoded", **headers):
    """POST a WSGI environ whose input is `body` through the whole middleware stack (the
    test client's handler: Django's WSGI handler minus closing the test's DB connection)."""
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "SERVER_NAME": "testserver", "SERVER_PORT": "80",
               "REMOTE_ADDR": "203.0.113.9", "CONTENT_TYPE": content_type, "CONTENT_LENGTH": str(body.size),
               "wsgi.input": body, "wsgi.url_scheme": "http", "wsgi.errors": io.StringIO(), **headers}
    return ClientHandler()(environ)


# --- item 2: body size ------------------------------------------------------------------

def test_100_mib_anonymous_login_post_is_refused_without_reading_the_body():
    """Before: DATA_UPLOAD_MAX_MEMORY_SIZE was 512 MiB and the login form read it all
    (+365 MiB in one worker). Now: 413 from the declared length, 0 bytes read."""
    before = row_counts()
    body = CountingBody(100 * MiB)
    response = wsgi_post("/login/", body)
    assert response.status_code == 413
    assert body.read_bytes == 0
    assert response.content.decode() == ('{"detail": "upload too large: 104857600 bytes, the limit is 2621440 bytes '
                                '(setting DATA_UPLOAD_MAX_MEMORY_SIZE)"}')
    assert row_counts() == before


def test_a_few_mib_over_the_default_on_a_json_endpoint_is_refused_unread(django_user_model):
    admin = make_user("adm-big", "admins")
    client = Client()
    client.force_login(admin)
    before = row_counts()
    response = client.post("/api/studies/", data=b" " * (3 * MiB), content_type="application/json")
    assert response.status_code == 413
    assert response.json()["detail"] == ("upload too large: 3145728 bytes, the limit is 2621440 bytes "
                                         "(setting DATA_UPLOAD_MAX_MEMORY_SIZE)")
    assert row_counts() == before


def test_default_limit_is_djangos_and_only_upload_views_take_more(settings):
    limits = (settings.DATA_UPLOAD_MAX_MEMORY_SIZE, settings.HUMEVAL_MAX_UPLOAD_BYTES,
              settings.HUMEVAL_LARGE_UPLOAD_URLS)
    large = {"batch-upload", "study-upload", "api-study-batches", "api-study-predictions", "api-jobs", "api-pipelines",
             "plan-new"}
    assert limits == (2621440, 512 * MiB, large)


UPLOAD_DOORS = ["/batches/upload/", "/studies/any/upload/", "/plans/new/", "/api/pipelines/", "/api/jobs/",
                "/api/studies/any/batches/", "/api/studies/any/predictions/"]


@pytest.mark.parametrize("path", UPLOAD_DOORS)
def test_a_100_mib_multipart_upload_is_refused_before_its_body_is_read_unless_from_an_admin(path):
    """Before: the web upload pages wrote 512 MiB multipart bodies to disk (CSRF reads the
    form) before login was checked. Now: 403 from the headers, 0 bytes read, for an
    anonymous client, a signed-in annotator and a bad token; an admin's token passes."""
    from rest_framework.authtoken.models import Token

    annotator = make_user("big-annotator")
    session = Client()
    session.force_login(annotator)
    cookie = f"sessionid={session.cookies['sessionid'].value}"
    admin_token = Token.objects.create(user=make_user("big-admin", "admins")).key
    for extra in ({}, {"HTTP_COOKIE": cookie}, {"HTTP_AUTHORIZATION": "Token not-a-token"}):
        before = row_counts()
        body = CountingBody(100 * MiB)
        response = wsgi_post(path, body, "multipart/form-data; boundary=xyz", **extra)
        assert response.status_code == 403, (path, extra)
        assert body.read_bytes == 0
        assert json.loads(response.content) == {"detail": "sign in as an admin (session or API token) before "
                                                          "uploading a body over 2621440 bytes"}
        assert row_counts() == before
    if path.startswith("/api/"):  # the web pages take sessions (and a CSRF token), the API a token too
        body = CountingBody(100 * MiB)
        response = wsgi_post(path, body, "multipart/form-data; boundary=xyz", HTTP_AUTHORIZATION=f"Token {admin_token}")
        # read (then refused as junk), no such study, or (the upload API takes the file itself as the
        # body, issue 31 item 8) a multipart body refused as 415 unread
        assert body.read_bytes > 0 or response.status_code in (404, 415)


def big_batch(slug, n_items=700):
    """A valid batch of about 3.3 MiB: n items with ~4.8 kB of reference text each."""
    long_text = "The heater clicks but stays cold. " * 140
    data = jsonl(header(slug, "pairwise_alignment"), *[pairwise(f"it{i}", reference=long_text) for i in range(n_items)])
    assert len(data) > 3 * MiB
    return data


def test_batch_over_2_5_mib_still_loads_through_the_api(django_user_model):
    admin = make_user("adm-bulk", "admins")
    client = Client()
    client.force_login(admin)
    make = client.post("/api/studies/", data='{"slug": "bulk", "kind": "pairwise_alignment", "title": "Bulk"}',
                       content_type="application/json")
    assert make.status_code == 201
    response = client.post("/api/studies/bulk/batches/", data=big_batch("bulk"), content_type="application/x-ndjson")
    assert response.status_code == 201, response.content[:300]
    assert response.json() == {"study": "bulk", "created": 700, "skipped": 0}
    assert Item.objects.filter(study__slug="bulk").count() == 700


def test_batch_over_2_5_mib_still_loads_through_the_upload_form(django_user_model):
    admin = make_user("adm-form", "admins")
    client = Client()
    client.force_login(admin)
    upload = SimpleUploadedFile("big.jsonl", big_batch("bulk-form"), content_type="application/x-ndjson")
    response = client.post("/batches/upload/", {"batch": upload})
    assert response.status_code == 200
    assert Item.objects.filter(study__slug="bulk-form").count() == 700


@override_settings(HUMEVAL_MAX_UPLOAD_BYTES=1000)
def test_upload_views_have_their_own_cap(django_user_model):
    admin = make_user("adm-cap", "admins")
    client = Client()
    client.force_login(admin)
    before = row_counts()
    response = client.post("/api/studies/whatever/batches/", data=b"x" * 1001, content_type="application/x-ndjson")
    assert response.status_code == 413
    assert response.json()["detail"] == ("upload too large: 1001 bytes, the limit is 1000 bytes "
                                         "(setting HUMEVAL_MAX_UPLOAD_BYTES)")
    upload = SimpleUploadedFile("batch.jsonl", b"{}\n" * 600, content_type="application/x-ndjson")
    form = client.post("/batches/upload/", {"batch": upload})
    assert form.status_code == 413
    assert row_counts() == before


# --- item 8: JSON nesting -----------------------------------------------------------------

DEEP = "[" * 50_000 + "]" * 50_000


@pytest.mark.parametrize("method,url", [("post", "/api/studies/"), ("post", "/api/jobs/"),
                                        ("post", "/api/assignments/1/judgments/"),
                                        ("put", "/api/assignments/1/judgments/"),
                                        ("patch", "/api/assignments/1/judgments/")])
def test_json_nested_50000_deep_gets_400_with_the_reason(method, url, django_user_model):
    """Before: RecursionError in the JSON decoder, a 500, on every endpoint that reads a
    JSON body (the default DRF parser; the upload views read raw bodies, and
    assignments/next/ reads none)."""
    admin = make_user("adm-deep", "admins", is_superuser=True)
    client = Client(raise_request_exception=False)
    client.force_login(admin)
    before = row_counts()
    response = getattr(client, method)(url, data=DEEP, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"detail": f"JSON parse error - JSON nested more than {MAX_JSON_DEPTH} levels deep"}
    assert row_counts() == before


def test_nesting_is_measured_outside_strings():
    assert json_nesting_error("[" * 32 + "]" * 32, 32) is None
    assert json_nesting_error("[" * 33 + "]" * 33, 32) == "JSON nested more than 32 levels deep"
    assert json_nesting_error('{"a": "' + "[{" * 1000 + '"}', 32) is None  # brackets in a string do not nest
    assert json_nesting_error('["\\"[[[[", ' + "[" * 40 + "]" * 40 + "]", 32) == "JSON nested more than 32 levels deep"


def test_ordinary_json_still_parses(django_user_model):
    admin = make_user("adm-json", "admins")
    client = Client()
    client.force_login(admin)
    response = client.post("/api/studies/", data='{"slug": "ok", "kind": "similarity_survey", "title": "Fine"}',
                           content_type="application/json")
    assert response.status_code == 201
    nan = client.post("/api/studies/", data='{"slug": "nan", "kind": "similarity_survey", "title": NaN}',
                      content_type="application/json")
    assert nan.status_code == 400 and "JSON parse error" in nan.json()["detail"]


# --- item 9: API throttles ----------------------------------------------------------------

@pytest.fixture
def throttles(settings):
    settings.HUMEVAL_THROTTLE_RATES = {"anon": "3/minute", "write": "4/minute"}
    cache.clear()
    yield
    cache.clear()


def test_writes_over_the_rate_get_429_with_retry_after(throttles, django_user_model):
    """4 writes a minute per user: the 5th POST is refused before the view runs (no row)."""
    admin = make_user("adm-rate", "admins")
    client = Client()
    client.force_login(admin)
    statuses = [client.post("/api/studies/", data=f'{{"slug": "r{n}", "kind": "similarity_survey", "title": "R"}}',
                            content_type="application/json").status_code for n in range(4)]
    assert statuses == [201, 201, 201, 201]
    before = row_counts()
    refused = client.post("/api/studies/", data='{"slug": "r5", "kind": "similarity_survey", "title": "R"}',
                          content_type="application/json")
    assert refused.status_code == 429
    assert refused.json()["detail"].startswith("Request was throttled. Expected available in ")
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert row_counts() == before
    # Reads are not counted as writes; another user has their own budget.
    assert client.get("/api/studies/").status_code == 200
    other = make_user("adm-rate2", "admins")
    client.force_login(other)
    assert client.post("/api/studies/", data='{"slug": "r6", "kind": "similarity_survey", "title": "R"}',
                       content_type="application/json").status_code == 201


def test_anonymous_api_requests_are_throttled_per_address(throttles):
    """3 a minute per client address; another address is not affected; a forged
    X-Forwarded-For does not make a new address (no trusted proxy is configured)."""
    client = Client(REMOTE_ADDR="198.51.100.7")
    assert [client.get("/api/schema/").status_code for _ in range(3)] == [200, 200, 200]
    assert client.get("/api/schema/").status_code == 429
    assert client.get("/api/schema/", HTTP_X_FORWARDED_FOR="192.0.2.44").status_code == 429
    assert Client(REMOTE_ADDR="198.51.100.8").get("/api/schema/").status_code == 200

