"""POST /api/jobs/ (admins start a job), GET /api/jobs/ (admins: the latest 50) and
GET /api/jobs/{id}/ (its state and progress).

Body of POST: {"kind": "score", "params": {...}} or the params flat beside "kind"
({"kind": "score", "study": "slug", "metrics": ["rougeL"]}); or multipart, with `kind`,
`params` (JSON text) and the kind's input files as file fields (`input`): no server path is
ever taken here (job_files.py). It answers 201 at once with the queued job: the workers
run it, or without a broker a thread of this process (never the request itself).
GET /api/jobs/{id}/files/<name> downloads one of the job's own files (admins, researchers).

A job is read by admins, its creator, and researchers who may read the study it works on
(`params.study`; a job without a study: every researcher; a job about a study that does
not exist, e.g. a plan before its import step: admins). Anyone else gets 404, as for a
job that does not exist.
"""
import json

from django.http import FileResponse, Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.services import (
    DetailSerializer,
    IsAdminRole,
    IsoDateTimeField,
    is_admin,
    is_researcher,
    json_as,
    may_read_results,
)

from .backends.config import ModelNotAvailable
from .job_support.job_files import job_file_path, redact, submit_web_job
from .job_support.kinds import JobParamsError, job_kinds
from .job_support.reporting import job_json
from .metrics.registry import UnknownMetric
from .models import Job
from .plans import start_uploaded_plan


class JobKindField(serializers.ChoiceField):
    """The registered job kinds, read when the schema is generated (kinds register at import)."""

    def __init__(self, **kwargs):
        super().__init__(choices=[], **kwargs)
        self.choices = job_kinds()


@extend_schema_serializer(examples=[OpenApiExample("Score a study", request_only=True,
                                                   value={"kind": "score", "params": {"study": "reviews-pairwise",
                                                                                      "metrics": ["rougeL"]}})])
class JobCreateSerializer(serializers.Serializer):
    """A job to start. The params may also be given flat beside `kind` (runtime.md lists
    each kind's params)."""

    kind = JobKindField()
    params = serializers.DictField(required=False, help_text="The kind's parameters, e.g. study, metrics, model. "
                                  "Never a server path: input files are multipart file fields (`input`).")


class JobProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class JobErrorSerializer(serializers.Serializer):
    item = serializers.CharField(required=False, help_text="The item that failed; absent for job-level errors.")
    error = serializers.CharField()


class JobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField(help_text="One of the registered job kinds.")
    params = json_as(serializers.DictField())
    state = serializers.ChoiceField(choices=Job.STATES)
    progress = JobProgressSerializer()
    errors = json_as(JobErrorSerializer(many=True), help_text="Job-level errors, then the first 100 item errors.")
    n_errors = serializers.IntegerField()
    result = json_as(serializers.DictField(allow_null=True), allow_null=True, help_text="The kind's summary.")
    timings = json_as(serializers.DictField(child=serializers.FloatField()), help_text="Seconds per stage.")
    attempts = serializers.IntegerField(help_text="How many times a worker picked the job up.")
    study = serializers.CharField(help_text="The slug of the study the job works on, or empty.")
    step = json_as(serializers.DictField(), help_text='Progress inside the running chunk: {"done", "total", '
                   '"unit"} ({} between chunks).')
    heartbeat_at = IsoDateTimeField(allow_null=True, help_text="Last sign of life of the process running it.")
    files = serializers.ListField(child=serializers.CharField(),
                                  help_text="The job's own files: GET /api/jobs/{id}/files/<name>.")
    created_at = IsoDateTimeField(allow_null=True)
    started_at = IsoDateTimeField(allow_null=True)
    finished_at = IsoDateTimeField(allow_null=True)


class JobListSerializer(serializers.Serializer):
    jobs = JobSerializer(many=True, help_text="The latest 50 jobs, newest first.")


def job_body(job):
    return JobSerializer(redact(job_json(job))).data


def refusal(exc) -> Response:
    """400 with why a job or plan was refused (every problem of a plan in `errors`), no
    server path in it."""
    body = {"error": redact(str(exc))}
    if getattr(exc, "errors", None):
        body["errors"] = redact(list(exc.errors))
    return Response(body, status=status.HTTP_400_BAD_REQUEST)


class JobErrorBody(serializers.Serializer):
    error = serializers.CharField(help_text="Why the job was not started.")
    errors = serializers.ListField(child=serializers.CharField(), required=False,
                                   help_text="A plan's problems, one `where: what` each (all of them at once).")


