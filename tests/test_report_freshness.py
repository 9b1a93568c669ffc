"""Never a stale report (issue 24): every write path gives a new report version, and the
CSV and HTML reports are cached with the JSON under that version (issue 25).

The version (annotate/reports/cache.py) counts rows and reads `Study.report_revision`,
which database triggers (migration 0010) bump on every update or delete of a judgment,
prediction or item, whatever wrote it. These tests run on PostgreSQL and on the SQLite
lane (two trigger implementations). Without a broker the refresh runs in the request, so
both the JSON API and the dashboard's report section change immediately; with one, the
dashboard shows the stale report ("updating") until the worker's refresh: one refresh
cycle (test_with_a_broker_a_shell_update_shows_after_one_refresh).
"""

import io

import pytest
from django.contrib.auth import get_user_model
from django.db.models import F
from django.test import Client

from annotate.models import Item, Judgment, Prediction, ReportCache
from annotate.reports import cache as report_cache
from annotate.reports.data import fetch_report_input
from annotate.tasks import refresh_report_task
from evaluation.report import build_report, render
from evaluation.report.html import html_page
from tests.factories import api_client, make_user, two
from tests.test_report_pairwise import pairwise_study

pytestmark = pytest.mark.django_db
NO_MAJORITY = "<td>Items without a majority (top count shared)</td><td class=\"num\">{}</td>"


@pytest.fixture(autouse=True)
def plain_http(settings):
    settings.SECURE_SSL_REDIRECT = False  # the test client speaks http


@pytest.fixture
def study():
    return pairwise_study()  # i3: ann1 x, ann2 y -> no majority


@pytest.fixture
def researcher():
    return make_user("res", role="researchers")


def revision(study):
    study.refresh_from_db()
    return study.report_revision


def i3_of(who):
    return Judgment.objects.get(item__item_id="i3", annotator__username=who)


def test_admin_edit_changes_the_next_api_report_and_the_dashboard_at_once(study, researcher):
    """A judgment saved through /admin/ (the Django test client, as a superuser): the next
    JSON report and the dashboard's report section show it without waiting for a refresh."""
    api, page = api_client(researcher), Client()
    page.force_login(researcher)
    assert api.get("/api/studies/pw/report/").json()["majority"]["i3"] is None
    assert NO_MAJORITY.format(1) in page.get("/studies/pw/report-panel/").content.decode()
    admin = make_user("boss", role=None, is_superuser=True, is_staff=True)
    browser = Client()
    browser.force_login(admin)
    judgment = i3_of("ann1")
    form = {"study": judgment.study_id, "item": judgment.item_id, "assignment": judgment.assignment_id or "",
            "annotator": judgment.annotator_id, "question": "choice", "value": "y",
            "shown_order": judgment.shown_order, "seconds": judgment.seconds or "",
            "submitted_at_0": "", "submitted_at_1": "", "comment": "", "_save": "Save"}
    answer = browser.post(f"/admin/annotate/judgment/{judgment.pk}/change/", form)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    assert i3_of("ann1").value == "y"
    assert api.get("/api/studies/pw/report/").json()["majority"]["i3"] == "y"
    assert NO_MAJORITY.format(0) in page.get("/studies/pw/report-panel/").content.decode()


def test_shell_queryset_update_is_seen_at_once(study, researcher):
    """`Judgment.objects.filter(...).update(...)` in a shell sends no signal; the trigger
    bumps the revision in the same statement, so the next read rebuilds."""
    api = api_client(researcher)
    assert api.get("/api/studies/pw/report/").json()["majority"]["i3"] is None
    before = revision(study)
    Judgment.objects.filter(item__item_id="i3", annotator__username="ann2").update(value="x")
    assert revision(study) == before + 1
    assert api.get("/api/studies/pw/report/").json()["majority"]["i3"] == "x"
    assert report_cache.current_report(study, report_cache.report_params(study)).fresh


def test_with_a_broker_a_shell_update_shows_after_one_refresh(study, researcher, settings, monkeypatch,
                                                               django_capture_on_commit_callbacks):
    """With workers the dashboard keeps the stale report ("updating") and queues one refresh;
    once the worker ran it, the next poll reloads the section with the new numbers."""
    client = Client()
    client.force_login(researcher)
    assert NO_MAJORITY.format(1) in client.get("/studies/pw/report-panel/").content.decode()  # eager build
    settings.CELERY_BROKER_URL, settings.CELERY_TASK_ALWAYS_EAGER = "redis://127.0.0.1:1/0", False
    sent = []
    monkeypatch.setattr(refresh_report_task, "apply_async", lambda args, queue: sent.append(args))
    Judgment.objects.filter(item__item_id="i3", annotator__username="ann2").update(value="x")
    with django_capture_on_commit_callbacks(execute=True):
        stale = client.get("/studies/pw/").content.decode()
    assert NO_MAJORITY.format(1) in stale and "updating…" in stale and len(sent) == 1
    report_cache.refresh(*sent[0])  # the worker
    assert NO_MAJORITY.format(0) in client.get("/studies/pw/report-panel/").content.decode()


