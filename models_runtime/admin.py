from django.contrib import admin
from django.utils.html import format_html_join

from .models import Job, JobItem


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    """State (done / done_with_errors / failed ...) in the list; on the page, the job-level
    errors with their tracebacks, as they were stored."""

    list_display = ("id", "kind", "state", "done", "total", "n_errors", "attempts", "created_at", "finished_at")
    list_filter = ("kind", "state")
    readonly_fields = ("created_at", "started_at", "finished_at", "updated_at", "error_report")
    exclude = ("errors",)

    @admin.display(description="job errors")
    def error_report(self, job):
        if not job.errors:
            return "none"
        return format_html_join("", "<p>attempt {}: {}</p><pre>{}</pre>", (
            (e.get("attempt", "?"), e.get("error", ""), e.get("traceback", "")) for e in job.errors))


@admin.register(JobItem)
class JobItemAdmin(admin.ModelAdmin):
    list_display = ("job", "key", "worker", "error", "finished_at")
    list_filter = ("job",)