class JobListView(APIView):
    permission_classes = [IsAdminRole]

    @extend_schema(request=JobCreateSerializer,
                   responses={201: JobSerializer, 400: JobErrorBody, 403: DetailSerializer},
                   summary="Start a runtime job (admins).")
    def post(self, request):
        uploads = dict(request.FILES.items()) if request.FILES else {}
        if hasattr(request.data, "getlist"):  # multipart: kind, params as JSON text, files
            body = {k: v for k, v in request.data.items() if k not in uploads}
            if isinstance(body.get("params"), str):
                try:
                    body["params"] = json.loads(body["params"])
                except ValueError:
                    return Response({"error": "params must be JSON text"}, status=status.HTTP_400_BAD_REQUEST)
        else:
            body = request.data if isinstance(request.data, dict) else {}
        kind = body.get("kind")
        if not isinstance(kind, str) or not kind:
            return Response({"error": "kind is required (e.g. score)"}, status=status.HTTP_400_BAD_REQUEST)
        if kind in ("pipeline", "plan_generate"):  # plans name uploaded files, never server paths
            return Response({"error": "start a study plan with POST /api/pipelines/ (the plan and its files)"},
                            status=status.HTTP_400_BAD_REQUEST)
        params = body.get("params")
        if params is None:
            params = {k: v for k, v in body.items() if k != "kind"}
        if not isinstance(params, dict):
            return Response({"error": "params must be an object"}, status=status.HTTP_400_BAD_REQUEST)
        try:
            job = submit_web_job(kind, params, uploads, user=request.user)
        except (ValueError, TypeError, ModelNotAvailable, UnknownMetric, OSError) as exc:
            return refusal(exc)
        return Response(job_body(job), status=status.HTTP_201_CREATED)

    @extend_schema(operation_id="jobs_list", responses={200: JobListSerializer, 403: DetailSerializer},
                   summary="The latest 50 jobs (admins).")
    def get(self, request):
        jobs = Job.objects.all()[:50]
        return Response(JobListSerializer({"jobs": [redact(job_json(j)) for j in jobs]}).data)


def may_read_job(user, job) -> bool:
    """Its creator, or whoever may read the results of the study it works on (`job.study`:
    params `study`, or `slug` for the file kinds)."""
    if job.created_by_id is not None and job.created_by_id == user.pk:
        return True
    return may_read_results(user, job.study or None)


class JobDetailView(APIView):
    @extend_schema(responses={200: JobSerializer, 403: DetailSerializer,
                              404: OpenApiResponse(DetailSerializer, description="No such job, or not yours to read.")},
                   summary="A job's state, progress and errors.")
    def get(self, request, pk):
        job = Job.objects.filter(pk=pk).first()
        if job is None or not may_read_job(request.user, job):
            raise Http404("No such job.")
        return Response(job_body(job))


class JobFileView(APIView):
    """One of the job's own files (its uploads, its outputs), for admins and researchers who
    may read the job. Only names in the job's `files` are served: no path reaches the disk."""

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY,
                                                                                 description="The file's bytes."),
                              404: OpenApiResponse(DetailSerializer, description="No such job or file.")},
                   summary="Download a job's file.")
    def get(self, request, pk, name):
        job = Job.objects.filter(pk=pk).first()
        if (job is None or not (is_admin(request.user) or is_researcher(request.user))
                or not may_read_job(request.user, job) or name not in (job.files or [])):
            raise Http404("No such file.")
        path = job_file_path(job, name)
        if not path.is_file():
            raise Http404("The job has not written this file (yet).")
        return FileResponse(open(path, "rb"), as_attachment=True, filename=name)  # noqa: SIM115 - FileResponse closes it
class PipelineCreateSerializer(serializers.Serializer):
    """multipart/form-data: the plan (a JSON file or string) and its input files, named as
    the plan names them (never server paths)."""

    plan = serializers.FileField(help_text="The study plan JSON (docs/runtime.md).")
    files = serializers.ListField(child=serializers.FileField(), required=False,
                                  help_text="The input files the plan names (e.g. dev_questions.json).")


class PipelineView(APIView):
    permission_classes = [IsAdminRole]

    @extend_schema(request={"multipart/form-data": PipelineCreateSerializer},
                   responses={202: JobSerializer, 400: JobErrorBody, 403: DetailSerializer},
                   summary="Run a study plan on uploaded files (admins): 202 with the queued chain.")
    def post(self, request):
        plan = request.FILES.get("plan") or request.data.get("plan")
        if plan is None:
            return Response({"error": 'send the plan as the field "plan"'}, status=status.HTTP_400_BAD_REQUEST)
        uploads = [f for key in request.FILES for f in request.FILES.getlist(key) if key != "plan"]
        try:
            job = start_uploaded_plan(plan, uploads, request.user)
        except (JobParamsError, ModelNotAvailable, UnknownMetric) as exc:
            return refusal(exc)
        return Response(job_body(job), status=status.HTTP_202_ACCEPTED)
