"""REST endpoints an annotator uses (interfaces.md):

- POST /api/studies/{slug}/assignments/next/ -> 200 {"assignment", "item_id", "item",
  "questions"} or 204 when nothing is left for this annotator (409 when the study is
  not open: draft, paused or closed);
- POST /api/assignments/{id}/judgments/ {question: value, ..., "seconds": float} ->
  201 with the stored judgments, or 200 with the already stored ones on a repeat;
  with "edit": true (or PUT/PATCH) the values replace earlier ones while the item is not
  complete (409 otherwise), and the change is audited.
- POST /api/assignments/{id}/skip/ {"reason", "comment"?} -> 201 with the stored `_skip`
  judgment (200 on a repeat); the item goes back to the pool, not to this annotator;
- POST /api/assignments/{id}/extend/ -> 200 {"expires_at", "extended"}: one more
  timeout for the owner's open assignment (once).
Annotators only ever see and write their own assignments (others' ids answer 404), and
only while they may annotate the study (removed from its list: 403).
Both are blinded (annotate.desk.blinding): options, similarity pair ids and the item id are
the assignment's opaque tokens, in the answers and in the stored judgments returned; a
real candidate id or pair id is refused (400).
"""
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.access import NotAllowed
from annotate.api.serializers import (
    AnswerErrorsSerializer,
    AnswersSerializer,
    DetailSerializer,
    ExtendResultSerializer,
    NextAssignmentSerializer,
    SkipResultSerializer,
    SkipSerializer,
    SubmitResultSerializer,
)
from annotate.desk.assignment import next_for
from annotate.desk.blinding import blinding_for
from annotate.desk.display import assignment_payload
from annotate.desk.submission import (
    AssignmentGone,
    EditNotAllowed,
    SkipRefused,
    SubmissionError,
    edit,
    extend,
    skip,
    submit,
)
from annotate.models import OPEN

CONTROL_KEYS = ("seconds", "edit", "comment", "pastes", "focus_losses")
GONE = OpenApiResponse(DetailSerializer, description="Not your assignment, or it expired and went back to the pool.")
REFUSED = OpenApiResponse(DetailSerializer, description="Not signed in, or you may not annotate this study.")
NO_STUDY = OpenApiResponse(DetailSerializer, description="No such study, or one you may not see.")
ANSWER_ERRORS = OpenApiResponse(AnswerErrorsSerializer, description="Invalid answers; nothing was stored.")


REFUSALS = (SubmissionError, AssignmentGone, NotAllowed, EditNotAllowed, SkipRefused)


def refusal(exc: Exception) -> Response:
    """The answer to a refused write on an assignment, the same for submit, edit and skip:
    400 with the errors, 404 (not yours, or expired), 403 (removed from the study), 409
    (the item is complete, or already answered)."""
    if isinstance(exc, SubmissionError):
        return Response({"errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, AssignmentGone):
        return Response({"detail": "No such assignment for you (it may have expired)."},
                        status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, NotAllowed):
        return Response({"detail": "You may no longer annotate this study."}, status=status.HTTP_403_FORBIDDEN)
    return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)


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
        desk, assignment = next_for(request.user, slug)  # decides access in its first statement
        desk.refuse("annotate")
        study = desk.study
        if assignment is None and study.status != OPEN:
            return Response({"detail": f"This study is {study.status}: it hands out no items."},
                            status=status.HTTP_409_CONFLICT)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(assignment_payload(assignment))  # NextAssignmentSerializer's shape, built by display


def judgment_row(judgment) -> dict:
    """A stored judgment as JudgmentSerializer writes it (submitted_at in Python's ISO 8601)."""
    return {"question": judgment.question, "value": judgment.value, "shown_order": judgment.shown_order,
            "seconds": judgment.seconds, "comment": judgment.comment,
            "submitted_at": judgment.submitted_at.isoformat() if judgment.submitted_at else None}


def _result(assignment, created, judgments):
    """The stored judgments as the annotator knows them: in the assignment's tokens (the
    assignment read by the submit itself: nothing is read again)."""
    blinding = blinding_for(assignment)
    return {"assignment": assignment.pk, "created": created,
            "judgments": [blinding.judgment(judgment_row(j)) for j in judgments]}


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
                assignment, judgments = edit(pk, request.user, answers, body.get("comment"), blinded=True)
                code, created = status.HTTP_200_OK, False
            else:
                assignment, judgments, created = submit(pk, request.user, answers, body.get("seconds"),
                                                        comment=body.get("comment"), blinded=True,
                                                        pastes=body.get("pastes"),
                                                        focus_losses=body.get("focus_losses"))
                code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        except REFUSALS as exc:
            return refusal(exc)
        return Response(_result(assignment, created, judgments), status=code)

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


class AssignmentSkipView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=SkipSerializer,
                   responses={201: SkipResultSerializer,
                              200: OpenApiResponse(SkipResultSerializer, description="A repeat: the stored skip."),
                              400: ANSWER_ERRORS, 403: REFUSED, 404: GONE,
                              409: OpenApiResponse(DetailSerializer, description="The item was already answered.")},
                   summary="\"I can't judge this\": give the item back with a reason (idempotent).")
    def post(self, request, pk):
        body = request.data
        if not hasattr(body, "get"):
            return Response({"errors": {"reason": "must be an object {reason, comment}"}}, status=400)
        try:
            assignment, judgment, created = skip(pk, request.user, body.get("reason"), body.get("comment"),
                                                 body.get("seconds"))
        except REFUSALS as exc:
            return refusal(exc)
        data = SkipResultSerializer({"assignment": assignment.pk, "created": created, "judgment": judgment}).data
        return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class AssignmentExtendView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None,
                   responses={200: ExtendResultSerializer, 403: REFUSED,
                              404: OpenApiResponse(DetailSerializer, description="Not your open assignment (expired, "
                                                   "reassigned, answered or skipped).")},
                   summary="Keep the item one more timeout (once per assignment).")
    def post(self, request, pk):
        try:
            assignment, extended = extend(pk, request.user)
        except AssignmentGone:
            return Response({"detail": "No open assignment of yours with this id (it may have expired)."},
                            status=status.HTTP_404_NOT_FOUND)
        except NotAllowed:
            return Response({"detail": "You may no longer annotate this study."}, status=status.HTTP_403_FORBIDDEN)
        return Response(ExtendResultSerializer({"assignment": assignment.pk, "expires_at": assignment.expires_at,
                                                "extended": extended}).data)
