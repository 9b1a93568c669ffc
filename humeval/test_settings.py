"""Settings of the test suite (pytest.ini): production settings (DEBUG off) plus a throwaway
SECRET_KEY, since production has no fallback key. The key goes into the environment, so
servers and workers the tests start (gunicorn, celery, manage.py) share it.

API throttles are off by default so that suites which post hundreds of requests as one
user (fuzzing, schemathesis) are not cut off; tests/test_security.py turns them on."""
import os
import secrets

os.environ.setdefault("SECRET_KEY", "test-only-" + secrets.token_urlsafe(48))

from humeval.settings import *  # noqa: E402, F403

HUMEVAL_THROTTLE_RATES = {"anon": None, "write": None}
