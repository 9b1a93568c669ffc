"""GET /api/studies/{slug}/report/?format=json|csv|html and GET /api/studies/{slug}/report/version/
— the study's researchers (and admins). Every format comes from the report cache
(annotate/reports/cache.py) when it is current: the JSON and the HTML page (the cached
fragment) always, the CSV once it was asked for under the current version."""
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.access import study_for
from annotate.api.serializers import DetailSerializer, ReportSerializer
from annotate.reports.cache import fresh_report, fresh_text, report_params, report_state
from evaluation.report import FORMATS

CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "html": "text/html; charset=utf-8"}


def download_name(study, fmt):
    """Every format downloads as <slug>-report.<fmt> (a JSON answer without it was saved
    by browsers as "download.json")."""
    return f'attachment; filename="{study.slug}-report.{fmt}"'


def report_response(study, fmt, include_flagged=False):
    """(a download response for csv and html, None for json; the JSON report or None)."""
    params = report_params(study, include_flagged=include_flagged)
    if fmt == "json":
        return None, fresh_report(study, params)
    response = HttpResponse(fresh_text(study, params, fmt), content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = download_name(study, fmt)
    return response, None


class JsonOnly(BaseContentNegotiation):
    """`?format=` picks the report format here, not a DRF renderer: always answer JSON
    (csv and html are returned as plain HttpResponses)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None


class StudyReportView(APIView):
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonOnly

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=list(FORMATS), default="json",
                                     description="json (the report), csv (per-item table), html (one page)"),
                    OpenApiParameter("include_flagged", bool, default=False,
                                     description="keep annotators below the study's quality thresholds")],
        responses={(200, "application/json"): ReportSerializer,
                   (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="The per-item table."),
                   (200, "text/html"): OpenApiResponse(OpenApiTypes.STR, description="Self-contained page."),
                   400: OpenApiResponse(DetailSerializer, description="Unknown format."),
                   403: OpenApiResponse(DetailSerializer, description="Not one of the study's researchers."),
                   404: OpenApiResponse(DetailSerializer, description="No such study, or one you may not see.")},
        summary="Study report (agreement, bias, alignment, ...; statistics.md)",
    )
    def get(self, request, slug):
        study = study_for(request.user, slug, "read")
        fmt = request.query_params.get("format", "json")
        if fmt not in FORMATS:
            return Response({"detail": f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}"}, status=400)
        include = request.query_params.get("include_flagged", "").lower() in {"1", "true", "yes", "on"}
        response, report = report_response(study, fmt, include)
        if response is None:
            response = Response(report)
            response["Content-Disposition"] = download_name(study, fmt)
        return response


class ReportVersionSerializer(serializers.Serializer):
    study = serializers.CharField()
    params = serializers.DictField(help_text="The report parameters (the cache key), e.g. min_votes.")
    version = serializers.CharField(help_text="Version of the study's data now (changes with every new judgment, "
                                              "prediction or item, and with edits).")
    built_version = serializers.CharField(allow_null=True, help_text="Version the cached report was built from.")
    fresh = serializers.BooleanField(help_text="The cached report is current (built_version == version).")
    updating = serializers.BooleanField(help_text="A background refresh is in flight.")


class StudyReportVersionView(APIView):
    """Cheap: one aggregate query and one cache row read, no report is built."""

    @extend_schema(
        responses={200: ReportVersionSerializer,
                   403: OpenApiResponse(DetailSerializer, description="Not one of the study's researchers."),
                   404: OpenApiResponse(DetailSerializer, description="No such study, or one you may not see.")},
        summary="Version of the study's data and of its cached report",
    )
    def get(self, request, slug):
        study = study_for(request.user, slug, "read")
        return Response(report_state(study, report_params(study)).as_json(study.slug))
