"""`/`: anonymous visitors go to the login page; signed-in users see the studies they
annotate with their progress (done / assigned / total), and researchers a link to each
study's dashboard and annotator-quality table."""
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render

from annotate.assignment import progress, studies_for
from annotate.models import Study
from annotate.roles import is_researcher


def home(request):
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    rows = [{"study": study, **progress(study, request.user)} for study in studies_for(request.user)]
    research = list(Study.objects.all()) if is_researcher(request.user) else []
    return render(request, "annotate/home.html", {"rows": rows, "research": research})
