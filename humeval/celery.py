"""The Celery app. Configured from Django settings (CELERY_* names)."""
import os

from celery import Celery
from celery.signals import setup_logging

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "humeval.settings")

app = Celery("humeval")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@setup_logging.connect
def django_logging(**kwargs):
    """Workers and beat log through settings.LOGGING (HUMEVAL_LOG_LEVEL, INFO by default),
    whatever their `-l`: left to Celery, the root logger took `-l`'s level (WARNING unless
    given), and a worker logged none of the jobs' INFO lines (started, resumed, finished)."""
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)
