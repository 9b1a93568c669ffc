"""Researcher dashboard /studies/<slug>/: live progress per annotator (htmx polling),
the cached report with its figures (refreshed in the background, reloaded when its
version changes), downloads; admins also load batches and start jobs."""
import statistics

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.db.models import Count, Max, Q
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotate.access import study_for
from annotate.desk.assignment import release_expired
from annotate.desk.progress import study_progress
from annotate.models import CLOSED, OPEN, PAUSED, RETURNED, SCREENED_OUT, TIMED_OUT, Assignment, AuditLog, Judgment
from annotate.participants.entry_limits import WINDOW_MINUTES, bursts, per_address
from annotate.participants.recruitment import hold_minutes, link_path, on_hold, places_limit, recruits, rotate_key
from annotate.reports.cache import current_report, data_version, report_params, report_state, request_refresh
from annotate.reports.quality import flagged_annotators
from annotate.roles import is_admin

PROGRESS_POLL_SECONDS = 5
REPORT_POLL_SECONDS = 4
PROGRESS_CACHE_SECONDS = 600


def progress_context(study, version=None):
    """Counts for the progress panel (annotate/desk/progress.py defines them): a few aggregate
    queries, cheap enough to poll. Per annotator: items and judgments submitted, open
    (unexpired) assignments, last submit, and why they are flagged (below the study's
    quality thresholds: left out of the report)."""
    # Judgment aggregates and quality flags only change with the judgments and the study's
    # thresholds (both in the data version): kept in the cache per version, so the 5 s poll
    # does not redo a GROUP BY and the quality pass over every judgment.
    key = f"humeval:progress:{study.pk}:{study.created_at.timestamp()}:{version or data_version(study)}"
    per_annotator, flagged = cache.get_or_set(key, lambda: (list(
        Judgment.objects.filter(study=study, repeat_of__isnull=True).values("annotator__username")
        .annotate(items=Count("item", distinct=True), judgments=Count("id"), last=Max("submitted_at"))
        .order_by("annotator__username")), flagged_annotators(study)), PROGRESS_CACHE_SECONDS)
    open_by = dict(Assignment.objects.filter(study=study).open()
                   .values("annotator__username").annotate(n=Count("id"))
                   .values_list("annotator__username", "n"))
    rows = [{"username": r["annotator__username"], "items": r["items"], "judgments": r["judgments"],
             "open": open_by.get(r["annotator__username"], 0), "last": r["last"],
             "flagged": flagged.get(r["annotator__username"], "")} for r in per_annotator]
    return {"study": study, "rows": rows, **study_progress(study), "poll_seconds": PROGRESS_POLL_SECONDS}


def include_flagged(request) -> bool:
    """The dashboard's include-flagged switch (?include_flagged=1): its report, the report
    version it polls and its report downloads then keep flagged annotators."""
    return request.GET.get("include_flagged") == "1"


def recruitment_context(request, study, flagged):
    """The Recruitment panel: the whole link, places taken/left, the funnel and the median
    minutes on study of those who completed (annotate/participants/recruitment.py). None when the study
    takes no participants from links."""
    if not recruits(study):
        return None
    if release_expired(study):  # expired items give their places back now, not at the next participant's request
        study.refresh_from_db(fields=["places_taken"])
    people = study.participants.all()
    counts = people.aggregate(
        entered=Count("id"), consented=Count("id", filter=Q(consented_at__isnull=False)),
        started=Count("id", filter=Q(place_taken_at__isnull=False)),
        completed=Count("id", filter=Q(finished_at__isnull=False)),
        returned=Count("id", filter=Q(declined_at__isnull=False) | Q(ended=RETURNED, finished_at__isnull=True)),
        screened_out=Count("id", filter=Q(ended=SCREENED_OUT, finished_at__isnull=True)),
        timed_out=Count("id", filter=Q(ended=TIMED_OUT, finished_at__isnull=True)))
    if not study.consent:
        counts["consented"] = None  # nothing to consent to: shown as "–"
    usernames = set(people.values_list("user__username", flat=True))
    counts["flagged"] = len(usernames & set(flagged))
    done = people.filter(finished_at__isnull=False).values_list("started_at", "finished_at")
    minutes = [(finished - started).total_seconds() / 60 for started, finished in done]
    limit = places_limit(study)
    return {"link": f"{request.scheme}://{request.get_host()}{link_path(study)}",
            "platform": study.recruitment["platform"], "screenout_code": study.recruitment.get("screenout_code", ""),
            "places": limit, "taken": study.places_taken, "left": max(0, limit - study.places_taken),
            "funnel": counts, "median_minutes": round(statistics.median(minutes), 1) if minutes else None,
            "n_minutes": len(minutes), "on_hold": on_hold(study), "hold_minutes": hold_minutes(study),
            "bursts": bursts(study), "per_address": per_address(study), "window_minutes": WINDOW_MINUTES}


