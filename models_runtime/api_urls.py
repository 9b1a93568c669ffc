"""REST endpoints for runtime jobs."""
from django.urls import path

from models_runtime.api import JobDetailView, JobFileView, JobListView, PipelineView

urlpatterns = [
    path("jobs/", JobListView.as_view(), name="api-jobs"),
    path("jobs/<int:pk>/", JobDetailView.as_view(), name="api-job"),
    path("jobs/<int:pk>/files/<str:name>", JobFileView.as_view(), name="api-job-file"),
    path("pipelines/", PipelineView.as_view(), name="api-pipelines"),
]
