"""Issue 14 item 17 (server side): an htmx request that lost its session gets 401 with
HX-Redirect to the login page (next = the page it came from), never a login page to draw
inside the item card; nothing is stored."""
import pytest
from django.test import Client

from annotate.desk.assignment import next_assignment
from annotate.models import Assignment, Judgment
from evaluation.report.kinds import PAIRWISE_ALIGNMENT
from tests.factories import make_items, make_study, make_user, tokens

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("plain_http")]
PAGE = "http://testserver/annotate/pairwise-alignment/"
LOGIN_AGAIN = "/login/?next=%2Fannotate%2Fpairwise-alignment%2F"


def open_item():
    study = make_study(PAIRWISE_ALIGNMENT, overlap=1)
    make_items(study, 1)
    user = make_user("ann-lost")
    assignment = next_assignment(study, user)
    return study, user, assignment, {f"q:{k}": v for k, v in tokens(assignment.pk, {"choice": "m1"}).items()}


def test_logged_out_htmx_submit_gets_401_and_hx_redirect():
    study, user, assignment, fields = open_item()
    client = Client()  # no session: logged out in another tab, or expired
    response = client.post(f"/annotate/{study.slug}/items/{assignment.pk}/submit/", {**fields, "seconds": "3"},
                           HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=PAGE)
    assert (response.status_code, response["HX-Redirect"], response.content) == (401, LOGIN_AGAIN, b"")
    assert Judgment.objects.count() == 0 and Assignment.objects.get().completed_at is None


def test_cleared_cookies_htmx_submit_gets_401_not_the_csrf_page():
    study, user, assignment, fields = open_item()
    client = Client(enforce_csrf_checks=True)  # no session and no CSRF cookie
    response = client.post(f"/annotate/{study.slug}/items/{assignment.pk}/submit/", {**fields, "seconds": "3"},
                           HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=PAGE)
    assert (response.status_code, response["HX-Redirect"], response.content) == (401, LOGIN_AGAIN, b"")
    assert Judgment.objects.count() == 0


def test_foreign_current_url_is_not_a_next_and_plain_requests_keep_the_login_redirect():
    study, user, assignment, fields = open_item()
    client = Client()
    response = client.post(f"/annotate/{study.slug}/next/", HTTP_HX_REQUEST="true",
                           HTTP_HX_CURRENT_URL="https://evil.example/phish")
    assert (response.status_code, response["HX-Redirect"]) == (401, "/login/?next=%2F")
    plain = client.get(f"/annotate/{study.slug}/")
    assert (plain.status_code, plain["Location"]) == (302, f"/login/?next=/annotate/{study.slug}/")
    assert "HX-Redirect" not in plain
    assert Assignment.objects.count() == 1  # only the one made above


def test_signed_in_csrf_failure_is_still_a_403():
    study, user, assignment, fields = open_item()
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post(f"/annotate/{study.slug}/items/{assignment.pk}/submit/", fields, HTTP_HX_REQUEST="true")
    assert response.status_code == 403 and "HX-Redirect" not in response
    assert Judgment.objects.count() == 0
