"""The report cache (annotate/reports/cache.py, docs/reports.md "Cache"): the data version,
staleness on new judgments / predictions / items and on edits, parameters in the key, the
version endpoint, the dashboard's polling badge and the Celery refresh task (eager)."""
import hashlib
import json
from datetime import timedelta

import pytest
from django.db.models import Max
from django.test import Client
from django.utils import timezone

from annotate.desk.submission import edit
from annotate.models import Assignment, Item, Judgment, Prediction, ReportCache
from annotate.reports import cache as report_cache
from annotate.reports.data import fetch_report_input
from annotate.tasks import refresh_report_task
from evaluation.report import build_report
from tests.factories import add_items, add_judgments, add_predictions, api_client, make_user, two
from tests.test_report_pairwise import pairwise_study

pytestmark = pytest.mark.django_db
PARAMS = {"min_votes": 2}
KEY = '{"min_votes":2}'
READ = ("report", "fragment")


@pytest.fixture(autouse=True)
def plain_http(settings):
    settings.SECURE_SSL_REDIRECT = False  # the test client speaks http


@pytest.fixture
def study():
    return pairwise_study()


@pytest.fixture
def researcher():
    return make_user("res", role="researchers")


def expected_version(study, revision=0):
    """The version string worked out from the rows with the ORM (not the cache's SQL)."""
    parts = []
    for letter, model in (("j", Judgment), ("p", Prediction), ("i", Item)):
        rows = model.objects.filter(study=study)
        parts.append(f"{letter}{rows.count()}.{rows.aggregate(m=Max('id'))['m'] or 0}")
    study.refresh_from_db()
    digest = hashlib.sha256(json.dumps([study.slug, study.kind, study.config, study.annotations_per_item],
                                       sort_keys=True).encode()).hexdigest()[:10]
    return "-".join(parts) + f"-r{revision}-s{digest}"


def test_version_counts_rows_and_changes_with_each_kind_of_row(study):
    first = report_cache.data_version(study)
    assert first == expected_version(study)
    assert first.startswith("j13.") and "-p19." in first and "-i5." in first and "-r0-" in first
    add_judgments(study, [("i3", "ann3", "choice", "x", "x|y", 5)])
    second = report_cache.data_version(study)
    assert second == expected_version(study) and second.startswith("j14.") and second != first
    add_predictions(study, [("i3", "gemba", "", "choice", "x")])
    third = report_cache.data_version(study)
    assert third == expected_version(study) and "-p20." in third and third != second
    add_items(study, [("i5", {"input": "r", "reference": "ref", "candidates": two()}, None)])
    fourth = report_cache.data_version(study)
    assert fourth == expected_version(study) and "-i6." in fourth and fourth != third
    report_cache.touch(study.pk)
    assert report_cache.data_version(study) == expected_version(study, revision=1)


def test_cached_report_is_the_built_report_and_goes_stale_on_a_new_judgment(study):
    state = report_cache.current_report(study, PARAMS, READ)  # eager: built here
    assert state.fresh and state.built == expected_version(study)
    built = build_report(fetch_report_input(study))
    assert json.dumps(state.report) == json.dumps(built)  # same values, same key order
    assert state.report["n_judgments"] == 13
    add_judgments(study, [("i3", "ann3", "choice", "x", "x|y", 5)])
    stale = report_cache.report_state(study, PARAMS, READ)
    assert not stale.fresh and stale.report["n_judgments"] == 13 and stale.current == expected_version(study)
    again = report_cache.current_report(study, PARAMS, READ)
    assert again.fresh and again.report["n_judgments"] == 14
    assert ReportCache.objects.get(study=study, params=KEY).building_since is None


def test_new_prediction_and_item_make_the_report_stale(study):
    report_cache.current_report(study, PARAMS, READ)
    add_predictions(study, [("i3", "gemba", "", "choice", "x")])
    assert not report_cache.report_state(study, PARAMS, READ).fresh
    assert report_cache.current_report(study, PARAMS, READ).report["alignment"] == \
        build_report(fetch_report_input(study))["alignment"]
    add_items(study, [("i5", {"input": "r", "reference": "ref", "candidates": two()}, None)])
    assert not report_cache.report_state(study, PARAMS, READ).fresh
    assert report_cache.current_report(study, PARAMS, READ).report["n_items"] == 6


def test_an_edited_judgment_makes_the_report_stale(study):
    """Edits change no count: the database trigger on judgment updates bumps the study's
    report_revision (migration 0010)."""
    report_cache.current_report(study, PARAMS, READ)
    assignment = Assignment.objects.get(study=study, item__item_id="i3", annotator__username="ann1")
    edit(assignment.pk, assignment.annotator, {"choice": "y"})  # i3 is not complete: editable
    state = report_cache.report_state(study, PARAMS, READ)
    assert not state.fresh and state.current.split("-")[3] == "r1"
    refreshed = report_cache.current_report(study, PARAMS, READ).report
    assert refreshed == build_report(fetch_report_input(study))
    assert (state.report["majority"]["i3"], refreshed["majority"]["i3"]) == (None, "y")  # 1-1 split -> y, y


def test_parameters_are_part_of_the_key(study):
    two_votes = report_cache.current_report(study, report_cache.report_params(study), READ)
    three_votes = report_cache.current_report(study, report_cache.report_params(study, min_votes=3), READ)
    assert sorted(ReportCache.objects.filter(study=study).values_list("params", flat=True)) == \
        ['{"min_votes":2}', '{"min_votes":3}']
    assert two_votes.report == build_report(fetch_report_input(study, 2))
    assert three_votes.report == build_report(fetch_report_input(study, 3))
    assert two_votes.report != three_votes.report  # i3's 1-1 split and 3-vote majorities differ


