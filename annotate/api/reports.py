"""GET /api/studies/{slug}/report/?format=json|csv|html — researchers and admins only."""
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.permissions import IsResearcherRole
from annotate.models import Study
from annotate.report_data import study_report
from evaluation.report import FORMATS

CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "html": "text/html; charset=utf-8"}


def report_response(study, fmt):
    """The rendered report as a download (csv, html) or a JSON response."""
    report, text = study_report(study, fmt)
    if fmt == "json":
        return None, report
    response = HttpResponse(text, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-report.{fmt}"'
    return response, report


class JsonOnly(BaseContentNegotiation):
    """`?format=` picks the report format here, not a DRF renderer: always answer JSON
    (csv and html are returned as plain HttpResponses)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None


class StudyReportView(APIView):
    permission_classes = [IsResearcherRole]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonOnly

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=list(FORMATS), default="json",
                                     description="json (the report), csv (per-item table), html (self-contained page)")],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
        summary="Study report",
    )
    def get(self, request, slug):
        study = get_object_or_404(Study, slug=slug)
        fmt = request.query_params.get("format", "json")
        if fmt not in FORMATS:
            return Response({"detail": f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}"}, status=400)
        response, report = report_response(study, fmt)
        return response if response is not None else Response(report)
