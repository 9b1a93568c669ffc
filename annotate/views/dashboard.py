"""Researcher dashboard /studies/<slug>/: live progress per annotator (htmx polling),
the current report with its figures, downloads; admins also load batches and start jobs."""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Max
from django.shortcuts import get_object_or_404, render

from annotate.models import Assignment, Judgment, Study
from annotate.roles import is_admin, is_researcher

PROGRESS_POLL_SECONDS = 5


def _study_for(request, slug):
    study = get_object_or_404(Study, slug=slug)
    if not is_researcher(request.user):
        raise PermissionDenied("Only researchers and admins may see the dashboard.")
    return study


def progress_context(study):
    """Counts for the progress panel: a few aggregate queries, cheap enough to poll."""
    judgments = Judgment.objects.filter(study=study)
    per_annotator = list(
        judgments.values("annotator__username")
        .annotate(items=Count("item", distinct=True), judgments=Count("id"), last=Max("submitted_at"))
        .order_by("annotator__username"))
    open_by = dict(Assignment.objects.filter(study=study, completed_at__isnull=True)
                   .values("annotator__username").annotate(n=Count("id"))
                   .values_list("annotator__username", "n"))
    n_items = study.items.count()
    n_gold = study.items.filter(is_gold=True).count()
    judged = (judgments.filter(item__is_gold=False).values("item")
              .annotate(n=Count("annotator", distinct=True)))
    complete = judged.filter(n__gte=study.annotations_per_item).count()
    needed = (n_items - n_gold) * study.annotations_per_item
    done = sum(row["n"] for row in judged)
    rows = [{"username": r["annotator__username"], "items": r["items"], "judgments": r["judgments"],
             "open": open_by.get(r["annotator__username"], 0), "last": r["last"]} for r in per_annotator]
    return {
        "study": study, "rows": rows, "n_items": n_items, "n_gold": n_gold, "complete": complete,
        "done": min(done, needed) if needed else done, "needed": needed,
        "percent": round(100 * min(done, needed) / needed, 1) if needed else 0.0,
        "poll_seconds": PROGRESS_POLL_SECONDS,
    }


@login_required
def progress(request, slug):
    """The progress panel alone (htmx polls this)."""
    study = _study_for(request, slug)
    return render(request, "dashboard/_progress.html", progress_context(study))


@login_required
def report_panel(request, slug):
    """The report section (agreement, figures, tables), rebuilt on request."""
    study = _study_for(request, slug)
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
    study = _study_for(request, slug)
    context = {**progress_context(study), **report_context(study), "is_admin": is_admin(request.user),
               "formats": ["json", "csv", "html"], "judgment_formats": ["csv", "jsonl"]}
    return render(request, "dashboard/dashboard.html", context)
