"""Production settings pass Django's deployment checklist and hide debug pages."""
import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_manage(*args, **env):
    # DJANGO_ALLOW_ASYNC_UNSAFE: set by the browser tests (tests/browser/annot_browser.py) in this process.
    full_env = {k: v for k, v in os.environ.items()
                if k not in {"DEBUG", "HUMEVAL_INSECURE_HTTP", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    full_env.update(env)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=120)


def production_env():
    return {"HUMEVAL_PRODUCTION": "1", "SECRET_KEY": secrets.token_urlsafe(64),
            "ALLOWED_HOSTS": "humeval.example.org"}


def test_check_deploy_is_clean():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", **production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_secret_key():
    env = production_env()
    env["SECRET_KEY"] = ""
    result = run_manage("check", **env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_settings_values():
    code = ("from django.conf import settings as s; "
            "print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS >= 31536000, "
            "'axes.middleware.AxesMiddleware' in s.MIDDLEWARE)")
    result = run_manage("shell", "-v", "0", "-c", code, **production_env())
    assert result.stdout.split() == ["False", "True", "True", "True", "True"], result.stderr
