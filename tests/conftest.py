"""Shared fixtures (users in each role, plain-HTTP settings, table cleanup) and the
`postgres` marker. The builders behind them are in tests/factories.py."""
import os

import pytest

from tests.factories import make_user

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


DB_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback", "live_server"}


def runs_in_the_sqlite_lane(item):
    """Touches the database, or is marked `postgres` (so its skip and reason are listed)."""
    return (item.get_closest_marker("django_db") is not None or bool(DB_FIXTURES & set(item.fixturenames))
            or item.get_closest_marker("postgres") is not None)


def pytest_collection_modifyitems(config, items):
    """On SQLite (the quick-start lane): tests marked `postgres` skip, saying why; with
    HUMEVAL_TESTS_DB_ONLY=1 (scripts/test.sh's SQLite lane) the tests that never touch the
    database are deselected, as they already ran, identically, in the PostgreSQL lane."""
    from django.conf import settings

    if settings.IS_POSTGRES:
        return
    for item in items:
        marker = item.get_closest_marker("postgres")
        if marker is not None:
            reason = marker.args[0] if marker.args else "needs PostgreSQL"
            item.add_marker(pytest.mark.skip(reason=f"PostgreSQL only: {reason}"))
    if os.environ.get("HUMEVAL_TESTS_DB_ONLY") == "1":
        kept = [item for item in items if runs_in_the_sqlite_lane(item)]
        config.hook.pytest_deselected(items=[item for item in items if not runs_in_the_sqlite_lane(item)])
        items[:] = kept


@pytest.fixture(scope="session", autouse=True)
def fast_password_hashing():
    """MD5 instead of PBKDF2 for every test user: the default costs ~1 s a password on a
    busy box. Session-scoped, so the live server of the browser tests uses it too."""
    from django.test.utils import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture
def admin_user_(db):
    return make_user("alice-admin", "admins")


@pytest.fixture
def researcher(db):
    return make_user("rita-researcher", "researchers")


@pytest.fixture
def annotators(db):
    return [make_user(f"ann{i}", "annotators") for i in range(1, 4)]


@pytest.fixture
def plain_http(settings):
    """The test client speaks http: no redirect to https."""
    settings.SECURE_SSL_REDIRECT = False


@pytest.fixture(scope="module")
def empty_tables_after_module(django_db_blocker):
    """After a module of transactional tests, leave the tables as empty as Django's flush
    means them to be. Something in these runs (post_migrate after a flush) re-creates
    content types and permissions, and a later `serialized_rollback` test then fails
    reloading its snapshot with duplicate keys; truncating them avoids that."""
    yield
    with django_db_blocker.unblock():
        from django.db import connection

        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("TRUNCATE django_content_type, auth_permission RESTART IDENTITY CASCADE")
            else:
                cursor.execute("DELETE FROM auth_permission")
                cursor.execute("DELETE FROM django_content_type")
