"""Django admin for every annotate model (the web pages cover annotation and reports)."""
from django import forms
from django.contrib import admin

from annotate.models import Assignment, AuditLog, Batch, Item, Judgment, Participant, Prediction, Study


class StudyForm(forms.ModelForm):
    class Meta:
        model = Study
        fields = "__all__"  # noqa: DJ007 - the admin edits every field

    def clean_recruitment(self):
        """The header's check of `recruitment` (annotate.studies.batch_format.recruitment_flaw)."""
        from annotate.studies.batch_format import recruitment_flaw

        value = self.cleaned_data.get("recruitment")
        if value not in (None, {}) and (reason := recruitment_flaw(value)):
            raise forms.ValidationError(reason)
        return value or None

    def clean_comprehension(self):
        """The header's check of `comprehension` (annotate.participants.comprehension.comprehension_flaw)."""
        from annotate.participants.comprehension import comprehension_flaw
        from annotate.studies.batch_format import KEY_RE, MAX_ID_CHARS

        value = self.cleaned_data.get("comprehension")
        if value and (reason := comprehension_flaw(value, KEY_RE, MAX_ID_CHARS)):
            raise forms.ValidationError(f"'comprehension' {reason}")
        return value or []


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    form = StudyForm
    list_display = ("slug", "kind", "title", "status", "annotations_per_item", "allow_tie", "created_at")
    list_filter = ("kind", "status")
    list_editable = ("status",)
    search_fields = ("slug", "title")
    filter_horizontal = ("annotators", "researchers")
    readonly_fields = ("entry_key", "places_taken")

    def save_model(self, request, obj, form, change):
        """`recruitment` set here draws the link's key as a batch header does
        (annotate/participants/recruitment.py); a study that lists annotators still takes no link."""
        from annotate.participants.recruitment import new_entry_key

        if obj.recruitment and not obj.entry_key:
            obj.entry_key = new_entry_key()
        super().save_model(request, obj, form, change)


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    """Participants from recruiting platforms (docs/running-a-study.md); read-only: they
    are made by participant links."""

    list_display = ("id", "study", "platform", "external_id", "status", "started_at", "finished_at")
    list_filter = ("study", "platform")
    search_fields = ("external_id", "platform_session_id")
    list_select_related = ("study",)
    readonly_fields = [f.name for f in Participant._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ("id", "study", "source", "created", "skipped", "uploaded_by", "created_at")
    list_filter = ("study",)
    raw_id_fields = ("uploaded_by",)
    readonly_fields = ("sha256", "created", "skipped", "created_at")


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("item_id", "study", "position", "is_gold", "n_assigned", "n_completed")
    list_filter = ("study", "is_gold")
    search_fields = ("item_id",)
    raw_id_fields = ("batch",)
    # The counters are the assignment engine's bookkeeping, kept in step with assignments:
    # a hand edit would break its overlap guarantee (and is no change of the study's data).
    readonly_fields = ("content_hash", "n_assigned", "n_completed")
    list_select_related = ("study",)


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("id", "study", "item", "annotator", "created_at", "expires_at", "completed_at", "seconds")
    list_filter = ("study",)
    search_fields = ("item__item_id", "annotator__username")
    raw_id_fields = ("item", "annotator")
    list_select_related = ("study", "item", "annotator")


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ("id", "study", "item", "annotator", "question", "value", "seconds", "submitted_at")
    list_filter = ("study", "question")
    search_fields = ("item__item_id", "annotator__username", "value")
    raw_id_fields = ("item", "assignment", "annotator")
    list_select_related = ("study", "item", "annotator")


@admin.register(Prediction)
class PredictionAdmin(admin.ModelAdmin):
    list_display = ("id", "study", "item", "evaluator", "annotator", "question", "value")
    list_filter = ("study", "evaluator")
    search_fields = ("item__item_id", "evaluator", "annotator")
    raw_id_fields = ("item",)
    list_select_related = ("study", "item")


@admin.register(AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    list_display = ("id", "created_at", "study", "user", "action", "object_type", "object_id")
    list_filter = ("action",)
    search_fields = ("object_id", "user__username")
    readonly_fields = ("study", "user", "action", "object_type", "object_id", "before", "after", "created_at")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
