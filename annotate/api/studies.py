"""Studies, batch upload, judgments export and predictions upload (interfaces.md REST API).

GET /api/studies/ lists the studies the user may see; POST (admins) creates one from
header fields. Batch and predictions bodies are spooled to a temporary file (bounded
memory) and go through the same importers as the management commands.
"""
import json
import tempfile

from django.conf import settings
from django.db.models import Q
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import roles
from annotate.api.permissions import IsAdminRole, IsResearcherRole
from annotate.batch_format import BatchInvalid
from annotate.importing import import_batch, import_batch_bytes
from annotate.judgments_csv import iter_judgments
from annotate.judgments_io import export_judgment_rows, import_predictions
from annotate.models import Study

EXPORT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}


class RawBody(BaseParser):
    """Accept any body; the views read the raw stream themselves."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return stream


class FormatIsNotARenderer(BaseContentNegotiation):
    """`?format=csv|jsonl` picks the export format, not a DRF renderer: always JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None


def visible_studies(user):
    """Admins and researchers see every study; annotators those open to them."""
    studies = Study.objects.all()
    if roles.is_researcher(user):
        return studies
    if roles.is_annotator(user):
        return studies.filter(Q(annotators__isnull=True) | Q(annotators=user)).distinct()
    return studies.none()


def study_json(study):
    return {"slug": study.slug, "kind": study.kind, "title": study.title, "instructions": study.instructions,
            "annotations_per_item": study.annotations_per_item, "randomize_order": study.randomize_order,
            "allow_tie": study.allow_tie, "config": study.config,
            "annotators": sorted(study.annotators.values_list("username", flat=True)),
            "n_items": study.items.count(), "n_gold_items": study.items.filter(is_gold=True).count(),
            "n_judgments": study.judgments.count(), "created_at": study.created_at.isoformat()}


def spool(request):
    """Copy the request body to a temporary file, refusing bodies over the upload cap."""
    handle = tempfile.TemporaryFile()
    limit = settings.HUMEVAL_MAX_UPLOAD_BYTES
    copied = 0
    while True:
        chunk = request._request.read(1 << 20)
        if not chunk:
            break
        copied += len(chunk)
        if copied > limit:
            handle.close()
            raise BatchInvalid([f"line 1: the body is larger than {limit} bytes (HUMEVAL_MAX_UPLOAD_BYTES)"])
        handle.write(chunk)
    handle.seek(0)
    return handle


def errors_response(exc):
    return Response({"errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)


LINE_ERRORS = OpenApiResponse(OpenApiTypes.OBJECT, description='{"errors": ["line N: ..."]}')


class UploadView(APIView):
    """An admin upload of a raw file body: spool it (see `spool`), import it; a refused
    file (BatchInvalid, nothing written) is answered 400 {"errors": [...]}."""

    permission_classes = [IsAdminRole]
    parser_classes = [RawBody]

    def handle_exception(self, exc):
        if isinstance(exc, BatchInvalid):
            return errors_response(exc)
        return super().handle_exception(exc)


class StudyListView(APIView):
    """GET: the studies you may see. POST (admins): create a study from header fields."""

    permission_classes = [IsAuthenticated]

    def get_permissions(self):
        return [IsAdminRole()] if self.request.method == "POST" else [IsAuthenticated()]

    @extend_schema(operation_id="studies_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        return Response([study_json(s) for s in visible_studies(request.user)])

    @extend_schema(operation_id="studies_create", request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT})
    def post(self, request):
        """Body: the header's study object, e.g. {"slug", "kind", "title", ...}."""
        fields = request.data
        if not isinstance(fields, dict):
            return Response({"errors": ["line 1: the body must be a JSON object of study fields"]}, status=400)
        if Study.objects.filter(slug=fields.get("slug")).exists():
            return Response({"errors": [f"line 1: study {fields.get('slug')!r} already exists"]}, status=400)
        try:
            result = import_batch_bytes(json.dumps({"study": dict(fields)}).encode(), user=request.user, source="api")
        except BatchInvalid as exc:
            return errors_response(exc)
        return Response(study_json(result.study), status=status.HTTP_201_CREATED)


class StudyDetailView(APIView):
    @extend_schema(operation_id="studies_retrieve", responses={200: OpenApiTypes.OBJECT})
    def get(self, request, slug):
        study = get_object_or_404(visible_studies(request.user), slug=slug)
        return Response(study_json(study))


class BatchUploadView(UploadView):
    """POST the batch JSONL (application/x-ndjson). 400 {"errors": [...]} writes nothing."""

    @extend_schema(request={"application/x-ndjson": OpenApiTypes.STR},
                   responses={201: OpenApiResponse(OpenApiTypes.OBJECT, description='{"study", "created", "skipped"}'),
                              400: LINE_ERRORS})
    def post(self, request, slug):
        with spool(request) as body:
            result = import_batch(body, source="api", user=request.user, expected_slug=slug)
        return Response(result.as_json(), status=status.HTTP_201_CREATED)


class JudgmentsExportView(APIView):
    """GET ?format=csv|jsonl (researchers): the judgments file, streamed."""

    permission_classes = [IsResearcherRole]
    content_negotiation_class = FormatIsNotARenderer

    @extend_schema(parameters=[OpenApiParameter("format", str, enum=["csv", "jsonl"])],
                   responses={(200, "text/csv"): OpenApiTypes.STR, (200, "application/x-ndjson"): OpenApiTypes.STR})
    def get(self, request, slug):
        study = get_object_or_404(Study, slug=slug)
        fmt = request.query_params.get("format", "csv")
        if fmt not in EXPORT_TYPES:
            return Response({"errors": ["format must be csv or jsonl"]}, status=400)
        response = StreamingHttpResponse(iter_judgments(export_judgment_rows(study), fmt),
                                         content_type=EXPORT_TYPES[fmt])
        response["Content-Disposition"] = f'attachment; filename="{study.slug}-judgments.{fmt}"'
        return response


class PredictionsUploadView(UploadView):
    """POST the predictions CSV (admins); rows must belong to this study."""

    @extend_schema(request={"text/csv": OpenApiTypes.STR},
                   responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description='{"studies", "created", "updated", "skipped"}'),
                              400: LINE_ERRORS})
    def post(self, request, slug):
        get_object_or_404(Study, slug=slug)
        with spool(request) as body:
            result = import_predictions(body, user=request.user, source="api", only_study=slug)
        return Response(result)
