"""REST endpoints an annotator uses (interfaces.md):

- POST /api/studies/{slug}/assignments/next/ -> 200 {"assignment", "item_id", "item",
  "questions"} or 204 when nothing is left for this annotator;
- POST /api/assignments/{id}/judgments/ {question: value, ..., "seconds": float} ->
  201 with the stored judgments, or 200 with the already stored ones on a repeat;
  with "edit": true (or PUT/PATCH) the values replace earlier ones while the item is not
  complete (409 otherwise), and the change is audited.
Annotators only ever see and write their own assignments (others' ids answer 404).
"""
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.assignment import NotAllowed, next_assignment
from annotate.display import assignment_payload
from annotate.models import Study
from annotate.submission import AssignmentGone, EditNotAllowed, SubmissionError, edit, submit

CONTROL_KEYS = ("seconds", "edit")


def judgment_json(judgment):
    return {"question": judgment.question, "value": judgment.value, "shown_order": judgment.shown_order,
            "seconds": judgment.seconds,
            "submitted_at": judgment.submitted_at.isoformat() if judgment.submitted_at else None}


def _truthy(value):
    return value is True or str(value).lower() in {"1", "true", "yes", "on"}


class NextAssignmentView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, 204: None},
                   summary="The next item for the calling annotator (the open one if any).")
    def post(self, request, slug):
        study = get_object_or_404(Study, slug=slug)
        try:
            assignment = next_assignment(study, request.user)
        except NotAllowed:
            return Response({"detail": "You are not an annotator of this study."}, status=status.HTTP_403_FORBIDDEN)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(assignment_payload(assignment))


class AssignmentJudgmentsView(APIView):
    permission_classes = [IsAuthenticated]

    def _answer(self, request, pk, editing):
        body = request.data
        if not hasattr(body, "items"):
            return Response({"errors": {"answers": "must be an object {question: value}"}}, status=400)
        answers = {k: v for k, v in body.items() if k not in CONTROL_KEYS}
        editing = editing or _truthy(body.get("edit", False))
        try:
            if editing:
                judgments = edit(pk, request.user, answers)
                code, created, assignment_id = status.HTTP_200_OK, False, pk
            else:
                assignment, judgments, created = submit(pk, request.user, answers, body.get("seconds"))
                code, assignment_id = (status.HTTP_201_CREATED if created else status.HTTP_200_OK), assignment.pk
        except SubmissionError as exc:
            return Response({"errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
        except AssignmentGone:
            return Response({"detail": "No such assignment for you (it may have expired)."},
                            status=status.HTTP_404_NOT_FOUND)
        except EditNotAllowed as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response({"assignment": assignment_id, "created": created,
                         "judgments": [judgment_json(j) for j in judgments]}, status=code)

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT, 201: OpenApiTypes.OBJECT},
                   summary="Submit the answers of an assignment (idempotent); \"edit\": true replaces them.")
    def post(self, request, pk):
        return self._answer(request, pk, editing=False)

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT},
                   summary="Edit submitted answers while the item is not complete (audited).")
    def put(self, request, pk):
        return self._answer(request, pk, editing=True)

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT},
                   summary="Edit submitted answers while the item is not complete (audited).")
    def patch(self, request, pk):
        return self._answer(request, pk, editing=True)
