"""REST endpoints an annotator uses (interfaces.md):

- POST /api/studies/{slug}/assignments/next/ -> 200 {"assignment", "item_id", "item",
  "questions"} or 204 when nothing is left for this annotator (409 when the study is
  not open: draft, paused or closed);
- POST /api/assignments/{id}/judgments/ {question: value, ..., "seconds": float} ->
  201 with the stored judgments, or 200 with the already stored ones on a repeat;
  with "edit": true (or PUT/PATCH) the values replace earlier ones while the item is not
  complete (409 otherwise), and the change is audited.
Annotators only ever see and write their own assignments (others' ids answer 404), and
only while they may annotate the study (removed from its list: 403).
"""
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.access import NotAllowed, study_for
from annotate.api.serializers import (
    AnswerErrorsSerializer,
    AnswersSerializer,
    DetailSerializer,
    NextAssignmentSerializer,
    SubmitResultSerializer,
)
from annotate.assignment import next_assignment
from annotate.display import assignment_payload
from annotate.models import OPEN
from annotate.submission import AssignmentGone, EditNotAllowed, SubmissionError, edit, submit

CONTROL_KEYS = ("seconds", "edit")
GONE = OpenApiResponse(DetailSerializer, description="Not your assignment, or it expired and went back to the pool.")
REFUSED = OpenApiResponse(DetailSerializer, description="Not signed in, or you may not annotate this study.")
NO_STUDY = OpenApiResponse(DetailSerializer, description="No such study, or one you may not see.")
ANSWER_ERRORS = OpenApiResponse(AnswerErrorsSerializer, description="Invalid answers; nothing was stored.")


def _truthy(value):
    return value is True or str(value).lower() in {"1", "true", "yes", "on"}


class NextAssignmentView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None,
                   responses={200: NextAssignmentSerializer,
                              204: OpenApiResponse(None, description="Nothing is left for you in this study."),
                              403: REFUSED,
                              404: NO_STUDY,
                              409: OpenApiResponse(DetailSerializer, description="The study is not open "
                                                   "(draft, paused or closed).")},
                   summary="The next item for the calling annotator (the open one if any).")
    def post(self, request, slug):
        study = study_for(request.user, slug, "annotate")
        try:
            assignment = next_assignment(study, request.user)
        except NotAllowed:  # removed from the study between the two checks
            return Response({"detail": "You are not an annotator of this study."}, status=status.HTTP_403_FORBIDDEN)
        if assignment is None and study.status != OPEN:
            return Response({"detail": f"This study is {study.status}: it hands out no items."},
                            status=status.HTTP_409_CONFLICT)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(NextAssignmentSerializer(assignment_payload(assignment)).data)


def _result(assignment_id, created, judgments):
    return SubmitResultSerializer({"assignment": assignment_id, "created": created, "judgments": judgments}).data


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
        except NotAllowed:
            return Response({"detail": "You may no longer annotate this study."}, status=status.HTTP_403_FORBIDDEN)
        except EditNotAllowed as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(_result(assignment_id, created, judgments), status=code)

    @extend_schema(request=AnswersSerializer,
                   responses={201: SubmitResultSerializer,
                              200: OpenApiResponse(SubmitResultSerializer, description="A repeat, or an edit: the "
                                                   "stored judgments."),
                              400: ANSWER_ERRORS, 403: REFUSED, 404: GONE,
                              409: OpenApiResponse(DetailSerializer, description="Edit refused: not submitted yet, "
                                                   "or the item is complete.")},
                   summary="Submit the answers of an assignment (idempotent); \"edit\": true replaces them.")
    def post(self, request, pk):
        return self._answer(request, pk, editing=False)

    EDIT_RESPONSES = {200: SubmitResultSerializer, 400: ANSWER_ERRORS, 403: REFUSED, 404: GONE,
                      409: OpenApiResponse(DetailSerializer, description="Not submitted yet, or the item is complete.")}

    @extend_schema(request=AnswersSerializer, responses=EDIT_RESPONSES,
                   summary="Edit submitted answers while the item is not complete (audited).")
    def put(self, request, pk):
        return self._answer(request, pk, editing=True)

    @extend_schema(request=AnswersSerializer, responses=EDIT_RESPONSES,
                   summary="Edit submitted answers while the item is not complete (audited).")
    def patch(self, request, pk):
        return self._answer(request, pk, editing=True)
