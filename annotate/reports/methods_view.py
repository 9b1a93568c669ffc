"""The study page's Methods tab: the datasheet (annotate/datasheet.py) as a page, and its
Markdown, LaTeX and JSON files to download. Readable by those who may read the study."""
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render

from annotate.access import study_for
from annotate.desk.rendering import render_markdown
from annotate.reports.datasheet import FORMATS, datasheet, render_datasheet, to_markdown

CONTENT_TYPES = {"md": "text/markdown; charset=utf-8", "tex": "application/x-tex; charset=utf-8",
                 "json": "application/json"}


@login_required
def methods(request, slug):
    study = study_for(request.user, slug, "read")
    fmt = request.GET.get("format")
    sheet = datasheet(study, pay=(request.GET.get("pay") or "")[:200] or None)
    if fmt in FORMATS:
        response = HttpResponse(render_datasheet(sheet, fmt), content_type=CONTENT_TYPES[fmt])
        response["Content-Disposition"] = f'attachment; filename="{study.slug}-methods.{fmt}"'
        return response
    html = render_markdown(to_markdown(sheet), tables=True)  # titles and ids come from batches: escaped
    return render(request, "dashboard/methods.html", {"study": study, "methods_html": html, "formats": FORMATS})
