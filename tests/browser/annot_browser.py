"""Fixtures for the annotator browser tests: Debian's Chromium driven by Playwright
against pytest-django's live server. Kept out of a conftest.py on purpose: a second
conftest module would shadow tests/conftest.py for modules doing `from conftest import`."""
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
                                 SECURE_HSTS_SECONDS=0,
                                 PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"])
    override.enable()
    yield
    override.disable()


@pytest.fixture(scope="module")
def chromium():
    """One browser per test module: Playwright's sync API cannot run while another
    module's sync_playwright() is still open, so it is closed at the end of the module."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


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


