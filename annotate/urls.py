"""Web pages: login, annotator home, task pages, researcher dashboard, batch upload."""
from django.contrib.auth import views as auth_views
from django.urls import path

from annotate.desk.views import home, item_actions, mine, task
from annotate.participants import views as participant
from annotate.planning import views as planning
from annotate.reports import dashboard
from annotate.reports import methods_view as methods
from annotate.reports import quality_view as quality
from annotate.studies import upload_view as upload
from humeval.login_guard import LoginForm

urlpatterns = [
    path("studies/<slug:slug>/upload/", upload.upload_to_study, name="study-upload"),
    path("batches/upload/", upload.upload_new, name="batch-upload"),
    path("studies/<slug:slug>/", dashboard.dashboard, name="dashboard"),
    path("studies/<slug:slug>/methods/", methods.methods, name="study-methods"),
    path("studies/<slug:slug>/plan/", planning.plan, name="study-plan"),
    path("studies/<slug:slug>/plan/runs/<str:run_id>/", planning.plan_run, name="study-plan-run"),
    path("studies/<slug:slug>/progress/", dashboard.progress, name="dashboard-progress"),
    path("studies/<slug:slug>/report-panel/", dashboard.report_panel, name="dashboard-report"),
    path("studies/<slug:slug>/report-version/", dashboard.report_version, name="dashboard-report-version"),
    path("", home.home, name="home"),
    path("annotate/<slug:slug>/", task.task, name="annotate-task"),
    path("annotate/<slug:slug>/next/", task.next_item, name="annotate-next"),
    path("annotate/<slug:slug>/items/<int:pk>/submit/", task.submit_item, name="annotate-submit"),
    path("annotate/<slug:slug>/items/<int:pk>/edit/", task.edit_item, name="annotate-edit"),
    path("annotate/<slug:slug>/items/<int:pk>/skip/", item_actions.skip_item, name="annotate-skip"),
    path("annotate/<slug:slug>/items/<int:pk>/extend/", item_actions.extend_item, name="annotate-extend"),
    path("annotate/<slug:slug>/mine/", mine.my_judgments, name="annotate-mine"),
    path("annotate/<slug:slug>/mine/<int:pk>/edit/", mine.edit_judgment, name="annotate-mine-edit"),
    path("annotate/<slug:slug>/quality/", quality.quality, name="annotate-quality"),
    path("p/<slug:slug>/go/", participant.flow, name="participant-flow"),
    path("p/<slug:slug>/<str:key>/", participant.entry, name="participant-entry"),
    path("p/<slug:slug>/<str:key>/preview/", participant.preview, name="participant-preview"),
    path("studies/<slug:slug>/recruitment/", dashboard.recruitment_action, name="dashboard-recruitment"),
    path("login/", auth_views.LoginView.as_view(authentication_form=LoginForm), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
