"""Logging filters (settings.LOGGING).

Django logs every refused request (PermissionDenied, Http404) with the exception attached,
so a 403 printed a full traceback: noise that hides real errors. A client error keeps its
one line ("Forbidden (Permission denied): /path") and loses the traceback; server errors
(5xx) keep theirs."""
import logging


class NoClientErrorTracebacks(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500 and record.exc_info:
            record.exc_info = None
            record.exc_text = None
        return True
