"""Top-level URLs: web pages, the REST API and its OpenAPI schema, Django admin."""
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from humeval.login_guard import AdminLoginForm
from models_runtime.plan_support.plan_page import new_plan
from models_runtime.views import jobs_panel

admin.site.login_form = AdminLoginForm

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/", include("annotate.api_urls")),
    path("api/", include("models_runtime.api_urls")),
    path("studies/<slug:slug>/jobs/", jobs_panel, name="dashboard-jobs"),
    path("plans/new/", new_plan, name="plan-new"),
    path("", include("annotate.urls")),
]
