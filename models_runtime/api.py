"""POST /api/jobs/ (admins start a job), GET /api/jobs/ (admins: the latest 50) and
GET /api/jobs/{id}/ (its state and progress).

Body of POST: {"kind": "score", "params": {...}} or the params flat beside "kind"
({"kind": "score", "study": "slug", "metrics": ["rougeL"]}). Without a broker the job runs
inside the request and the answer shows it finished; with one, it answers 201 at once
with the queued job.

A job is read by admins, its creator, and researchers who may read the study it works on
(`params.study`; a job without a study: every researcher). Anyone else gets 404, as for
a job that does not exist.
"""
from django.http import Http404
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.services import DetailSerializer, IsAdminRole, IsoDateTimeField, json_as, may_read_results

from .backends.config import ModelNotAvailable
from .jobs import JobParamsError, job_json, job_kinds, submit_job
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
    params = serializers.DictField(required=False, help_text="The kind's parameters, e.g. study, metrics, model.")


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
    created_at = IsoDateTimeField(allow_null=True)
    started_at = IsoDateTimeField(allow_null=True)
    finished_at = IsoDateTimeField(allow_null=True)


class JobListSerializer(serializers.Serializer):
    jobs = JobSerializer(many=True, help_text="The latest 50 jobs, newest first.")


def job_body(job):
    return JobSerializer(job_json(job)).data


class JobErrorBody(serializers.Serializer):
    error = serializers.CharField(help_text="Why the job was not started.")


class JobListView(APIView):
    permission_classes = [IsAdminRole]

    @extend_schema(request=JobCreateSerializer,
                   responses={201: JobSerializer, 400: JobErrorBody, 403: DetailSerializer},
                   summary="Start a runtime job (admins).")
    def post(self, request):
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
            job = submit_job(kind, params, user=request.user)
        except (JobParamsError, ModelNotAvailable, UnknownMetric) as exc:
            return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(job_body(job), status=status.HTTP_201_CREATED)

    @extend_schema(operation_id="jobs_list", responses={200: JobListSerializer, 403: DetailSerializer},
                   summary="The latest 50 jobs (admins).")
    def get(self, request):
        jobs = Job.objects.all()[:50]
        return Response(JobListSerializer({"jobs": [job_json(j) for j in jobs]}).data)


def may_read_job(user, job) -> bool:
    """Its creator, or whoever may read the results of the study it works on."""
    if job.created_by_id is not None and job.created_by_id == user.pk:
        return True
    return may_read_results(user, job.params.get("study") if isinstance(job.params, dict) else None)


class JobDetailView(APIView):
    @extend_schema(responses={200: JobSerializer, 403: DetailSerializer,
                              404: OpenApiResponse(DetailSerializer, description="No such job, or not yours to read.")},
                   summary="A job's state, progress and errors.")
    def get(self, request, pk):
        job = Job.objects.filter(pk=pk).first()
        if job is None or not may_read_job(request.user, job):
            raise Http404("No such job.")
        return Response(job_body(job))


class PipelineCreateSerializer(serializers.Serializer):
    """multipart/form-data: the plan (a JSON file or string) and its input files, named as
    the plan names them (never server paths)."""

    plan = serializers.FileField(help_text="The study plan JSON (docs/runtime.md).")
    files = serializers.ListField(child=serializers.FileField(), required=False,
                                  help_text="The input files the plan names (e.g. dev_questions.json).")


class PipelineView(APIView):
    permission_classes = [IsAdminRole]

    @extend_schema(request={"multipart/form-data": PipelineCreateSerializer},
                   responses={201: JobSerializer, 400: JobErrorBody, 403: DetailSerializer},
                   summary="Run a study plan on uploaded files (admins).")
    def post(self, request):
        plan = request.FILES.get("plan") or request.data.get("plan")
        if plan is None:
            return Response({"error": 'send the plan as the field "plan"'}, status=status.HTTP_400_BAD_REQUEST)
        uploads = [f for key in request.FILES for f in request.FILES.getlist(key) if key != "plan"]
        try:
            job = start_uploaded_plan(plan, uploads, request.user)
        except (JobParamsError, ModelNotAvailable, UnknownMetric) as exc:
            return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(job_body(job), status=status.HTTP_201_CREATED)
