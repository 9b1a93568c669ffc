"""Celery tasks of annotate, for Celery's autodiscovery: the background refresh of a cached
report (defined in annotate/reports/cache.py, next to what it refreshes)."""
from annotate.reports.cache import refresh_report_task

__all__ = ["refresh_report_task"]
