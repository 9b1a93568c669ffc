"""API token rotation: `POST /api/token/rotate/` gives the caller (signed in, or with a
still valid token) a new token, and the old key stops working at once. Admins can do
the same for anyone with `manage.py drf_create_token -r USERNAME`. Expiry is checked in
annotate/api/authentication.py.
"""
from django.contrib.auth import get_user_model
from django.db import transaction
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.authentication import ExpiringTokenAuthentication, expires_at
from annotate.api.serializers import DetailSerializer, TokenSerializer


class ExpiringTokenScheme(OpenApiAuthenticationExtension):
    target_class = ExpiringTokenAuthentication
    name = "tokenAuth"
    priority = 1  # over drf-spectacular's own scheme for TokenAuthentication subclasses

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Token <key>`; expires HUMEVAL_TOKEN_TTL_DAYS days after it was issued "
                               "(new one: POST /api/token/rotate/)."}


def rotate_token(user) -> Token:
    """Replace `user`'s token with a new one. The user row is locked, so two rotations
    at once end with one token, never an error."""
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)


class RotateTokenView(APIView):
    @extend_schema(request=None,
                   responses={200: TokenSerializer,
                              401: OpenApiResponse(DetailSerializer, description="Unknown, expired or rotated token."),
                              403: OpenApiResponse(DetailSerializer, description="Not signed in.")},
                   summary="Issue a new API token for yourself; your previous token stops working.")
    def post(self, request):
        token = rotate_token(request.user)
        return Response(TokenSerializer({"token": token.key, "expires_at": expires_at(token)}).data)
