"""The built report of a study, cached per study state and parameters (docs/reports.md,
"Cache"): the dashboard and the JSON API read it instead of recomputing the report.

- The data version (`data_version`) is one query of counts and highest ids of the study's
  judgments, predictions and items, plus `Study.report_revision` and a digest of the
  settings the report reads. A new row changes the counts; an update in place or a delete
  bumps the revision through database triggers (migration 0010), whatever wrote it (admin,
  shell `.update()`, import, API); a submit writes nothing for the cache.
- The JSON, the dashboard's HTML fragment (the HTML page is that fragment in a page) and,
  once asked for, the CSV are stored under one version.
- The cache is a table (`ReportCache`, one row per study and parameter set), so web
  processes and Celery workers share it and it survives restarts.
- A stale entry is refreshed by the Celery task `annotate.refresh_report` (run in process
  when no broker is configured, within the cap of humeval/background.py); at most one
  refresh per entry is in flight.
"""
import hashlib
import json
import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from annotate.models import Item, Judgment, Prediction, ReportCache, Study
from annotate.reports.data import fetch_report_input, study_min_votes
from humeval import background

logger = logging.getLogger(__name__)
REFRESH_TASK = "annotate.refresh_report"  # the task below (annotate/tasks.py registers it)
BUILD_TIMEOUT = timedelta(minutes=10)  # a refresh claimed longer ago is presumed lost


def report_params(study: Study, min_votes: int | None = None, include_flagged: bool = False) -> dict[str, Any]:
    """The parameters a report depends on besides the data (the cache key); flagged
    annotators are left out unless asked (docs/running-a-study.md)."""
    params: dict[str, Any] = {"min_votes": study_min_votes(study.config, min_votes)}
    if include_flagged:
        params["include_flagged"] = True
    return params


def params_key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def _counts_sql() -> str:
    parts = []
    for model in (Judgment, Prediction, Item):
        table = model._meta.db_table
        parts += [f"(SELECT COUNT(*) FROM {table} WHERE study_id = %s)",
                  f"(SELECT MAX(id) FROM {table} WHERE study_id = %s)"]
    return "SELECT " + ", ".join(parts)


