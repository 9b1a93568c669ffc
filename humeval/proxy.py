"""Which forwarded headers to believe: only those set by a reverse proxy we were told about.

Any client can send `X-Forwarded-Proto: https` or `X-Forwarded-For: 1.2.3.4`. Believed
blindly, the first makes a plain-HTTP request look secure (secure cookies, no redirect)
and the second lets one attacker look like many addresses (dodging the per-IP login
lock and API throttles). So both are dropped unless the connection comes from an address
in HUMEVAL_TRUSTED_PROXY (IPs or networks, comma-separated; `*` = any peer, for a server
reachable only through its proxy).
"""
import ipaddress
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

FORWARDED_HEADERS = ("HTTP_X_FORWARDED_PROTO", "HTTP_X_FORWARDED_FOR", "HTTP_X_FORWARDED_HOST",
                     "HTTP_X_FORWARDED_PORT", "HTTP_FORWARDED")


def parse_proxies(value: str) -> list:
    """'10.0.0.1, 10.1.0.0/16' -> networks; '*' -> ['*']; '' -> [] (trust no one).
    A malformed entry raises ValueError at startup rather than silently trusting nothing."""
    entries = [part.strip() for part in value.split(",") if part.strip()]
    if entries == ["*"]:
        return ["*"]
    return [ipaddress.ip_network(entry, strict=False) for entry in entries]


def is_trusted_proxy(address: str | None) -> bool:
    proxies = settings.HUMEVAL_TRUSTED_PROXIES
    if not proxies or not address:
        return False
    if proxies == ["*"]:
        return True
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: REMOTE_ADDR, or behind a trusted proxy the last address it
    appended to X-Forwarded-For (earlier entries were written by the client: not believed).
    Used by the login lock (AXES_CLIENT_IP_CALLABLE) and the API throttles."""
    remote = request.META.get("REMOTE_ADDR")
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if forwarded and is_trusted_proxy(remote):
        last = forwarded.split(",")[-1].strip()
        try:
            return str(ipaddress.ip_address(last))
        except ValueError:  # not an address: a misconfigured proxy; fall back to the peer
            pass
    return remote


class TrustedProxyMiddleware:
    """First in MIDDLEWARE: strips the forwarded headers of requests that did not come
    through a trusted proxy, before SecurityMiddleware reads X-Forwarded-Proto."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not is_trusted_proxy(request.META.get("REMOTE_ADDR")):
            for header in FORWARDED_HEADERS:
                request.META.pop(header, None)
        return self.get_response(request)
