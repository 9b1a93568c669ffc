"""Bounds on what one API client can make the server do: JSON nesting depth and request rates.

- JSON nested 50,000 deep made Python's decoder raise RecursionError: a 500 on every
  JSON endpoint. `BoundedJSONParser` (the default DRF parser) measures the nesting first
  and answers 400 with the reason; no humeval body needs more than a few levels.
- Throttles (HUMEVAL_THROTTLE_RATES, "N/second|minute|hour|day", None = off):
  `anon` counts every API request without a login by client address, `write` counts the
  POST/PUT/PATCH/DELETE requests of each logged-in user. Over the rate: 429 with
  Retry-After. Counters live in the Django cache (CACHES; per process unless
  HUMEVAL_CACHE_URL points at Redis). Client addresses come from humeval.proxy.
"""
import io

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle

from humeval.jsonl import json_nesting_error
from humeval.proxy import client_ip

MAX_JSON_DEPTH = 32


class BoundedJSONParser(JSONParser):
    """DRF's JSONParser (NaN and Infinity refused) after a nesting-depth check."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read()
        try:
            text = raw.decode((parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        reason = json_nesting_error(text, MAX_JSON_DEPTH)
        if reason:
            raise ParseError(f"JSON parse error - {reason}")
        try:
            return super().parse(io.BytesIO(raw), media_type, parser_context)
        except RecursionError:  # belt and braces: the check above should make this unreachable
            raise ParseError(f"JSON parse error - JSON nested more than {MAX_JSON_DEPTH} levels deep") from None


def _rate(scope: str) -> str | None:
    """Read at request time (not import time, as DRF does) so settings overrides apply."""
    return settings.HUMEVAL_THROTTLE_RATES.get(scope)


class AnonymousThrottle(AnonRateThrottle):
    scope = "anon"

    def get_rate(self):
        return _rate(self.scope)

    def get_ident(self, request):
        return client_ip(request)


class WriteThrottle(SimpleRateThrottle):
    """Writes of one logged-in user; reads and anonymous requests pass (see AnonymousThrottle)."""

    scope = "write"

    def get_rate(self):
        return _rate(self.scope)

    def get_cache_key(self, request, view):
        if request.method in ("GET", "HEAD", "OPTIONS") or not request.user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}

