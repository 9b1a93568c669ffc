"""Password guessing: the login forms and the django-axes lockout.

- The forms refuse a username longer than the User model allows before anything is
  looked up: Django's AuthenticationForm sets `max_length` after building the field, so it
  never validates it, and a 300-character name reached django-axes, whose varchar(255)
  insert failed with a 500.
- django-axes locks by username and by client address separately (AXES_LOCKOUT_PARAMETERS):
  one guess per user from one address, across many users, is stopped by the address
  lock; guesses at one user from many addresses by the username lock. The address lock
  has its own, higher limit (HUMEVAL_IP_FAILURE_LIMIT), because a class of annotators
  often shares one address (NAT) and their honest typos add up.
"""
from axes.handlers.database import AxesDatabaseHandler
from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Sum
from django.http import HttpRequest

AXES_USERNAME_LENGTH = 255  # axes' AccessAttempt.username column


class BoundedUsernameMixin:
    cleaned_data: dict  # a form's, which this mixin joins
    fields: dict

    def clean_username(self) -> str:
        username = self.cleaned_data["username"]
        limit = self.fields["username"].max_length
        if len(username) > limit:
            raise forms.ValidationError(
                "A username has at most %(limit)d characters; this one has %(length)d.",
                code="max_length", params={"limit": limit, "length": len(username)})
        return username


class LoginForm(BoundedUsernameMixin, AuthenticationForm):
    """/login/."""


class AdminLoginForm(BoundedUsernameMixin, AdminAuthenticationForm):
    """/admin/login/ (admin.site.login_form)."""


def axes_username(request: HttpRequest, credentials: dict | None = None) -> str | None:
    """The username axes records (AXES_USERNAME_CALLABLE), cut to its column: every door
    that calls authenticate() (forms, admin, API, a future one) stays free of 500s."""
    field = settings.AXES_USERNAME_FORM_FIELD
    username = (credentials or getattr(request, "data", request.POST)).get(field)
    return username[:AXES_USERNAME_LENGTH] if isinstance(username, str) else username


class SeparateLimitsHandler(AxesDatabaseHandler):
    """Axes compares max(failures of the username, failures of the address) with one
    limit (AXES_FAILURE_LIMIT). Scale the address's count so that it reaches that limit
    exactly at HUMEVAL_IP_FAILURE_LIMIT failures: floor(n * user_limit / ip_limit) >=
    user_limit  <=>  n >= ip_limit."""

    def get_failures(self, request, credentials=None) -> int:
        by_username, by_address = (
            attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
            for attempts in self.get_user_attempts(request, credentials))
        user_limit, ip_limit = settings.AXES_FAILURE_LIMIT, settings.HUMEVAL_IP_FAILURE_LIMIT
        return max(by_username, by_address * user_limit // ip_limit)

    def reset_user_attempts(self, request, credentials=None) -> int:
        """On a successful login (AXES_RESET_ON_SUCCESS) forget that username's failures
        only: axes would also clear the address's, so logging into one's own account
        between guesses would reset the address lock."""
        username_attempts = self.filter_user_attempts(request, credentials)[0]
        count, _ = username_attempts.delete()
        return count
