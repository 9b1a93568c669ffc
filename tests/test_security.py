"""Web security of the running app: CSRF, no debug pages, error pages in the site's style,
security headers (CSP, Referrer-Policy, Permissions-Policy), forwarded headers only from a
trusted proxy, swagger-ui from a package, and a retryable 503 when the database is lost.
Login locks: tests/test_login_guard.py; body size, JSON depth, throttles: test_request_limits.py."""
import re
from pathlib import Path

import pytest
from django.db import OperationalError
from django.test import Client
from django.urls import include, path

from tests.factories import make_user

# The test client speaks http: the production SSL redirect is kept out of the way
# (test_plain_http_is_redirected_to_https checks it separately).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "pw-" + "x" * 8


def boom(request):
    raise RuntimeError("secret-internal-detail-1234")


def db_gone(request):
    raise OperationalError("server closed the connection unexpectedly")


# Extra routes for this module only (pytest.mark.urls below), in front of the real URLconf.
urlpatterns = [
    path("__test__/boom/", boom),
    path("__test__/db-gone/", db_gone),
    path("", include("humeval.urls")),
]
with_test_urls = pytest.mark.urls(__name__)


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
    make_user("ann-csrf", "annotators", password=PASSWORD)
    response = csrf_client().post("/login/", {"username": "ann-csrf", "password": PASSWORD})
    assert response.status_code == 403
    assert b"CSRF" in response.content


