"""GET /api/studies/{slug}/participants.csv (the study's researchers): one row per
participant from a recruiting platform, to approve or reject them there
(annotate/participants/participation.py, `participant_table`)."""
import io

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.views import APIView

from annotate.access import study_for
from annotate.participants.participation import participant_table
from evaluation.csv_cells import SafeWriter


class ParticipantsCsvView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description=(
                       "platform,participant,study_id,session_id,status,items,gold_accuracy,median_seconds,"
                       "flagged,reason,started_at,finished_at, then pre:<key> and post:<key> answers")),
                              403: OpenApiResponse(description="Not one of the study's researchers."),
                              404: OpenApiResponse(description="No such study, or one you may not see.")},
                   summary="The study's participants with status, quality and flags (its researchers).")
    def get(self, request, slug):
        study = study_for(request.user, slug, "read")
        header, rows = participant_table(study)
        out = io.StringIO()
        writer = SafeWriter(out)
        writer.writerow(header)
        writer.writerows(rows)
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{study.slug}-participants.csv"'
        return response
