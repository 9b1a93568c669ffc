"""The admin page "New study from a plan" (/plans/new/): upload a plan and its input
files; the plan runs as a pipeline job (the same path as POST /api/pipelines/), then the
browser goes to the study's dashboard, which shows the chain's progress. The chain runs in
the background (the workers, or a thread of the web process without a broker): the page
answers at once, 202 while the study is not there yet."""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render

from annotate.services import get_study, is_admin

from ..backends.config import ModelNotAvailable
from ..job_support.job_files import redact
from ..job_support.kinds import JobParamsError
from ..metrics.registry import UnknownMetric
from ..models import Job
from ..plans import start_uploaded_plan


@login_required
def new_plan(request):
    if not is_admin(request.user):
        raise PermissionDenied("Only admins may start a study plan.")
    context = {"error": None, "job": None}
    if request.method != "POST":
        return render(request, "runtime/new_plan.html", context)
    plan = request.FILES.get("plan")
    if plan is None:
        context["error"] = "Choose the plan file (JSON)."
        return render(request, "runtime/new_plan.html", context, status=400)
    try:
        job = start_uploaded_plan(plan, request.FILES.getlist("files"), request.user)
    except (JobParamsError, ModelNotAvailable, UnknownMetric) as exc:
        context["error"] = redact(str(exc))
        context["errors"] = redact(list(getattr(exc, "errors", []) or []))
        return render(request, "runtime/new_plan.html", context, status=400)
    if job.state != Job.FAILED and get_study(job.params["study"]) is not None:
        return redirect("dashboard", slug=job.params["study"])
    context["job"] = job  # queued (the study appears once its batch is imported), or failed
    context["job_error"] = redact((job.errors or [{}])[-1].get("error", "")) if job.state == Job.FAILED else ""
    return render(request, "runtime/new_plan.html", context, status=400 if job.state == Job.FAILED else 202)
