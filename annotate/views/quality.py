"""/annotate/<slug>/quality/: each annotator's gold accuracy and median seconds per item,
for researchers (annotators never see which items were gold)."""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, render

from annotate.models import Study
from annotate.quality import annotator_quality
from annotate.roles import is_researcher


@login_required
def quality(request, slug):
    study = get_object_or_404(Study, slug=slug)
    if not is_researcher(request.user):
        raise PermissionDenied("Only researchers may see annotator quality.")
    rows = sorted(annotator_quality(study).items())
    return render(request, "annotate/quality.html", {"study": study, "rows": rows})
