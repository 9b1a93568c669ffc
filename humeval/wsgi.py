"""WSGI entry point (gunicorn humeval.wsgi).

Refuses to start without a SECRET_KEY: otherwise the server would come up and answer
every login with a 500 (Django refuses to sign with an empty key).
"""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'humeval.settings')

application = get_wsgi_application()

from django.conf import settings  # noqa: E402  (configured by get_wsgi_application)
from django.core.exceptions import ImproperlyConfigured  # noqa: E402

try:
    settings.SECRET_KEY  # noqa: B018  (Django raises on an empty key)
except ImproperlyConfigured:
    raise RuntimeError("SECRET_KEY must be set (a long random value); only DEBUG=1 has a development key") from None
