"""POST /api/jobs/ (admins start a job) and GET /api/jobs/{id}/ (its state and progress).

Body of POST: {"kind": "score", "params": {...}} or the params flat beside "kind"
({"kind": "score", "study": "slug", "metrics": ["rougeL"]}). Without a broker the job runs
inside the request and the answer shows it finished; with one, it answers 201 at once
with the queued job.
"""
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.permissions import IsAdminRole
from annotate.roles import is_researcher

from .backends.config import ModelNotAvailable
from .jobs import JobParamsError, job_json, submit_job
from .metrics.registry import UnknownMetric
from .models import Job


class JobListView(APIView):
    permission_classes = [IsAdminRole]

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT})
    def post(self, request):
        body = request.data if isinstance(request.data, dict) else {}
        kind = body.get("kind")
        if not isinstance(kind, str) or not kind:
            return Response({"error": "kind is required (e.g. score)"}, status=status.HTTP_400_BAD_REQUEST)
        params = body.get("params")
        if params is None:
            params = {k: v for k, v in body.items() if k != "kind"}
        if not isinstance(params, dict):
            return Response({"error": "params must be an object"}, status=status.HTTP_400_BAD_REQUEST)
        try:
            job = submit_job(kind, params, user=request.user)
        except (JobParamsError, ModelNotAvailable, UnknownMetric) as exc:
            return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(job_json(job), status=status.HTTP_201_CREATED)

    @extend_schema(operation_id="jobs_list", responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        jobs = Job.objects.all()[:50]
        return Response({"jobs": [job_json(j) for j in jobs]})


class JobDetailView(APIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})
    def get(self, request, pk):
        job = get_object_or_404(Job, pk=pk)
        if not (is_researcher(request.user) or job.created_by_id == request.user.pk):
            return Response({"detail": "Only researchers may read jobs."}, status=status.HTTP_403_FORBIDDEN)
        return Response(job_json(job))
