"""Reliability middleware: refuse oversized request bodies early, and turn a lost database
connection into a retryable 503 instead of a 500.

Why here and not in each view: every door gets the same size cap before any byte is read,
and every view gets the same answer while PostgreSQL restarts.
"""
import contextlib
import logging

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.http import JsonResponse

log = logging.getLogger(__name__)
RETRY_AFTER_SECONDS = 2


class UploadSizeLimitMiddleware:
    """413 for a request whose declared body is over its view's limit, and 403 for a large
    upload from anyone but a signed-in admin, before any byte is read (so a 100 MiB
    anonymous post costs nothing: no temporary file, no parsing).

    The limit is Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MiB) for every view, except the
    views named in HUMEVAL_LARGE_UPLOAD_URLS (batch, predictions, job and plan uploads),
    which stream the body to disk and take up to HUMEVAL_MAX_UPLOAD_BYTES, from admins only
    (session or API token): every one of those views is an admin's. The whole body counts,
    file parts of multipart uploads included (Django's own setting does not count those).
    Checked in process_view, where the URL is resolved and the session's user is known:
    this middleware comes before CsrfViewMiddleware, whose process_view reads form bodies."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return JsonResponse({"detail": "bad Content-Length header"}, status=400)
        match = request.resolver_match
        if match is not None and match.url_name in settings.HUMEVAL_LARGE_UPLOAD_URLS:
            limit, setting = settings.HUMEVAL_MAX_UPLOAD_BYTES, "HUMEVAL_MAX_UPLOAD_BYTES"
            if length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE and not _uploader_is_admin(request):
                return JsonResponse({"detail": "sign in as an admin (session or API token) before uploading a "
                                               f"body over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes"},
                                    status=403)
        else:
            limit, setting = settings.DATA_UPLOAD_MAX_MEMORY_SIZE, "DATA_UPLOAD_MAX_MEMORY_SIZE"
        if limit is not None and length > limit:
            return JsonResponse(
                {"detail": f"upload too large: {length} bytes, the limit is {limit} bytes (setting {setting})"},
                status=413,
            )
        return None


def _uploader_is_admin(request) -> bool:
    """Whether the request comes from an admin, by its session or its API token (read from
    the headers: nothing of the body)."""
    from annotate.roles import is_admin

    if is_admin(getattr(request, "user", None)):
        return True
    auth = request.META.get("HTTP_AUTHORIZATION", "").split()
    if len(auth) != 2 or auth[0].lower() != "token":
        return False
    from rest_framework.exceptions import AuthenticationFailed

    from annotate.api.authentication import ExpiringTokenAuthentication

    try:
        user, _ = ExpiringTokenAuthentication().authenticate_credentials(auth[1])
    except AuthenticationFailed:
        return False
    return is_admin(user)


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
            return _unavailable(request, "connection broken in an inner middleware")
        return response

    def process_exception(self, request, exception):
        if _is_connection_loss(exception):
            return _unavailable(request, f"{type(exception).__name__}: {str(exception).strip()[:200]}")
        return None


def _connection_broken():
    return any(conn.connection is not None and conn.errors_occurred and not conn.is_usable()
               for conn in connections.all())


def _unavailable(request, cause):
    log.error("database unavailable, answering 503: %s %s (%s)", request.method, request.path, cause)
    for conn in connections.all():
        with contextlib.suppress(Exception):  # the socket is already gone; closing is best effort
            conn.close()
    response = JsonResponse({"detail": "database temporarily unavailable, retry shortly",
                             "retryable": True}, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
