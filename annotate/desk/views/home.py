"""`/`: anonymous visitors go to the login page; signed-in users see the studies they
annotate with their progress (done / assigned / total), and researchers a link to each
study's dashboard and annotator-quality table (the studies they may read)."""
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render

from annotate.desk.progress import annotator_progress
from annotate.models import Study


def home(request):
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    rows = [{"study": study, **annotator_progress(study, request.user)}
            for study in Study.objects.annotatable_by(request.user)]
    research = list(Study.objects.readable_by(request.user))
    return render(request, "annotate/home.html", {"rows": rows, "research": research})
