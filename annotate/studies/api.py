"""Studies, batch upload, judgments export and predictions upload (interfaces.md REST API).

GET /api/studies/ lists the studies the user may see; POST (admins) creates one from
header fields. Batch and predictions bodies are spooled to a temporary file (bounded
memory) and go through the same importers as the management commands.
"""
import json
import tempfile

from django.conf import settings
from django.http import QueryDict, StreamingHttpResponse
from django.utils.datastructures import MultiValueDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import UnsupportedMediaType
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser, DataAndFiles
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import is_form_media_type
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.access import study_for
from annotate.api.permissions import IsAdminRole
from annotate.api.serializers import (
    BatchResultSerializer,
    DetailSerializer,
    LineErrorsSerializer,
    PredictionsResultSerializer,
    StudyCreateSerializer,
    StudySerializer,
)
from annotate.kinds import all_kinds
from annotate.models import Study
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.importing import import_batch, import_batch_bytes
from annotate.studies.judgments_csv import iter_judgments
from annotate.studies.judgments_io import export_judgment_rows, import_predictions

NDJSON = "application/x-ndjson"
EXPORT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": NDJSON + "; charset=utf-8"}
JUDGMENTS_CSV = "Header: study,item_id,annotator,question,value,shown_order,seconds,submitted_at"
EXAMPLE_KIND = all_kinds()[0]  # the examples show the first registered kind's example study
BATCH_EXAMPLE = "\n".join(json.dumps(line) for line in [
    {"study": {"slug": "example", "kind": EXAMPLE_KIND.name, "title": "An example study",
               **EXAMPLE_KIND.example_header()}}, *EXAMPLE_KIND.example_items()]) + "\n"
PREDICTIONS_EXAMPLE = ("study,item_id,evaluator,annotator,question,value\n"
                       + "".join(f"example,{item['item_id']},rougeL,,{target.candidate},0.31\n"
                                 for item in EXAMPLE_KIND.example_items()[:1]
                                 for target in EXAMPLE_KIND.score_targets(item)[:1]))


class RawBody(BaseParser):
    """Accept any body and read none of it: the views spool the raw stream themselves, after
    the permission check. DRF's session CSRF check and Django's error pages read
    `request.POST` of a form-typed body; they get an empty form (returning the stream here
    handed them the request object, and a form POST by a non-admin crashed as a bare 500)."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return DataAndFiles(QueryDict(""), MultiValueDict())


class FormatIsNotARenderer(BaseContentNegotiation):
    """`?format=csv|jsonl` picks the export format, not a DRF renderer: always JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None


def study_body(study, user):
    """One study as `user` may see it (StudySerializer: researcher fields only for readers)."""
    readable = {study.pk} if Study.objects.readable_by(user).filter(pk=study.pk).exists() else set()
    return StudySerializer(study, context={"readable": readable}).data


def spool(request):
    """Copy the request body to a temporary file, refusing bodies over the upload cap."""
    handle = tempfile.TemporaryFile()  # noqa: SIM115 (returned open; the caller closes it)
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


LINE_ERRORS = OpenApiResponse(LineErrorsSerializer, description="The file was refused; nothing was written.")
NOT_FOUND = OpenApiResponse(DetailSerializer, description="No such study, or one you may not see.")
FORBIDDEN = OpenApiResponse(DetailSerializer, description="Not signed in, or your role may not do this.")
FORM_REFUSED = "Send the file itself as the request body (application/x-ndjson or text/csv), not a form."
NOT_A_FORM = OpenApiResponse(DetailSerializer, description="A form or multipart body: " + FORM_REFUSED)


class UploadView(APIView):
    """An admin upload of a raw file body: spool it (see `spool`), import it; a refused
    file (BatchInvalid, nothing written) is answered 400 {"errors": [...]}."""

    permission_classes = [IsAdminRole]
    parser_classes = [RawBody]

    def initial(self, request, *args, **kwargs):
        """Sign-in, CSRF and the admin check first (403), then the body's type: the file is
        the body itself, so a form or multipart post is refused 415 before it is read."""
        super().initial(request, *args, **kwargs)
        if is_form_media_type(request.content_type):
            raise UnsupportedMediaType(request.content_type, detail=FORM_REFUSED)

    def handle_exception(self, exc):
        if isinstance(exc, BatchInvalid):
            return errors_response(exc)
        return super().handle_exception(exc)


