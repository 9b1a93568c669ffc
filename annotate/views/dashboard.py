"""Researcher dashboard /studies/<slug>/: live progress per annotator (htmx polling),
the cached report with its figures (refreshed in the background, reloaded when its
version changes), downloads; admins also load batches and start jobs."""
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.db.models import Count, Max
from django.shortcuts import render

from annotate.access import study_for
from annotate.models import Assignment, Judgment
from annotate.progress import study_progress
from annotate.quality import flagged_annotators
from annotate.report_cache import current_report, data_version, report_params, report_state, request_refresh
from annotate.roles import is_admin

PROGRESS_POLL_SECONDS = 5
REPORT_POLL_SECONDS = 4
PROGRESS_CACHE_SECONDS = 600


def progress_context(study, version=None):
    """Counts for the progress panel (annotate/progress.py defines them): a few aggregate
    queries, cheap enough to poll. Per annotator: items and judgments submitted, open
    (unexpired) assignments, last submit, and why they are flagged (below the study's
    quality thresholds: left out of the report)."""
    # Judgment aggregates and quality flags only change with the judgments and the study's
    # thresholds (both in the data version): kept in the cache per version, so the 5 s poll
    # does not redo a GROUP BY and the quality pass over every judgment.
    key = f"humeval:progress:{study.pk}:{study.created_at.timestamp()}:{version or data_version(study)}"
    per_annotator, flagged = cache.get_or_set(key, lambda: (list(
        Judgment.objects.filter(study=study).values("annotator__username")
        .annotate(items=Count("item", distinct=True), judgments=Count("id"), last=Max("submitted_at"))
        .order_by("annotator__username")), flagged_annotators(study)), PROGRESS_CACHE_SECONDS)
    open_by = dict(Assignment.objects.filter(study=study).open()
                   .values("annotator__username").annotate(n=Count("id"))
                   .values_list("annotator__username", "n"))
    rows = [{"username": r["annotator__username"], "items": r["items"], "judgments": r["judgments"],
             "open": open_by.get(r["annotator__username"], 0), "last": r["last"],
             "flagged": flagged.get(r["annotator__username"], "")} for r in per_annotator]
    return {"study": study, "rows": rows, **study_progress(study), "poll_seconds": PROGRESS_POLL_SECONDS}


@login_required
def progress(request, slug):
    """The progress panel alone (htmx polls this)."""
    study = study_for(request.user, slug, "read")
    return render(request, "dashboard/_progress.html", progress_context(study))


@login_required
def report_panel(request, slug):
    """The report section (agreement, figures, tables) from the report cache."""
    study = study_for(request.user, slug, "read")
    return render(request, "dashboard/_report.html", report_context(study))


@login_required
def report_version(request, slug):
    """The polled version badge: cheap when the cached report is current. When it is
    stale a refresh is queued (docs/reports.md, "Cache"); when a newer report than the one
    the page shows (`?shown=`) is built, the answer fires `report-changed`, which reloads
    the report section."""
    study = study_for(request.user, slug, "read")
    params = report_params(study)
    state = report_state(study, params)
    if not state.fresh:
        request_refresh(study, params)
        state = report_state(study, params)
    response = render(request, "dashboard/_report_version.html", {"study": study, "state": state,
                                                                  "poll_seconds": REPORT_POLL_SECONDS})
    if state.built and state.built != request.GET.get("shown", ""):
        response["HX-Trigger"] = "report-changed"
    return response


def report_context(study, version=None):
    state = current_report(study, report_params(study), current=version)
    return {"study": study, "report_html": state.fragment, "state": state,
            "poll_seconds": REPORT_POLL_SECONDS}


@login_required
def dashboard(request, slug):
    study = study_for(request.user, slug, "read")
    version = data_version(study)  # one query for both panels
    context = {**progress_context(study, version), **report_context(study, version),
               "poll_seconds": PROGRESS_POLL_SECONDS, "report_poll_seconds": REPORT_POLL_SECONDS,
               "is_admin": is_admin(request.user),
               "formats": ["json", "csv", "html"], "judgment_formats": ["csv", "jsonl"]}
    return render(request, "dashboard/dashboard.html", context)
