"""Content-Security-Policy and Permissions-Policy on every response.

Why: the pages show texts from uploaded batches and names from imports. Templates escape
them, and the CSP is the second wall: the browser runs no inline script, no event-handler
attribute, no `eval`, and nothing from another origin (htmx, swagger-ui and our own JS are
static files of installed packages). Styles may be inline: the report's figures are
matplotlib SVGs carrying `style` attributes, and style injection cannot run code.
Referrer-Policy comes from Django's SecurityMiddleware (SECURE_REFERRER_POLICY).
"""
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


def content_security_policy(form_action: tuple[str, ...] = (), frame_ancestors: tuple[str, ...] = ()) -> str:
    """The policy; a page may widen two directives for named origins: `form_action` (a
    participant's flow, whose last form ends on the recruiting platform's completion URL)
    and `frame_ancestors` (an MTurk HIT frames its ExternalQuestion page)."""
    return "; ".join((
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        " ".join(("form-action 'self'", *form_action)),
        " ".join(("frame-ancestors", *frame_ancestors)) if frame_ancestors else "frame-ancestors 'none'",
    ))


CONTENT_SECURITY_POLICY = content_security_policy()
# No page of humeval needs any of these browser features.
PERMISSIONS_POLICY = ", ".join(f"{feature}=()" for feature in (
    "accelerometer", "camera", "display-capture", "geolocation", "gyroscope", "magnetometer",
    "microphone", "midi", "payment", "usb"))


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
        return response
