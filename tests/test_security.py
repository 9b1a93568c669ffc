"""Web security of the running app: CSRF, login rate limiting, upload cap, no debug pages,
security headers, and a retryable 503 when the database connection is lost."""
import re
from pathlib import Path

import pytest
from django.db import OperationalError
from django.http import HttpResponse
from django.test import Client, override_settings
from django.urls import include, path

from conftest import make_user

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "pw-" + "x" * 8


def boom(request):
    raise RuntimeError("secret-internal-detail-1234")


def db_gone(request):
    raise OperationalError("server closed the connection unexpectedly")


def echo_length(request):
    return HttpResponse(str(len(request.body)))


# Extra routes for this module only (pytest.mark.urls below), in front of the real URLconf.
urlpatterns = [
    path("__test__/boom/", boom),
    path("__test__/db-gone/", db_gone),
    path("__test__/echo/", echo_length),
    path("", include("humeval.urls")),
]
with_test_urls = pytest.mark.urls(__name__)


@pytest.fixture(autouse=True)
def plain_http(settings):
    """The test client speaks http: keep the production SSL redirect out of the way
    (test_plain_http_is_redirected_to_https checks it separately)."""
    settings.SECURE_SSL_REDIRECT = False


def test_plain_http_is_redirected_to_https(settings):
    settings.SECURE_SSL_REDIRECT = True
    response = Client().get("/login/")
    assert response.status_code == 301 and response["Location"] == "https://testserver/login/"
    secure = Client().get("/login/", secure=True)
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert secure.cookies["csrftoken"]["secure"] is True


def csrf_client():
    return Client(enforce_csrf_checks=True)


def csrf_token(client, url="/login/"):
    client.get(url)
    return client.cookies["csrftoken"].value


# --- CSRF -------------------------------------------------------------------------------

def test_login_post_without_csrf_token_is_refused(django_user_model):
    make_user(django_user_model, "ann-csrf", "annotators")
    response = csrf_client().post("/login/", {"username": "ann-csrf", "password": PASSWORD})
    assert response.status_code == 403
    assert b"CSRF" in response.content