def test_version_endpoint_answers_exact_json_and_builds_nothing(study, researcher):
    client = api_client(researcher)
    version = expected_version(study)
    assert client.get("/api/studies/pw/report/version/").json() == {
        "study": "pw", "params": PARAMS, "version": version, "built_version": None, "fresh": False,
        "updating": False}
    assert not ReportCache.objects.exists()
    client.get("/api/studies/pw/report/")  # the JSON report fills the cache
    assert client.get("/api/studies/pw/report/version/").json() == {
        "study": "pw", "params": PARAMS, "version": version, "built_version": version, "fresh": True,
        "updating": False}


def test_json_report_from_the_api_follows_new_judgments(study, researcher):
    client = api_client(researcher)
    assert client.get("/api/studies/pw/report/").json()["n_judgments"] == 13
    add_judgments(study, [("i3", "ann3", "choice", "x", "x|y", 5)])
    assert client.get("/api/studies/pw/report/").json()["n_judgments"] == 14


def test_dashboard_carries_the_polling_badge_and_reloads_on_change(study, researcher):
    client = Client()
    client.force_login(researcher)
    page = client.get("/studies/pw/").content.decode()
    version = expected_version(study)
    assert (f'hx-get="/studies/pw/report-version/?shown={version}"\n      hx-trigger="every 4s" '
            f'hx-swap="outerHTML">') in page
    assert 'hx-get="/studies/pw/report-panel/" hx-trigger="report-changed from:body"' in page
    assert "Agreement" in page or "agreement" in page
    same = client.get(f"/studies/pw/report-version/?shown={version}")
    assert same.status_code == 200 and "HX-Trigger" not in same and "updating" not in same.content.decode()
    add_judgments(study, [("i3", "ann3", "choice", "x", "x|y", 5)])
    changed = client.get(f"/studies/pw/report-version/?shown={version}")  # eager: refreshed in the poll
    new_version = expected_version(study)
    assert changed["HX-Trigger"] == "report-changed"
    assert f"shown={new_version}" in changed.content.decode()
    assert ReportCache.objects.get(study=study).version == new_version


def test_stale_badge_says_updating_while_a_refresh_is_in_flight(study, researcher):
    report_cache.current_report(study, PARAMS, READ)
    add_judgments(study, [("i3", "ann3", "choice", "x", "x|y", 5)])
    ReportCache.objects.filter(study=study).update(building_since=timezone.now())  # a worker is on it
    client = Client()
    client.force_login(researcher)
    badge = client.get("/studies/pw/report-version/?shown=").content.decode()
    assert "updating…" in badge
    assert report_cache.request_refresh(study, PARAMS) is False  # one refresh in flight at most
    ReportCache.objects.filter(study=study).update(building_since=timezone.now() - timedelta(minutes=11))
    assert report_cache.request_refresh(study, PARAMS) is True  # a lost refresh is retried
    assert report_cache.report_state(study, PARAMS, READ).fresh


def test_refresh_task_runs_eagerly_and_stores_the_current_version(study, settings):
    assert settings.CELERY_TASK_ALWAYS_EAGER and not report_cache.uses_broker()
    result = refresh_report_task.delay(study.pk, KEY)
    version = expected_version(study)
    assert result.get() == version
    row = ReportCache.objects.get(study=study, params=KEY)
    assert (row.version, row.building_since) == (version, None)
    assert json.loads(row.report_json)["n_judgments"] == 13 and "<svg" in row.fragment
    assert refresh_report_task.delay(study.pk, KEY).get() == version  # current: nothing rebuilt
    assert ReportCache.objects.get(pk=row.pk).built_at == row.built_at


def test_with_a_broker_the_refresh_is_queued_once_and_the_page_shows_the_stale_report(
        study, researcher, settings, monkeypatch, django_capture_on_commit_callbacks):
    report_cache.current_report(study, PARAMS)  # eager: the first build
    settings.CELERY_BROKER_URL, settings.CELERY_TASK_ALWAYS_EAGER = "redis://127.0.0.1:1/0", False
    settings.HUMEVAL_REPORT_QUEUE = "reports"
    sent = []
    monkeypatch.setattr(refresh_report_task, "apply_async", lambda args, queue: sent.append((args, queue)))
    add_judgments(study, [("i3", "ann3", "choice", "x", "x|y", 5)])
    client = Client()
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        page = client.get("/studies/pw/").content.decode()
    assert sent == [((study.pk, KEY), "reports")]
    assert "updating…" in page and '<td>Judgments</td><td class="num">13</td>' in page  # the stale report
    with django_capture_on_commit_callbacks(execute=True):
        client.get("/studies/pw/report-version/?shown=")
    assert len(sent) == 1  # in flight: not queued again
    report_cache.refresh(study.pk, KEY)  # what the worker runs
    badge = client.get(f"/studies/pw/report-version/?shown={report_cache.report_state(study, PARAMS).built}")
    assert "updating" not in badge.content.decode()
    assert '<td>Judgments</td><td class="num">14</td>' in client.get("/studies/pw/report-panel/").content.decode()


def test_refresh_of_a_deleted_study_does_nothing(study):
    pk = study.pk
    study.delete()
    assert refresh_report_task.delay(pk, KEY).get() == ""
    assert not ReportCache.objects.exists()
