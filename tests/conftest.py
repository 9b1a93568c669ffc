"""Shared fixtures: users in each role."""
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session", autouse=True)
def fast_password_hashing():
    """MD5 instead of PBKDF2 for every test user: the default costs ~1 s a password on a
    busy box. Session-scoped, so the live server of the browser tests uses it too."""
    from django.test.utils import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


def make_user(django_user_model, username, role=None, password="pw-" + "x" * 8, **extra):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username=username, password=password, **extra)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def admin_user_(django_user_model):
    return make_user(django_user_model, "alice-admin", "admins")


@pytest.fixture
def researcher(django_user_model):
    return make_user(django_user_model, "rita-researcher", "researchers")


@pytest.fixture
def annotators(django_user_model):
    return [make_user(django_user_model, f"ann{i}", "annotators") for i in range(1, 4)]
