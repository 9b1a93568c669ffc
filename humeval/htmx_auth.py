"""A lost session during an htmx request (issue 14 item 17): logged out in another tab, the
session expired, or the cookies were cleared. Django's answer would be a 302 to the login
page (login_required) or a 403 page (CSRF cookie gone), and htmx would draw either inside
the item card, losing the answer. Instead such a request gets 401 with `HX-Redirect` to
the login page, whose `next` is the page the user was on (htmx's HX-Current-URL), so
htmx leaves for the login page and comes back to the same study. The page keeps the
answer in localStorage meanwhile (static/js/annotate.js) and ticks it again on return.
"""
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import resolve_url
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.csrf import csrf_failure as django_csrf_failure


def _came_from(request) -> str:
    """The path of the page the htmx request came from (same site only), else /."""
    current = request.headers.get("HX-Current-URL", "")
    if current and url_has_allowed_host_and_scheme(current, allowed_hosts={request.get_host()},
                                                   require_https=request.is_secure()):
        parts = urlsplit(current)
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return "/"


def login_again(request) -> HttpResponse:
    """401, no body to draw, and HX-Redirect to the login page with `next` back here."""
    response = HttpResponse(status=401)
    response["HX-Redirect"] = f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': _came_from(request)})}"
    return response


def _lost_session(request) -> bool:
    user = getattr(request, "user", None)
    return bool(getattr(request, "htmx", False)) and not (user is not None and user.is_authenticated)


class HtmxLoginMiddleware:
    """Turns login_required's redirect of an htmx request into `login_again`."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        login = resolve_url(settings.LOGIN_URL)
        if (response.status_code == 302 and _lost_session(request)
                and urlsplit(response.get("Location", "")).path == login):
            return login_again(request)
        return response


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW: an htmx request with no session (cookies cleared) logs in again;
    anything else gets Django's 403 page."""
    if _lost_session(request):
        return login_again(request)
    return django_csrf_failure(request, reason)
