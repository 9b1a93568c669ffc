"""Production settings pass Django's deployment checklist, and the unsafe defaults exist
only on a development instance (DEBUG=1). Each test runs manage.py in a child process
with the environment a server would have (humeval.settings, not the suite's settings)."""
import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEV_KEY = "django-insecure-humeval-local-development-only"


def run_manage(*args, **env):
    # DJANGO_ALLOW_ASYNC_UNSAFE: set by the browser tests (tests/browser/conftest.py) in this process.
    # SECRET_KEY: the suite's throwaway key (humeval/test_settings.py); each test says its own.
    full_env = {k: v for k, v in os.environ.items()
                if k not in {"DEBUG", "HUMEVAL_INSECURE_HTTP", "DJANGO_ALLOW_ASYNC_UNSAFE", "SECRET_KEY",
                             "HUMEVAL_TRUSTED_PROXY"}}
    full_env["DJANGO_SETTINGS_MODULE"] = "humeval.settings"
    full_env.update(env)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=120)


def production_env():
    return {"SECRET_KEY": secrets.token_urlsafe(64), "ALLOWED_HOSTS": "humeval.example.org"}


def settings_values(expression, **env):
    code = f"from django.conf import settings as s; print(repr({expression}))"
    result = run_manage("shell", "-v", "0", "-c", code, **env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_check_deploy_is_clean():
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", **production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_fails_without_a_real_key():
    """Issue 14 item 6: `check --deploy` passed with the public fallback key."""
    for key in ("", DEV_KEY):
        result = run_manage("check", "--deploy", SECRET_KEY=key, ALLOWED_HOSTS="humeval.example.org")
        assert result.returncode == 1, (key, result.stdout)
        assert ("humeval.E001) SECRET_KEY must be set to a long random value (the development key exists only "
                "with DEBUG=1)") in result.stderr


def test_the_fallback_key_exists_only_with_debug():
    assert settings_values("s.SECRET_KEY", DEBUG="1") == repr(DEV_KEY)
    # Without DEBUG the key is empty: Django refuses to sign anything with it.
    assert settings_values("s._wrapped.SECRET_KEY") == "''"
    result = run_manage("shell", "-v", "0", "-c", "from django.conf import settings; settings.SECRET_KEY")
    assert "The SECRET_KEY setting must not be empty." in result.stderr


def test_the_web_server_refuses_to_start_without_a_key():
    code = "import humeval.wsgi"
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env["DJANGO_SETTINGS_MODULE"] = "humeval.settings"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1
    assert ("RuntimeError: SECRET_KEY must be set (a long random value); only DEBUG=1 has a development key"
            in result.stderr)
    started = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**env, **production_env()},
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr


def test_production_settings_values():
    values = ("(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS, "
              "'axes.middleware.AxesMiddleware' in s.MIDDLEWARE, s.DATA_UPLOAD_MAX_MEMORY_SIZE, "
              "s.HUMEVAL_THROTTLE_RATES, s.AXES_LOCKOUT_PARAMETERS, s.SECURE_REFERRER_POLICY)")
    assert settings_values(values, **production_env()) == repr(
        (False, True, True, 31536000, True, 2621440, {"anon": "60/minute", "write": "240/minute"},
         ["username", "ip_address"], "same-origin"))


def test_forwarded_proto_is_believed_only_with_a_trusted_proxy():
    """Issue 14 item 15: SECURE_PROXY_SSL_HEADER was set for every production server."""
    assert settings_values("(s.SECURE_PROXY_SSL_HEADER, s.HUMEVAL_TRUSTED_PROXIES)", **production_env()) == \
        "(None, [])"
    assert settings_values("(s.SECURE_PROXY_SSL_HEADER, [str(n) for n in s.HUMEVAL_TRUSTED_PROXIES])",
                           HUMEVAL_TRUSTED_PROXY="127.0.0.1, 10.0.0.0/8", **production_env()) == \
        "(('HTTP_X_FORWARDED_PROTO', 'https'), ['127.0.0.1/32', '10.0.0.0/8'])"
    bad = run_manage("check", HUMEVAL_TRUSTED_PROXY="proxy.example.org", **production_env())
    assert bad.returncode == 1 and "does not appear to be an IPv4 or IPv6 network" in bad.stderr


def test_postgresql_connections_persist_and_are_health_checked_sqlite_unchanged(tmp_path):
    """Issue 27: on PostgreSQL a web thread keeps its connection (600 s, DB_CONN_MAX_AGE) and
    Django checks it before a request reuses it; PgBouncer's transaction pooling asks for no
    server-side cursors; the SQLite quick start keeps one connection per request."""
    keys = '[s.DATABASES["default"][k] for k in ("CONN_MAX_AGE", "CONN_HEALTH_CHECKS", "DISABLE_SERVER_SIDE_CURSORS")]'
    postgres = "postgres://postgres@127.0.0.1:5432/unused"
    assert settings_values(keys, DATABASE_URL=postgres, **production_env()) == "[600, True, False]"
    assert settings_values(keys, DATABASE_URL=postgres, DB_CONN_MAX_AGE="0", DB_DISABLE_SERVER_SIDE_CURSORS="1",
                           **production_env()) == "[0, True, True]"
    sqlite = settings_values(keys, DATABASE_URL="", HUMEVAL_VAR_DIR=str(tmp_path), **production_env())
    assert sqlite == "[0, False, False]"
