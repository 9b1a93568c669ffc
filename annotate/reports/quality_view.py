"""/annotate/<slug>/quality/: each annotator's gold accuracy and median seconds per item,
for the study's researchers (annotators never see which items were gold)."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from annotate.access import study_for
from annotate.reports.quality import annotator_quality


@login_required
def quality(request, slug):
    study = study_for(request.user, slug, "read")
    rows = sorted(annotator_quality(study).items())
    return render(request, "annotate/quality.html", {"study": study, "rows": rows})