def test_login_post_with_csrf_token_succeeds(django_user_model):
    make_user("ann-csrf", "annotators", password=PASSWORD)
    client = csrf_client()
    token = csrf_token(client)
    response = client.post("/login/", {"username": "ann-csrf", "password": PASSWORD, "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert "_auth_user_id" in client.session


def test_logout_needs_csrf_too(django_user_model):
    user = make_user("ann-csrf", "annotators", password=PASSWORD)
    client = csrf_client()
    client.force_login(user)
    assert client.post("/logout/").status_code == 403
    assert "_auth_user_id" in client.session


def test_session_authenticated_api_write_needs_csrf(django_user_model):
    """DRF's SessionAuthentication enforces CSRF for logged-in browsers: a cross-site page
    cannot make an admin's browser write through the API."""
    admin = make_user("adm-csrf", "admins", password=PASSWORD)
    client = csrf_client()
    client.force_login(admin)
    response = client.post("/api/studies/", data="{}", content_type="application/json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


def test_every_post_form_in_templates_carries_a_csrf_token():
    """Static check over all templates: no <form method="post"> without {% csrf_token %}
    (except a form marked data-external, which posts to another site: MTurk's
    externalSubmit must not receive our token)."""
    missing = []
    for template in sorted((ROOT / "templates").rglob("*.html")) + sorted(ROOT.glob("*/templates/**/*.html")):
        text = template.read_text()
        for match in re.finditer(r"<form\b[^>]*method=[\"']?post[^>]*>(.*?)</form>", text, re.S | re.I):
            if "csrf_token" not in match.group(1) and "data-external=" not in match.group(0).split(">")[0]:
                missing.append(f"{template.relative_to(ROOT)} at offset {match.start()}")
    assert not missing, "POST forms without {% csrf_token %}: " + ", ".join(missing)


# --- login rate limiting (django-axes; the locks themselves: tests/test_login_guard.py) -----

def test_api_token_endpoints_do_not_bypass_login_limit(django_user_model):
    """Basic auth is not enabled on the API, so passwords can only be tried at /login/
    (which axes guards): an API call with a password in Basic auth is not authenticated."""
    make_user("victim2", "annotators", password=PASSWORD)
    import base64

    creds = base64.b64encode(f"victim2:{PASSWORD}".encode()).decode()
    response = Client().get("/api/studies/", HTTP_AUTHORIZATION=f"Basic {creds}")
    assert response.status_code in (401, 403)


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
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Content-Security-Policy"] == (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'")
    assert response["Permissions-Policy"] == ("accelerometer=(), camera=(), display-capture=(), geolocation=(), "
                                              "gyroscope=(), magnetometer=(), microphone=(), midi=(), payment=(), "
                                              "usb=()")
    api = Client().get("/api/schema/")
    assert api["Content-Security-Policy"] == response["Content-Security-Policy"]


def test_templates_carry_no_inline_script_or_event_handler():
    """Static check behind the CSP (issue 14 item 14): every <script> has a src, no
    on*= attribute, no javascript: URL (the browser test checks the console too)."""
    problems = []
    for template in sorted((ROOT / "templates").rglob("*.html")):
        text = template.read_text()
        name = template.relative_to(ROOT)
        for match in re.finditer(r"<script\b([^>]*)>", text, re.I):
            if "src=" not in match.group(1):
                problems.append(f"{name}: inline <script>")
        problems += [f"{name}: {m.group(0)}" for m in re.finditer(r"\son[a-z]+\s*=", text, re.I)]
        problems += [f"{name}: javascript: URL" for _ in re.finditer(r"javascript:", text, re.I)]
    assert not problems, problems


def test_swagger_ui_comes_from_the_installed_package():
    """Before: swagger-ui from a CDN at @latest with no integrity check, initialised by an
    inline script. Now: the drf-spectacular-sidecar files, and the init script is a URL."""
    page = Client().get("/api/docs/").content.decode()
    assert "cdn.jsdelivr.net" not in page and "@latest" not in page
    assert '<script src="/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"></script>' in page
    assert '<script src="/api/docs/?script="></script>' in page
    script = Client().get("/api/docs/?script=")
    assert script["Content-Type"] == "application/javascript"
    assert "SwaggerUIBundle" in script.content.decode()


# --- error pages in the site's style (issue 14 item 18) ---------------------------------------

def test_403_page_says_why_in_the_site_style(django_user_model):
    from annotate.models import Study

    Study.objects.create(slug="closed", kind="pairwise_alignment", title="Closed")
    annotator = make_user("ann-403", "annotators", password=PASSWORD)
    client = Client()
    client.force_login(annotator)
    response = client.get("/studies/closed/")
    assert response.status_code == 403
    body = response.content.decode()
    assert '<header class="topbar">' in body and "/static/css/humeval.css" in body
    assert "You cannot open this page" in body
    assert "Only this study&#x27;s researchers may see its results." in body
    assert "You are signed in as <strong>ann-403</strong>" in body


@with_test_urls
def test_404_and_500_pages_are_in_the_site_style():
    missing = Client().get("/no-such-page/")
    assert missing.status_code == 404
    assert "Page not found" in missing.content.decode() and '<header class="topbar">' in missing.content.decode()
    broken = Client(raise_request_exception=False).get("/__test__/boom/")
    assert broken.status_code == 500
    assert "Something went wrong on our side" in broken.content.decode()
    assert "/static/css/humeval.css" in broken.content.decode()


def test_a_refused_submit_is_an_error_notice_not_a_green_one(django_user_model):
    """Before: "Please answer every question" shared the green of "Saved."."""
    from annotate.models import Item, Study

    study = Study.objects.create(slug="notice", kind="pairwise_alignment", title="Notice", gold_rate=0)
    Item.objects.create(study=study, item_id="i1", position=0, content_hash="h1",
                        data={"input": "q", "reference": "r", "candidates": [{"id": "x", "text": "one"},
                                                                             {"id": "y", "text": "two"}]})
    client = Client()
    client.force_login(make_user("ann-notice", "annotators", password=PASSWORD))
    assignment = client.post("/api/studies/notice/assignments/next/").json()["assignment"]
    refused = client.post(f"/annotate/notice/items/{assignment}/submit/", {"seconds": "3"})
    assert ('<span class="notice error">Please answer every question before submitting.</span>'
            in refused.content.decode())
    radio = re.search(r'type="radio"[^>]*name="([^"]+)"[^>]*value="([^"]+)"', refused.content.decode())
    saved = client.post(f"/annotate/notice/items/{assignment}/submit/", {"seconds": "3", radio[1]: radio[2]})
    assert '<span class="notice ok">Saved.</span>' in saved.content.decode()
    css = (ROOT / "static" / "css" / "humeval.css").read_text()
    assert ".status .notice.error { color: var(--error);" in css


def test_every_report_format_downloads_under_the_studys_name(django_user_model):
    """Before: the JSON report had no Content-Disposition and browsers saved "download.json"."""
    from annotate.models import Study

    Study.objects.create(slug="named", kind="pairwise_alignment", title="Named")
    client = Client()
    client.force_login(make_user("res-named", "researchers", password=PASSWORD))
    for fmt in ("json", "csv", "html"):
        response = client.get(f"/api/studies/named/report/?format={fmt}")
        assert response.status_code == 200
        assert response["Content-Disposition"] == f'attachment; filename="named-report.{fmt}"'
    page = client.get("/studies/named/").content.decode()
    assert 'href="/api/studies/named/report/?format=json" download="named-report.json"' in page


# --- forwarded headers (issue 14 item 15) ----------------------------------------------------

@pytest.fixture
def behind_proxy(settings):
    """As with HUMEVAL_TRUSTED_PROXY=10.0.0.1 (settings are read at startup)."""
    from humeval.proxy import parse_proxies

    settings.HUMEVAL_TRUSTED_PROXIES = parse_proxies("10.0.0.1")
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True


def test_forwarded_proto_from_any_client_is_not_believed(settings):
    """Before: SECURE_PROXY_SSL_HEADER was always set, so a plain-HTTP client saying
    `X-Forwarded-Proto: https` was treated as secure (no redirect, secure-only cookies
    sent over HTTP)."""
    settings.SECURE_SSL_REDIRECT = True
    assert settings.SECURE_PROXY_SSL_HEADER is None
    response = Client(REMOTE_ADDR="203.0.113.5").get("/login/", HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 301 and response["Location"] == "https://testserver/login/"


def test_forwarded_headers_count_only_from_the_trusted_proxy(behind_proxy):
    via_proxy = Client(REMOTE_ADDR="10.0.0.1").get("/login/", HTTP_X_FORWARDED_PROTO="https")
    assert via_proxy.status_code == 200
    assert via_proxy["Strict-Transport-Security"].startswith("max-age=31536000")
    direct = Client(REMOTE_ADDR="203.0.113.5").get("/login/", HTTP_X_FORWARDED_PROTO="https")
    assert direct.status_code == 301


def test_client_address_is_the_proxys_last_forwarded_entry(behind_proxy, rf):
    from humeval.proxy import TrustedProxyMiddleware, client_ip

    def address(remote, forwarded):
        request = rf.get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
        TrustedProxyMiddleware(lambda r: None)(request)
        return client_ip(request)

    # The client wrote "1.1.1.1"; the proxy appended the address it saw.
    assert address("10.0.0.1", "1.1.1.1, 198.51.100.23") == "198.51.100.23"
    assert address("203.0.113.5", "1.1.1.1, 198.51.100.23") == "203.0.113.5"  # not via the proxy
    assert address("10.0.0.1", "not-an-address") == "10.0.0.1"


# --- database loss -> retryable 503 -----------------------------------------------------

@with_test_urls
def test_lost_database_connection_gives_retryable_503():
    response = Client(raise_request_exception=False).get("/__test__/db-gone/")
    assert response.status_code == 503
    assert response["Retry-After"] == "2"
    assert response.json() == {"detail": "database temporarily unavailable, retry shortly", "retryable": True}