class StudyListView(APIView):
    """GET: the studies you may see. POST (admins): create a study from header fields."""

    permission_classes = [IsAuthenticated]

    def get_permissions(self):
        return [IsAdminRole()] if self.request.method == "POST" else [IsAuthenticated()]

    @extend_schema(operation_id="studies_list", responses={200: StudySerializer(many=True), 403: FORBIDDEN},
                   summary="The studies you may annotate or read (annotators see fewer fields).")
    def get(self, request):
        readable = set(Study.objects.readable_by(request.user).values_list("pk", flat=True))
        studies = Study.objects.visible_to(request.user)
        return Response(StudySerializer(studies, many=True, context={"readable": readable}).data)

    @extend_schema(operation_id="studies_create", request=StudyCreateSerializer,
                   responses={201: StudySerializer, 400: LINE_ERRORS, 403: FORBIDDEN,
                              415: OpenApiResponse(DetailSerializer, description="A form or multipart body.")},
                   summary="Create an empty study from header fields (admins).")
    def post(self, request):
        """Body: the header's study object, e.g. {"slug", "kind", "title", ...}."""
        if is_form_media_type(request.content_type):  # its values are lists and files, not header fields
            raise UnsupportedMediaType(request.content_type, detail="Send the study fields as a JSON object.")
        fields = request.data
        if not isinstance(fields, dict):
            return Response({"errors": ["line 1: the body must be a JSON object of study fields"]}, status=400)
        if Study.objects.filter(slug=fields.get("slug")).exists():
            return Response({"errors": [f"line 1: study {fields.get('slug')!r} already exists"]}, status=400)
        try:
            result = import_batch_bytes(json.dumps({"study": dict(fields)}).encode(), user=request.user, source="api")
        except BatchInvalid as exc:
            return errors_response(exc)
        return Response(study_body(result.study, request.user), status=status.HTTP_201_CREATED)


class StudyDetailView(APIView):
    @extend_schema(operation_id="studies_retrieve", responses={200: StudySerializer, 403: FORBIDDEN, 404: NOT_FOUND})
    def get(self, request, slug):
        return Response(study_body(study_for(request.user, slug), request.user))


class BatchUploadView(UploadView):
    """POST the batch JSONL (application/x-ndjson). 400 {"errors": [...]} writes nothing."""

    @extend_schema(request={NDJSON: OpenApiTypes.STR},
                   examples=[OpenApiExample("Header and one item", request_only=True, media_type=NDJSON,
                                            value=BATCH_EXAMPLE)],
                   responses={201: BatchResultSerializer, 400: LINE_ERRORS, 403: FORBIDDEN, 415: NOT_A_FORM},
                   summary="Load a batch file (admins): all lines or none.")
    def post(self, request, slug):
        with spool(request) as body:
            result = import_batch(body, source="api", user=request.user, expected_slug=slug)
        return Response(BatchResultSerializer(result.as_json()).data, status=status.HTTP_201_CREATED)


class JudgmentsExportView(APIView):
    """GET ?format=csv|jsonl (the study's researchers): the judgments file, streamed."""

    content_negotiation_class = FormatIsNotARenderer

    @extend_schema(parameters=[OpenApiParameter("format", str, enum=list(EXPORT_TYPES), default="csv",
                                                description="csv or jsonl (one JSON object a line, same keys)")],
                   responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description=JUDGMENTS_CSV),
                              (200, NDJSON): OpenApiTypes.STR,
                              400: OpenApiResponse(LineErrorsSerializer, description="Unknown format."),
                              403: FORBIDDEN, 404: NOT_FOUND},
                   summary="Export the study's judgments (its researchers).")
    def get(self, request, slug):
        study = study_for(request.user, slug, "read")
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
                   examples=[OpenApiExample("A metric score", request_only=True, media_type="text/csv",
                                            value=PREDICTIONS_EXAMPLE)],
                   responses={200: PredictionsResultSerializer, 400: LINE_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND,
                              415: NOT_A_FORM},
                   summary="Load automatic evaluators' predictions (admins).")
    def post(self, request, slug):
        study_for(request.user, slug, "read")
        with spool(request) as body:
            result = import_predictions(body, user=request.user, source="api", only_study=slug)
        return Response(PredictionsResultSerializer(result).data)