STATUS_ACTIONS = {"open": OPEN, "pause": PAUSED, "close": CLOSED}


@login_required
@require_POST
def recruitment_action(request, slug):
    """The Recruitment panel's buttons (the study's researchers and admins): open, pause or
    close the study, or rotate the link's key (the old link then answers 404). Audited."""
    study = study_for(request.user, slug, "read")
    action = request.POST.get("action")
    if action == "rotate" and recruits(study):
        rotate_key(study, request.user)
    elif action in STATUS_ACTIONS and study.status != STATUS_ACTIONS[action]:
        before = study.status
        study.status = STATUS_ACTIONS[action]
        study.save(update_fields=["status"])
        AuditLog.objects.create(study=study, user=request.user, action="study.settings", object_type="study",
                                object_id=study.slug, before={"status": before}, after={"status": study.status})
    elif action not in STATUS_ACTIONS:
        return HttpResponseBadRequest("Unknown action.")
    return redirect("dashboard", slug=slug)


@login_required
def progress(request, slug):
    """The progress panel alone (htmx polls this)."""
    study = study_for(request.user, slug, "read")
    return render(request, "dashboard/_progress.html", progress_context(study))


@login_required
def report_panel(request, slug):
    """The report section (agreement, figures, tables) from the report cache."""
    study = study_for(request.user, slug, "read")
    return render(request, "dashboard/_report.html", report_context(study, flagged=include_flagged(request)))


@login_required
def report_version(request, slug):
    """The polled version badge: cheap when the cached report is current. When it is
    stale a refresh is queued (docs/reports.md, "Cache"); when a newer report than the one
    the page shows (`?shown=`) is built, the answer fires `report-changed`, which reloads
    the report section."""
    study = study_for(request.user, slug, "read")
    params = report_params(study, include_flagged=include_flagged(request))
    state = report_state(study, params)
    if not state.fresh:
        request_refresh(study, params)
        state = report_state(study, params)
    response = render(request, "dashboard/_report_version.html", {"study": study, "state": state,
                                                                  "poll_seconds": REPORT_POLL_SECONDS,
                                                                  "include_flagged": include_flagged(request)})
    if state.built and state.built != request.GET.get("shown", ""):
        response["HX-Trigger"] = "report-changed"
    return response


def report_context(study, version=None, flagged=False):
    state = current_report(study, report_params(study, include_flagged=flagged), current=version)
    return {"study": study, "report_html": state.fragment, "state": state,
            "poll_seconds": REPORT_POLL_SECONDS, "include_flagged": flagged}


@login_required
def dashboard(request, slug):
    study = study_for(request.user, slug, "read")
    version = data_version(study)  # one query for both panels
    progress = progress_context(study, version)
    flagged = include_flagged(request)
    context = {**progress, **report_context(study, version, flagged),
               "recruitment": recruitment_context(request, study, {r["username"]: 1 for r in progress["rows"]
                                                                     if r["flagged"]}),
               "poll_seconds": PROGRESS_POLL_SECONDS, "report_poll_seconds": REPORT_POLL_SECONDS,
               "is_admin": is_admin(request.user),
               "formats": ["json", "csv", "html"], "judgment_formats": ["csv", "jsonl"]}
    return render(request, "dashboard/dashboard.html", context)
