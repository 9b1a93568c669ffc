"""API tokens expire after HUMEVAL_TOKEN_TTL_DAYS and can be rotated (issue 14 item 16)."""
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def plain_http(settings):
    settings.SECURE_SSL_REDIRECT = False


def with_token(key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def age(token, days):
    Token.objects.filter(pk=token.pk).update(created=timezone.now() - timedelta(days=days))


def test_expired_token_gets_401(django_user_model, settings):
    settings.HUMEVAL_TOKEN_TTL_DAYS = 30
    token = Token.objects.create(user=make_user("ann-tok", "annotators"))
    age(token, 29)
    assert with_token(token.key).get("/api/studies/").status_code == 200
    age(token, 30)
    response = with_token(token.key).get("/api/studies/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json()["detail"].startswith("Token expired at ")
    assert "POST /api/token/rotate/" in response.json()["detail"]
    settings.HUMEVAL_TOKEN_TTL_DAYS = 0  # 0: tokens never expire
    assert with_token(token.key).get("/api/studies/").status_code == 200


def test_unknown_token_401_and_no_credentials_403(django_user_model):
    response = with_token("0" * 40).get("/api/studies/")
    assert (response.status_code, response["WWW-Authenticate"]) == (401, "Token")
    assert APIClient().get("/api/studies/").status_code == 403  # unchanged for anonymous calls


def test_rotation_replaces_the_token(django_user_model, settings):
    settings.HUMEVAL_TOKEN_TTL_DAYS = 30
    user = make_user("res-tok", "researchers")
    old = Token.objects.create(user=user)
    response = with_token(old.key).post("/api/token/rotate/")
    assert response.status_code == 200
    body = response.json()
    new = Token.objects.get(user=user)
    assert body["token"] == new.key != old.key
    assert body["expires_at"] == (new.created + timedelta(days=30)).isoformat()
    assert with_token(old.key).get("/api/studies/").status_code == 401
    assert with_token(new.key).get("/api/studies/").status_code == 200
    assert Token.objects.filter(user=user).count() == 1


def test_rotation_from_a_signed_in_session_issues_a_first_token(django_user_model):
    from django.test import Client

    user = make_user("ann-session", "annotators")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post("/api/token/rotate/").status_code == 403  # a session write needs the CSRF token
    client.get("/login/")  # sets the csrftoken cookie
    response = client.post("/api/token/rotate/", HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value)
    assert response.status_code == 200 and response.json()["token"] == Token.objects.get(user=user).key


def test_admin_rotates_with_drf_create_token(django_user_model, capsys):
    user = make_user("ann-cli", "annotators")
    old = Token.objects.create(user=user)
    call_command("drf_create_token", "-r", "ann-cli")
    new = Token.objects.get(user=user)
    assert new.key != old.key and new.key in capsys.readouterr().out
    assert with_token(old.key).get("/api/studies/").status_code == 401
    assert with_token(new.key).get("/api/studies/").status_code == 200
