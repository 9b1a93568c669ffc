"""Admin batch upload form: /studies/<slug>/upload/ (append to a study) and
/batches/upload/ (a header for a new slug creates the study). Same importer as the
command and the API; on errors the page lists every `line N: ...` and nothing is written."""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from annotate.access import study_for
from annotate.roles import is_admin
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch


def _upload(request, study=None):
    if not is_admin(request.user):
        raise PermissionDenied("Only admins may load batches.")
    context = {"study": study, "errors": None, "n_errors": 0, "result": None}
    status = 200
    if request.method == "POST":
        upload = request.FILES.get("batch")
        if upload is None:
            context["errors"], context["n_errors"], status = ["Choose a batch file (.jsonl) to upload."], 1, 400
        else:
            try:
                context["result"] = import_batch(upload, source=upload.name, user=request.user,
                                                 expected_slug=study.slug if study else None)
            except BatchInvalid as exc:
                context["errors"], context["n_errors"], status = exc.errors, exc.total, 400
    return render(request, "annotate/upload.html", context, status=status)


@login_required
def upload_to_study(request, slug):
    study = study_for(request.user, slug)  # 404 for studies the user may not see
    return _upload(request, study)


@login_required
def upload_new(request):
    return _upload(request)