def test_login_post_with_csrf_token_succeeds(django_user_model):
    make_user(django_user_model, "ann-csrf", "annotators")
    client = csrf_client()
    token = csrf_token(client)
    response = client.post("/login/", {"username": "ann-csrf", "password": PASSWORD, "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert "_auth_user_id" in client.session


def test_logout_needs_csrf_too(django_user_model):
    user = make_user(django_user_model, "ann-csrf", "annotators")
    client = csrf_client()
    client.force_login(user)
    assert client.post("/logout/").status_code == 403
    assert "_auth_user_id" in client.session


def test_session_authenticated_api_write_needs_csrf(django_user_model):
    """DRF's SessionAuthentication enforces CSRF for logged-in browsers: a cross-site page
    cannot make an admin's browser write through the API."""
    admin = make_user(django_user_model, "adm-csrf", "admins")
    client = csrf_client()
    client.force_login(admin)
    response = client.post("/api/studies/", data="{}", content_type="application/json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


def test_every_post_form_in_templates_carries_a_csrf_token():
    """Static check over all templates: no <form method="post"> without {% csrf_token %}."""
    missing = []
    for template in sorted((ROOT / "templates").rglob("*.html")) + sorted(ROOT.glob("*/templates/**/*.html")):
        text = template.read_text()
        for match in re.finditer(r"<form\b[^>]*method=[\"']?post[^>]*>(.*?)</form>", text, re.S | re.I):
            if "csrf_token" not in match.group(1):
                missing.append(f"{template.relative_to(ROOT)} at offset {match.start()}")
    assert not missing, "POST forms without {% csrf_token %}: " + ", ".join(missing)


# --- login rate limiting (django-axes) --------------------------------------------------

def test_five_failed_logins_lock_the_account_for_that_address(django_user_model, settings):
    """AXES_FAILURE_LIMIT = 5: failures 1-5 show the form again (200); from then on even
    the right password gets 429 from that (username, IP); another user is unaffected."""
    assert settings.AXES_ENABLED and settings.AXES_FAILURE_LIMIT == 5
    make_user(django_user_model, "victim", "annotators")
    make_user(django_user_model, "bystander", "annotators")
    client = Client()
    statuses = [client.post("/login/", {"username": "victim", "password": f"wrong-{n}"}).status_code
                for n in range(5)]
    assert statuses[:4] == [200, 200, 200, 200]
    assert statuses[4] in (200, 429)
    locked = client.post("/login/", {"username": "victim", "password": PASSWORD})
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session
    other = Client().post("/login/", {"username": "bystander", "password": PASSWORD})
    assert other.status_code == 302


def test_api_token_endpoints_do_not_bypass_login_limit(django_user_model):
    """Basic auth is not enabled on the API, so passwords can only be tried at /login/
    (which axes guards): an API call with a password in Basic auth is not authenticated."""
    make_user(django_user_model, "victim2", "annotators")
    import base64

    creds = base64.b64encode(f"victim2:{PASSWORD}".encode()).decode()
    response = Client().get("/api/studies/", HTTP_AUTHORIZATION=f"Basic {creds}")
    assert response.status_code in (401, 403)


# --- upload size cap ----------------------------------------------------------------------

@with_test_urls
@override_settings(HUMEVAL_MAX_UPLOAD_BYTES=1000)
def test_body_over_the_upload_limit_gets_413_with_a_clear_reason():
    client = Client()
    small = client.post("/__test__/echo/", data="x" * 1000, content_type="application/x-ndjson")
    assert small.status_code == 200 and small.content == b"1000"
    big = client.post("/__test__/echo/", data="x" * 1001, content_type="application/x-ndjson")
    assert big.status_code == 413
    assert big.json()["detail"] == ("upload too large: 1001 bytes, the limit is 1000 bytes "
                                    "(setting HUMEVAL_MAX_UPLOAD_BYTES)")


@with_test_urls
@override_settings(HUMEVAL_MAX_UPLOAD_BYTES=1000)
def test_multipart_file_over_the_limit_gets_413(django_user_model):
    """File parts are not counted by DATA_UPLOAD_MAX_MEMORY_SIZE; the cap still applies."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    admin = make_user(django_user_model, "adm-up", "admins")
    client = Client()
    client.force_login(admin)
    upload = SimpleUploadedFile("batch.jsonl", b"{}\n" * 600, content_type="application/x-ndjson")
    response = client.post("/__test__/echo/", {"file": upload})
    assert response.status_code == 413
    assert "upload too large" in response.json()["detail"]


@override_settings(HUMEVAL_MAX_UPLOAD_BYTES=1000)
def test_real_batch_endpoint_refuses_oversized_body(django_user_model):
    admin = make_user(django_user_model, "adm-up2", "admins")
    client = Client()
    client.force_login(admin)
    response = client.post("/api/studies/whatever/batches/", data=b"x" * 5000, content_type="application/x-ndjson")
    assert response.status_code == 413


# --- no debug pages, security headers ---------------------------------------------------

@with_test_urls
def test_404_is_plain_page_without_debug_information(settings):
    assert settings.DEBUG is False
    response = Client().get("/no-such-page/")
    assert response.status_code == 404
    body = response.content.decode()
    for leak in ("URLconf", "Traceback", "Django tried these URL patterns", settings.SECRET_KEY):
        assert leak not in body


@with_test_urls
def test_500_shows_no_traceback_or_secret(settings):
    client = Client(raise_request_exception=False)
    response = client.get("/__test__/boom/")
    assert response.status_code == 500
    body = response.content.decode()
    for leak in ("secret-internal-detail-1234", "Traceback", "RuntimeError", settings.SECRET_KEY):
        assert leak not in body


def test_security_headers_on_pages():
    response = Client().get("/login/")
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response.cookies["csrftoken"]["samesite"] == "Lax"


# --- database loss -> retryable 503 -----------------------------------------------------

@with_test_urls
def test_lost_database_connection_gives_retryable_503():
    response = Client(raise_request_exception=False).get("/__test__/db-gone/")
    assert response.status_code == 503
    assert response["Retry-After"] == "2"
    assert response.json() == {"detail": "database temporarily unavailable, retry shortly", "retryable": True}
