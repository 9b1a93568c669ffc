"""Fixtures for the browser tests: Debian's Chromium driven by Playwright against
pytest-django's live server."""
import contextlib
import os

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the ORM runs beside Playwright's event loop

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-gpu"]


@pytest.fixture(scope="session", autouse=True)
def plain_http_live_server():
    """The live server speaks plain HTTP: no HTTPS redirect, no secure-only cookies.
    Session-scoped so it is in place before live_server builds its handler."""
    from django.test.utils import override_settings

    override = override_settings(SECURE_SSL_REDIRECT=False, SESSION_COOKIE_SECURE=False, CSRF_COOKIE_SECURE=False,
                                 SECURE_HSTS_SECONDS=0)
    override.enable()
    yield
    override.disable()


@contextlib.contextmanager
def launched_chromium():
    """Debian's Chromium under Playwright's sync API; skips the test when either is missing.

    While it is open, Playwright marks an event loop as running in this thread and Django
    then uses a second database connection; only the first holds the snapshot that
    serialized_rollback restores. So the database is set up before a browser starts."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def module_chromium(django_db_setup):
    """One browser per test module: Playwright's sync API cannot run while another
    module's sync_playwright() is still open, so it is closed at the end of the module.
    The test database is made first (see launched_chromium)."""
    with launched_chromium() as browser:
        yield browser


@pytest.fixture
def chromium(request):
    """The module's browser; in modules marked serialized_rollback, one browser per test,
    started after the test's database is restored (see launched_chromium)."""
    marker = request.node.get_closest_marker("django_db")
    if marker is not None and marker.kwargs.get("serialized_rollback"):
        request.getfixturevalue("transactional_db")
        with launched_chromium() as browser:
            yield browser
    else:
        yield request.getfixturevalue("module_chromium")


@pytest.fixture
def new_page(chromium):
    """Factory: a fresh page (own cookies) with the given viewport; closed after the test."""
    contexts = []

    def make(width=1280, height=900):
        context = chromium.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15000)
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def logged_in(live_server, client):
    """logged_in(page, user): `page` with the test client's session of `user`, logged in
    without the login form."""

    def log_in(page, user):
        client.force_login(user)
        page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                                   "url": live_server.url}])
        return page

    return log_in
