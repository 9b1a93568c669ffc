"""The study's Plan page (/studies/<slug>/plan/): researchers plan the next study from this
one. A form for the design (systems' strengths, or fitted from this study as the pilot;
items, overlap, annotators, targets, a stopping rule, simulations) starts a design run in
the background (planning.runs); the page polls its progress (htmx) and shows each target's
power with its Monte-Carlo se and median interval width; a finished run can be saved to the
study (Study.config["power"], printed by the datasheet)."""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotate import roles
from annotate.access import study_for

from . import runs
from .api import start_run
from .plan_form import STRENGTH, design_from_form, form_from_design, initial, save_power

POLL_SECONDS = 1


def _study(request, slug):
    study = study_for(request.user, slug, "read")
    if not roles.is_researcher(request.user):
        raise PermissionDenied("Only researchers may plan studies.")
    return study


def _run_of(request, study, run_id):
    run = runs.load(run_id or "")
    if run is None or run["study"] != study.slug or not runs.visible(run, request.user):
        return None
    return run


@login_required
@require_http_methods(["GET", "POST"])
def plan(request, slug):
    study = _study(request, slug)
    form, errors, status = initial(study), [], 200
    if request.method == "POST" and request.POST.get("action") == "save":
        run = _run_of(request, study, request.POST.get("run"))
        if run is None or run["status"] != runs.DONE:
            raise Http404("No finished design run to save.")
        save_power(study, run, request.user)
        return redirect(f"{reverse('study-plan', args=[study.slug])}?run={run['id']}&saved=1")
    if request.method == "POST":
        raw, errors = design_from_form(study, request.POST)
        form = {**form, **{k: v for k, v in request.POST.items() if not k.startswith(STRENGTH)},
                "fit": bool(request.POST.get("fit")),
                "systems": {k[len(STRENGTH):]: v for k, v in request.POST.items() if k.startswith(STRENGTH)}
                or form["systems"]}
        if not errors:
            run, errors = start_run(request.user, {"design": raw, "study": study.slug})
            if run is not None:
                return redirect(f"{reverse('study-plan', args=[study.slug])}?run={run['id']}")
        status = 400
    run = _run_of(request, study, request.GET.get("run"))
    if run is not None and request.method == "GET":
        form = form_from_design(form, study, run["design"])
    return render(request, "dashboard/plan.html",
                  {"study": study, "form": form, "errors": errors, "run": run, "saved": request.GET.get("saved"),
                   "power": (study.config or {}).get("power"), "poll_seconds": POLL_SECONDS}, status=status)


@login_required
def plan_run(request, slug, run_id):
    """The run's panel (progress while it runs, the results when done), polled by htmx."""
    study = _study(request, slug)
    run = _run_of(request, study, run_id)
    if run is None:
        raise Http404("No such design run.")
    return render(request, "dashboard/_plan_run.html", {"study": study, "run": run, "poll_seconds": POLL_SECONDS})
