"""Deployment checks (`manage.py check --deploy`) for what Django's own do not catch.

Django only warns (W009) about a weak SECRET_KEY, and a warning leaves `check --deploy`
at exit status 0; a server without a real key must fail the check.
"""
from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured


@checks.register(checks.Tags.security, deploy=True)
def secret_key_is_real(app_configs, **kwargs) -> list[checks.CheckMessage]:
    try:
        key = settings.SECRET_KEY
    except ImproperlyConfigured:  # Django raises on an empty key
        key = ""
    if not key or key == settings.DEV_SECRET_KEY:
        return [checks.Error(
            "SECRET_KEY must be set to a long random value (the development key exists only with DEBUG=1)",
            hint='python -c "import secrets; print(secrets.token_urlsafe(64))"', id="humeval.E001")]
    return []
