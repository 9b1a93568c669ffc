"""REST endpoints of interfaces.md for studies, batches, assignments, judgments, reports;
token rotation."""
from django.urls import path

from annotate.api.tokens import RotateTokenView
from annotate.desk.api import (
    AssignmentExtendView,
    AssignmentJudgmentsView,
    AssignmentSkipView,
    NextAssignmentView,
)
from annotate.participants.api import ParticipantsCsvView
from annotate.planning.api import DesignRunDetailView, DesignRunListView
from annotate.reports.api import StudyReportVersionView, StudyReportView
from annotate.studies.api import (
    BatchUploadView,
    JudgmentsExportView,
    PredictionsUploadView,
    StudyDetailView,
    StudyListView,
)

urlpatterns = [
    path("studies/", StudyListView.as_view(), name="api-studies"),
    path("studies/<slug:slug>/", StudyDetailView.as_view(), name="api-study"),
    path("studies/<slug:slug>/batches/", BatchUploadView.as_view(), name="api-study-batches"),
    path("studies/<slug:slug>/judgments/", JudgmentsExportView.as_view(), name="api-study-judgments"),
    path("studies/<slug:slug>/predictions/", PredictionsUploadView.as_view(), name="api-study-predictions"),
    path("studies/<slug:slug>/assignments/next/", NextAssignmentView.as_view(), name="api-next-assignment"),
    path("assignments/<int:pk>/judgments/", AssignmentJudgmentsView.as_view(), name="api-assignment-judgments"),
    path("assignments/<int:pk>/skip/", AssignmentSkipView.as_view(), name="api-assignment-skip"),
    path("assignments/<int:pk>/extend/", AssignmentExtendView.as_view(), name="api-assignment-extend"),
    path("studies/<slug:slug>/participants.csv", ParticipantsCsvView.as_view(), name="api-study-participants"),
    path("studies/<slug:slug>/report/", StudyReportView.as_view(), name="api-study-report"),
    path("studies/<slug:slug>/report/version/", StudyReportVersionView.as_view(), name="api-study-report-version"),
    path("designs/", DesignRunListView.as_view(), name="api-designs"),
    path("designs/<str:run_id>/", DesignRunDetailView.as_view(), name="api-design"),
    path("token/rotate/", RotateTokenView.as_view(), name="api-token-rotate"),
]
