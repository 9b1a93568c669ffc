"""Reliability middleware: refuse oversized uploads early, and turn a lost database
connection into a retryable 503 instead of a 500.

Why here and not in each view: every door that takes a file (batch upload form, the
REST batch/predictions endpoints, judgments import) gets the same size cap before any
byte is read, and every view gets the same answer while PostgreSQL restarts.
"""
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.http import JsonResponse

RETRY_AFTER_SECONDS = 2


class UploadSizeLimitMiddleware:
    """413 for any request whose declared body exceeds HUMEVAL_MAX_UPLOAD_BYTES.

    Django's DATA_UPLOAD_MAX_MEMORY_SIZE does not count file parts of multipart uploads,
    so this is the one cap that covers files too."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.HUMEVAL_MAX_UPLOAD_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return JsonResponse({"detail": "bad Content-Length header"}, status=400)
        if length > limit:
            return JsonResponse(
                {"detail": f"upload too large: {length} bytes, the limit is {limit} bytes "
                           f"(setting HUMEVAL_MAX_UPLOAD_BYTES)"},
                status=413,
            )
        return self.get_response(request)


def _is_connection_loss(exc):
    """OperationalError/InterfaceError, or a DatabaseError raised on a connection that is
    now unusable (psycopg reports a server restart as either)."""
    if isinstance(exc, (OperationalError, InterfaceError)):
        return True
    if isinstance(exc, DatabaseError):
        return any(conn.connection is not None and not conn.is_usable() for conn in connections.all())
    return False


class DatabaseUnavailableMiddleware:
    """503 + Retry-After when the database connection is lost mid-request (PostgreSQL
    restarting). The broken connection is closed so the next request reconnects: the
    app recovers without a restart. Nothing was acknowledged, so clients retry safely
    (judgment submits are idempotent)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        # An inner middleware (sessions, auth, axes) that lost the connection has already
        # been turned into a 500 by Django; recognise it by the broken connection.
        if response.status_code == 500 and _connection_broken():
            return _unavailable()
        return response

    def process_exception(self, request, exception):
        if _is_connection_loss(exception):
            return _unavailable()
        return None


def _connection_broken():
    return any(conn.connection is not None and conn.errors_occurred and not conn.is_usable()
               for conn in connections.all())


def _unavailable():
    for conn in connections.all():
        try:
            conn.close()
        except Exception:  # the socket is already gone; closing is best effort
            pass
    response = JsonResponse({"detail": "database temporarily unavailable, retry shortly",
                             "retryable": True}, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
