from django.contrib import admin

from .models import Job, JobItem


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "state", "done", "total", "n_errors", "created_at", "finished_at")
    list_filter = ("kind", "state")
    readonly_fields = ("created_at", "started_at", "finished_at", "updated_at")


@admin.register(JobItem)
class JobItemAdmin(admin.ModelAdmin):
    list_display = ("job", "key", "worker", "error", "finished_at")
    list_filter = ("job",)