def data_version(study: Study) -> str:
    """`j<count>.<max id>-p...-i...-r<revision>-s<settings digest>`: changes whenever a
    judgment, prediction or item is added or removed, `touch` is called, or the study's
    settings change. One query (the study_id indexes), plus the study row."""
    with connection.cursor() as cursor:
        cursor.execute(_counts_sql(), [study.pk] * 6)
        nj, mj, npred, mp, ni, mi = cursor.fetchone()
    revision = Study.objects.filter(pk=study.pk).values_list("report_revision", flat=True).first() or 0
    read = [study.slug, study.kind, study.config, study.annotations_per_item] + (
        [study.quality] if study.quality else [])  # the slug: the report names its study
    digest = hashlib.sha256(json.dumps(read,
                                       sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"j{nj}.{mj or 0}-p{npred}.{mp or 0}-i{ni}.{mi or 0}-r{revision}-s{digest}"


def touch(*study_ids: int) -> None:
    """Marks the studies' cached reports stale. The database triggers (migration 0010) do
    this for every update or delete of judgments, predictions and items; kept for writes
    they cannot see (a database without them)."""
    if study_ids:
        Study.objects.filter(pk__in=set(study_ids)).update(report_revision=F("report_revision") + 1)


@dataclass
class ReportState:
    """What the cache holds for (study, params), next to the current data version."""

    params: dict[str, Any]
    current: str
    built: str  # "" = never built
    report: dict[str, Any] | None
    fragment: str
    updating: bool
    csv: str = ""

    @property
    def fresh(self) -> bool:
        return self.built == self.current

    def as_json(self, slug: str) -> dict[str, Any]:
        """The version endpoint's answer (docs/reports.md)."""
        return {"study": slug, "params": self.params, "version": self.current,
                "built_version": self.built or None, "fresh": self.fresh, "updating": self.updating}


def report_state(study: Study, params: dict[str, Any], read: tuple[str, ...] = (),
                 current: str | None = None) -> ReportState:
    """The cache entry's state (no build), with what `read` names of "report" (the JSON,
    ~1 MB at 100k judgments), "fragment" (the dashboard's HTML) and "csv". `current`: the
    data version when the caller has just read it."""
    current = current or data_version(study)
    fields = ["version", "building_since"] + [{"report": "report_json"}.get(part, part) for part in read]
    row = ReportCache.objects.filter(study=study, params=params_key(params)).values(*fields).first()
    if row is None:
        return ReportState(params, current, "", None, "", False)
    since = row["building_since"]
    report = json.loads(row["report_json"]) if row.get("report_json") else None
    return ReportState(params, current, row["version"], report, row.get("fragment", ""),
                       since is not None and since > timezone.now() - BUILD_TIMEOUT, row.get("csv", ""))


def build(study: Study, params: dict[str, Any], with_csv: bool = False) -> ReportState:
    """Builds the report now and stores it (with its CSV when `with_csv`). The version is
    read before the data, so rows that arrive during the build leave the entry stale
    (refreshed again), never wrong."""
    from evaluation.report import build_report, render
    from evaluation.report.html import report_fragment

    start = time.perf_counter()
    version = data_version(study)
    inp = fetch_report_input(study, params["min_votes"], params.get("include_flagged", False))
    report = build_report(inp)
    fragment = report_fragment(report, inp)
    csv = render(report, inp, "csv") if with_csv else ""
    text = json.dumps(report, allow_nan=False)
    ReportCache.objects.update_or_create(
        study=study, params=params_key(params),
        defaults={"version": version, "report_json": text, "fragment": fragment, "csv": csv,
                  "built_at": timezone.now(), "build_seconds": time.perf_counter() - start, "building_since": None})
    return ReportState(params, version, version, report, fragment, False, csv)


def uses_broker() -> bool:
    return bool(settings.CELERY_BROKER_URL) and not settings.CELERY_TASK_ALWAYS_EAGER


def request_refresh(study: Study, params: dict[str, Any]) -> bool:
    """Queues a refresh of the entry unless one is in flight; True if one was queued. With
    no broker the task runs here, before this returns."""
    key = params_key(params)
    ReportCache.objects.get_or_create(study=study, params=key)
    now = timezone.now()
    claimed = ReportCache.objects.filter(study=study, params=key).filter(
        Q(building_since__isnull=True) | Q(building_since__lt=now - BUILD_TIMEOUT)).update(building_since=now)
    if not claimed:
        return False
    if not uses_broker():  # here, but within the process's cap on background work
        with background.slot():
            refresh_report_task.delay(study.pk, key)
        return True

    def send() -> None:
        try:
            refresh_report_task.apply_async((study.pk, key), queue=settings.HUMEVAL_REPORT_QUEUE)
        except Exception:  # broker unreachable: let the next request try again
            logger.exception("could not queue the report refresh of %s", study.slug)
            ReportCache.objects.filter(study=study, params=key).update(building_since=None)

    transaction.on_commit(send)
    return True


def refresh(study_id: int, key: str) -> str:
    """The task's body: build the entry unless it is already current. -> its version ("" when
    the study was deleted meanwhile)."""
    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        return ""
    params = json.loads(key)
    try:
        state = report_state(study, params)
        if state.fresh:
            return state.built
        return build(study, params).built
    finally:
        ReportCache.objects.filter(study=study, params=key).update(building_since=None)


@shared_task(name=REFRESH_TASK, acks_late=True, reject_on_worker_lost=True)
def refresh_report_task(study_id: int, key: str) -> str:
    """The Celery task (annotate/tasks.py registers it): `refresh`."""
    return refresh(study_id, key)


def current_report(study: Study, params: dict[str, Any], read: tuple[str, ...] = ("fragment",),
                   current: str | None = None) -> ReportState:
    """The cached report for the dashboard: a stale entry is shown while a refresh is
    queued (without a broker the refresh runs first, so the entry is current)."""
    state = report_state(study, params, read, current)
    if state.fresh:
        return state
    request_refresh(study, params)
    return report_state(study, params, read)


def fresh_report(study: Study, params: dict[str, Any]) -> dict[str, Any]:
    """The current report (JSON API): from the cache when current, else built now."""
    state = report_state(study, params, ("report",))
    if state.fresh and state.report is not None:
        return state.report
    report = build(study, params).report
    assert report is not None
    return report


def fresh_text(study: Study, params: dict[str, Any], fmt: str) -> str:
    """The current report as CSV or HTML text, from the cache when current (the HTML page
    is the cached fragment in a page; the CSV is stored beside the JSON the first time it
    is asked for), else built now and stored under the same version."""
    from evaluation.report.html import html_page

    if fmt not in ("csv", "html"):
        raise ValueError(f"no cached text of format {fmt!r}")
    state = report_state(study, params, ("fragment", "csv"))
    if state.fresh and fmt == "html" and state.fragment:
        return html_page(study.slug, study.kind, state.fragment)
    if state.fresh and fmt == "csv" and state.csv:
        return state.csv
    if state.fresh and fmt == "csv":  # the JSON is current: only the CSV is missing
        return _store_csv(study, params, state.current)
    built = build(study, params, with_csv=fmt == "csv")
    return built.csv if fmt == "csv" else html_page(study.slug, study.kind, built.fragment)


def _store_csv(study: Study, params: dict[str, Any], version: str) -> str:
    """Renders the CSV of the current entry and stores it when the data did not change
    meanwhile (else it is served but not stored: it may be newer than the cached JSON)."""
    from evaluation.report import render

    state = report_state(study, params, ("report",), version)
    inp = fetch_report_input(study, params["min_votes"], params.get("include_flagged", False))
    text = render(state.report or {}, inp, "csv")
    if data_version(study) == version:
        ReportCache.objects.filter(study=study, params=params_key(params), version=version).update(csv=text)
    return text