def test_every_write_path_bumps_the_revision_and_counters_do_not(study):
    """Updates and deletes of judgments, predictions and items (any column but the
    assignment engine's counters), and renaming an annotator, each bump the revision once
    per statement; a bulk update of many rows bumps once (PostgreSQL) or once per row
    (SQLite); a counter update, as each hand-out makes, bumps nothing."""
    rev = revision(study)
    Item.objects.filter(study=study).update(n_assigned=F("n_assigned") + 1, n_completed=F("n_completed") + 1)
    assert revision(study) == rev
    Item.objects.filter(study=study, item_id="i1").update(data={"input": "new", "candidates": two()})
    assert revision(study) > rev
    for write in (lambda: Prediction.objects.filter(study=study, evaluator="bleu").update(value="3"),
                  lambda: Prediction.objects.filter(study=study, evaluator="gemba").delete(),
                  lambda: Judgment.objects.filter(study=study, item__item_id="g1").delete(),
                  lambda: Item.objects.filter(study=study, item_id="i2").update(is_gold=True),
                  lambda: get_user_model().objects.filter(username="ann3").update(username="ann3-renamed")):
        rev = revision(study)
        write()
        assert revision(study) > rev
    rev = revision(study)
    get_user_model().objects.filter(username="ann1").update(last_login=None)  # a login: no report change
    assert revision(study) == rev


def test_admin_shows_the_item_counters_read_only(study):
    admin = make_user("boss", role=None, is_superuser=True, is_staff=True)
    client = Client()
    client.force_login(admin)
    item = Item.objects.get(study=study, item_id="i1")
    page = client.get(f"/admin/annotate/item/{item.pk}/change/").content.decode()
    assert 'name="n_completed"' not in page and 'name="n_assigned"' not in page and 'name="data"' in page


def test_csv_and_html_reports_are_cached_with_the_json(study, researcher, monkeypatch):
    """The first CSV builds and stores it beside the JSON; later CSV and HTML downloads of
    the same version read the cache (no report is built); a change makes both follow."""
    api = api_client(researcher)
    builds = []
    real = report_cache.fetch_report_input
    monkeypatch.setattr(report_cache, "fetch_report_input", lambda *a, **k: builds.append(1) or real(*a, **k))
    csv1 = api.get("/api/studies/pw/report/?format=csv").content.decode()
    inp = fetch_report_input(study)
    assert csv1 == render(build_report(inp), inp, "csv") and len(builds) == 1
    row = ReportCache.objects.get(study=study)
    assert row.csv == csv1 and row.version == report_cache.data_version(study)
    html = api.get("/api/studies/pw/report/?format=html").content.decode()
    assert html == html_page("pw", "pairwise_alignment", row.fragment)  # the cached fragment in its page
    assert html.startswith("<!doctype html>") and "<title>Report: pw (pairwise_alignment)</title>" in html
    assert api.get("/api/studies/pw/report/?format=csv").content.decode() == csv1
    api.get("/api/studies/pw/report/")
    assert len(builds) == 1  # JSON, HTML and the second CSV came from the cache
    Judgment.objects.filter(item__item_id="i3", annotator__username="ann2").update(value="x")
    csv2 = api.get("/api/studies/pw/report/?format=csv").content.decode()
    assert "i3,choice,0,2,x,2,0" in csv2 and csv2 != csv1 and len(builds) == 2
    assert NO_MAJORITY.format(0) in api.get("/api/studies/pw/report/?format=html").content.decode()
    assert len(builds) == 2


def test_a_json_refresh_keeps_no_stale_csv(study, researcher):
    """A rebuild for the JSON (or the dashboard) drops the CSV of the older version; the
    next CSV request renders it for the cached JSON, without rebuilding the report."""
    api = api_client(researcher)
    api.get("/api/studies/pw/report/?format=csv")
    Judgment.objects.filter(item__item_id="i3", annotator__username="ann2").update(value="x")
    api.get("/api/studies/pw/report/")  # rebuilt for the JSON: the CSV is not kept
    row = ReportCache.objects.get(study=study)
    assert row.csv == "" and row.version == report_cache.data_version(study)
    text = api.get("/api/studies/pw/report/?format=csv").content.decode()
    assert "i3,choice,0,2,x,2,0" in text and ReportCache.objects.get(study=study).csv == text


def test_runtime_and_import_writes_bump_the_revision(study):
    """The runtime's one writer of predictions (services.upsert_predictions) and an
    `import_predictions` of changed values: in-place updates, seen by the triggers with no
    call to report_cache."""
    from annotate.services import PredictionRow, upsert_predictions
    from annotate.studies.judgments_io import import_predictions

    item = Item.objects.get(study=study, item_id="i1")
    rev = revision(study)
    upsert_predictions("pw", [PredictionRow(str(item.pk), "bleu", "x", "7")])
    assert revision(study) > rev and Prediction.objects.get(item=item, evaluator="bleu", question="x").value == "7"
    rev = revision(study)
    upsert_predictions("pw", [PredictionRow(str(item.pk), "bleu", "x", "7")])  # unchanged: nothing written
    assert revision(study) == rev
    import_predictions(io.BytesIO(b"study,item_id,evaluator,annotator,question,value\npw,i1,bleu,,x,8\n"))
    assert revision(study) > rev and Prediction.objects.get(item=item, evaluator="bleu", question="x").value == "8"


@pytest.mark.django_db(transaction=True)
def test_sqlite_triggers_survive_migrations_that_copy_their_tables():
    """SQLite migrations that change a table copy it; the report triggers are dropped before
    `migrate` and installed after it (annotate/apps.py), so migrating back over 0011 (which
    copies annotate_study) and forward again works and leaves every trigger in place."""
    from django.core.management import call_command
    from django.db import connection

    from annotate.reports.triggers import _triggers, _user_table

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's triggers (PostgreSQL's live in migration 0010 and survive ALTER TABLE)")
    from django.apps import apps

    def names():
        with connection.cursor() as cursor:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            return {row[0] for row in cursor.fetchall()}

    expected = {name for name, _, _ in _triggers(apps, "sqlite", _user_table(apps))}
    assert expected <= names() and len(expected) == 7
    call_command("migrate", "annotate", "0010", verbosity=0)
    call_command("migrate", "annotate", verbosity=0)
    assert expected <= names()
