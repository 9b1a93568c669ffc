"""Researcher dashboard /studies/<slug>/: live progress per annotator (htmx polling),
the current report with its figures, downloads; admins also load batches and start jobs."""
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Max
from django.shortcuts import render

from annotate.access import study_for
from annotate.models import Assignment, Judgment
from annotate.progress import study_progress
from annotate.quality import flagged_annotators
from annotate.roles import is_admin

PROGRESS_POLL_SECONDS = 5


def progress_context(study):
    """Counts for the progress panel (annotate/progress.py defines them): a few aggregate
    queries, cheap enough to poll. Per annotator: items and judgments submitted, open
    (unexpired) assignments, last submit, and why they are flagged (below the study's
    quality thresholds: left out of the report)."""
    per_annotator = list(
        Judgment.objects.filter(study=study).values("annotator__username")
        .annotate(items=Count("item", distinct=True), judgments=Count("id"), last=Max("submitted_at"))
        .order_by("annotator__username"))
    open_by = dict(Assignment.objects.filter(study=study).open()
                   .values("annotator__username").annotate(n=Count("id"))
                   .values_list("annotator__username", "n"))
    flagged = flagged_annotators(study)
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
    """The report section (agreement, figures, tables), rebuilt on request."""
    study = study_for(request.user, slug, "read")
    return render(request, "dashboard/_report.html", report_context(study))


def report_context(study):
    from annotate.report_data import fetch_report_input
    from evaluation.report import build_report
    from evaluation.report.html import report_fragment

    inp = fetch_report_input(study)
    report = build_report(inp)
    return {"study": study, "report": report, "report_html": report_fragment(report, inp)}


@login_required
def dashboard(request, slug):
    study = study_for(request.user, slug, "read")
    context = {**progress_context(study), **report_context(study), "is_admin": is_admin(request.user),
               "formats": ["json", "csv", "html"], "judgment_formats": ["csv", "jsonl"]}
    return render(request, "dashboard/dashboard.html", context)
