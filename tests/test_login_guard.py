"""Password guessing (issue 14, items 8 and 9): overlong usernames, the lock per username
and per client address, Django's password validators. Each test sends the attack and
checks the answer and the rows left behind."""
import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.test import Client

from tests.factories import make_user

pytestmark = pytest.mark.django_db
PASSWORD = "pw-" + "x" * 8


@pytest.fixture(autouse=True)
def plain_http(settings):
    settings.SECURE_SSL_REDIRECT = False


def login(username, password="wrong-password", address="198.51.100.1", path="/login/"):
    return Client(REMOTE_ADDR=address).post(path, {"username": username, "password": password})


# --- item 8: a username over 255 characters ---------------------------------------------

@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_overlong_username_gets_the_form_back_with_a_clear_error(path):
    """Before: django-axes inserted the name into varchar(255): DataError, a 500."""
    users_before = get_user_model().objects.count()
    response = login("u" * 300, path=path)
    assert response.status_code == 200
    assert "A username has at most 150 characters; this one has 300." in response.content.decode()
    assert get_user_model().objects.count() == users_before
    assert AccessAttempt.objects.count() == 0  # refused before any password check


def test_any_authenticate_call_with_an_overlong_username_is_recorded_truncated(rf):
    """Defence in depth for doors other than the two forms: axes stores at most 255 characters."""
    from django.contrib.auth import authenticate

    request = rf.post("/elsewhere/", {"username": "v" * 400, "password": "x"})
    request.META["REMOTE_ADDR"] = "198.51.100.2"
    assert authenticate(request, username="v" * 400, password="x") is None
    assert list(AccessAttempt.objects.values_list("username", flat=True)) == ["v" * 255]


# --- item 9: lock by username and by address separately -----------------------------------

def test_one_guess_per_user_from_one_address_is_stopped_by_the_address_lock(django_user_model, settings):
    """Before: the lock counted (username, address) pairs, so one guess per user was never
    blocked. Now 30 failures from one address lock it (HUMEVAL_IP_FAILURE_LIMIT), whatever
    the usernames; the real user can still log in from elsewhere."""
    assert settings.HUMEVAL_IP_FAILURE_LIMIT == 30 and settings.AXES_FAILURE_LIMIT == 5
    make_user("real-user", "annotators", password=PASSWORD)
    statuses = [login(f"guess-{n}", address="203.0.113.50").status_code for n in range(30)]
    assert statuses[:29] == [200] * 29
    assert statuses[29] in (200, 429)
    assert login("guess-30", address="203.0.113.50").status_code == 429
    locked = login("real-user", PASSWORD, address="203.0.113.50")
    assert locked.status_code == 429
    assert login("real-user", PASSWORD, address="203.0.113.51").status_code == 302


def test_logging_into_ones_own_account_does_not_reset_the_address_lock(django_user_model):
    """axes' reset on success would clear the address's failures too; ours clears only the
    username's, so an attacker with an account cannot interleave own logins to keep guessing."""
    make_user("attacker", "annotators", password=PASSWORD)
    for n in range(29):
        assert login(f"target-{n}", address="203.0.113.60").status_code == 200
    assert login("attacker", PASSWORD, address="203.0.113.60").status_code == 302
    assert login("target-29", address="203.0.113.60").status_code in (200, 429)
    assert login("target-30", address="203.0.113.60").status_code == 429


def test_guesses_at_one_user_from_many_addresses_lock_that_username(django_user_model):
    """5 failures for one username, each from another address: the username is locked
    (429 even with the right password, from a new address); other users are not."""
    make_user("victim", "annotators", password=PASSWORD)
    make_user("bystander", "annotators", password=PASSWORD)
    statuses = [login("victim", address=f"192.0.2.{n}").status_code for n in range(1, 6)]
    assert statuses[:4] == [200, 200, 200, 200] and statuses[4] in (200, 429)
    client = Client(REMOTE_ADDR="192.0.2.99")
    locked = client.post("/login/", {"username": "victim", "password": PASSWORD})
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session
    assert login("bystander", PASSWORD, address="192.0.2.1").status_code == 302


def test_a_forged_forwarded_for_does_not_dodge_the_address_lock():
    """No trusted proxy: X-Forwarded-For is dropped, so rotating it changes nothing."""
    for n in range(30):
        Client(REMOTE_ADDR="203.0.113.70").post("/login/", {"username": f"g{n}", "password": "x"},
                                                HTTP_X_FORWARDED_FOR=f"10.1.{n}.1")
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.70"}
    response = Client(REMOTE_ADDR="203.0.113.70").post("/login/", {"username": "g99", "password": "x"},
                                                       HTTP_X_FORWARDED_FOR="10.9.9.9")
    assert response.status_code == 429


# --- item 9: password validators ------------------------------------------------------------

@pytest.mark.parametrize("password,messages", [
    ("password", ["This password is too short. It must contain at least 10 characters.",
                  "This password is too common."]),
    ("12345678", ["This password is too short. It must contain at least 10 characters.",
                  "This password is too common.", "This password is entirely numeric."]),
    ("1234567890", ["This password is too common.", "This password is entirely numeric."]),
])
def test_weak_passwords_are_refused(password, messages):
    with pytest.raises(ValidationError) as refused:
        validate_password(password)
    assert refused.value.messages == messages
    validate_password("a-long-unusual-pass-phrase")  # a good one passes


@pytest.mark.parametrize("password", ["password", "12345678"])
def test_the_admin_cannot_create_a_user_with_a_weak_password(password, django_user_model):
    boss = make_user("boss", role=None, is_staff=True, is_superuser=True, password=PASSWORD)
    client = Client()
    client.force_login(boss)
    before = django_user_model.objects.count()
    response = client.post("/admin/auth/user/add/", {"username": "newbie", "password1": password,
                                                      "password2": password, "usable_password": "true"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "This password is too common." in body
    assert django_user_model.objects.count() == before
