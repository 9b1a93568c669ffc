"""Token authentication with expiry (the rest of the token story: annotate/api/tokens.py).

Kept apart from the views because DRF imports the authentication classes named in
settings while it defines APIView: this module must not import rest_framework.views.

A token is valid for HUMEVAL_TOKEN_TTL_DAYS days from its creation (0 = forever). An
unknown, expired or rotated token is answered 401 with `WWW-Authenticate: Token`; a
request with no credentials at all keeps DRF's 403.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication, get_authorization_header

from annotate.prepared import Prepared, columns, instance

if TYPE_CHECKING:  # not at import time: DRF loads this module while apps may still be loading
    from rest_framework.authtoken.models import Token


def token_ttl() -> timedelta | None:
    """The lifetime of a token, or None when tokens do not expire."""
    days = getattr(settings, "HUMEVAL_TOKEN_TTL_DAYS", 30)
    return timedelta(days=days) if days else None


def expires_at(token: Token) -> datetime | None:
    ttl = token_ttl()
    return token.created + ttl if ttl else None


def _token_statement(key):
    from rest_framework.authtoken.models import Token

    return Token.objects.filter(key=key).values(*columns(Token), *columns(Token.user.field.related_model, "user__"))


TOKEN = Prepared(_token_statement)  # every API request reads its token: compiled once (issue 27)


class ExpiringTokenAuthentication(TokenAuthentication):
    """DRF's token authentication (the token and its user in one compiled statement),
    refusing tokens older than the TTL."""

    def authenticate_credentials(self, key):
        from rest_framework.authtoken.models import Token

        row = TOKEN.first(key=key) if isinstance(key, str) else None
        if row is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        token, user = instance(Token, row), instance(Token.user.field.related_model, row, "user__")
        if not user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        token.user = user
        end = expires_at(token)
        if end is not None and timezone.now() >= end:
            raise exceptions.AuthenticationFailed(
                f"Token expired at {end.isoformat()}; get a new one with POST /api/token/rotate/ "
                "(signed in) or ask an admin (manage.py drf_create_token -r USERNAME).")
        return user, token

    def authenticate_header(self, request):
        """401 + challenge only for requests that presented a token; none at all: 403."""
        auth = get_authorization_header(request).split()
        if auth and auth[0].lower() == self.keyword.lower().encode():
            return self.keyword
        return None
