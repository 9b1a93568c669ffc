"""POST /api/designs/ (start a design run) and GET /api/designs/{id}/ (its status, progress
and result: the JSON of `manage.py design` for the same design and seed).

Who: researchers and admins. A run about a study (`"study": slug`, or a design whose pilot
is a study) needs the right to read that study, as every study-scoped endpoint: a study
one may not see is 404, one seen but not readable 403. Annotators and anonymous callers get
403. Bad input is a 400 naming every problem (unknown keys with "did you mean"); the design
is checked and its pilot fitted before the run starts, so a run never fails on its input.
"""
import difflib

from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import roles
from annotate.access import study_for
from annotate.api.serializers import DetailSerializer
from evaluation.report.kinds import PAIRWISE_ALIGNMENT

from . import runs
from .design_spec import SLUG, DesignInvalid, parse_design
from .run import prepared

BODY_KEYS = ("study", "design")
EXAMPLE = {"kind": PAIRWISE_ALIGNMENT, "systems": {"a": 0.3, "b": -0.3}, "items": 60, "annotations_per_item": 3,
           "annotators": 6, "targets": [{"test": "win_rate", "system": "a", "against": "b"}], "simulations": 500,
           "seed": 0}


class IsResearcherRole(BasePermission):
    message = "Only researchers and admins may plan studies."

    def has_permission(self, request, view):
        return roles.is_researcher(request.user)


@extend_schema_serializer(examples=[OpenApiExample("A two-system design", request_only=True,
                                                   value={"design": EXAMPLE})])
class DesignRunCreateSerializer(serializers.Serializer):
    study = serializers.SlugField(required=False, help_text="The study the run plans (its researchers see it).")
    design = serializers.DictField(help_text="The design file of `manage.py design` (interfaces.md; "
                                             "docs/statistics.md, \"Planning a study\").")


class DesignRunSerializer(serializers.Serializer):
    id = serializers.CharField()
    url = serializers.CharField(help_text="Poll this for status, progress and result.")
    status = serializers.ChoiceField(choices=[runs.QUEUED, runs.RUNNING, runs.DONE, runs.FAILED])
    study = serializers.CharField(allow_null=True)
    design = serializers.DictField()
    done = serializers.IntegerField(help_text="Simulated studies done.")
    total = serializers.IntegerField(help_text="Simulated studies in all (3 x simulations with a stopping rule).")
    result = serializers.DictField(allow_null=True, help_text="When done: the JSON of `manage.py design`.")
    error = serializers.CharField(allow_null=True)


class DesignErrorsSerializer(serializers.Serializer):
    errors = serializers.ListField(child=serializers.CharField(), help_text="Every problem; nothing was started.")


def body_of(run: dict) -> dict:
    return {**runs.public(run), "url": reverse("api-design", args=[run["id"]])}


def check_body(data) -> tuple[dict | None, list[str]]:
    """(the body, []) or (None, every problem with it)."""
    if not isinstance(data, dict):
        return None, ["the body must be a JSON object {\"design\": {...}, \"study\": slug?}"]
    errors = []
    for key in data:
        if key not in BODY_KEYS:
            close = difflib.get_close_matches(str(key), BODY_KEYS, n=1)
            errors.append(f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else
                                                     f" (allowed: {', '.join(BODY_KEYS)})"))
    if not isinstance(data.get("design"), dict):
        errors.append("'design' must be a JSON object (the design file of manage.py design)")
    if "study" in data and not (isinstance(data["study"], str) and SLUG.match(data["study"])):
        errors.append("'study' must be a study's slug")
    return (None if errors else data), errors


def start_run(user, body: dict) -> tuple[dict | None, list[str]]:
    """Check the design, fit its pilot, start it: (the run, []) or (None, problems).
    Http404/PermissionDenied for a study the user may not read (`study` or the pilot)."""
    design_raw = body["design"]
    try:
        parse_design(design_raw)  # the file's own problems first (a pilot's slug among them)
        for slug in (body.get("study"), design_raw.get("pilot")):
            if slug:
                study_for(user, slug, "read")  # before the pilot's report is read
        design = prepared(design_raw)
    except DesignInvalid as exc:
        return None, exc.errors
    limits = runs.web_limits(design)
    if limits:
        return None, limits
    return runs.start(design_raw, design, user, body.get("study")), []


class DesignRunListView(APIView):
    permission_classes = [IsResearcherRole]

    @extend_schema(request=DesignRunCreateSerializer,
                   responses={201: DesignRunSerializer, 400: DesignErrorsSerializer,
                              403: OpenApiResponse(DetailSerializer, description="Not a researcher, or a study "
                                                                                 "seen but not readable."),
                              404: OpenApiResponse(DetailSerializer, description="No such study, or one you may "
                                                                                 "not see.")},
                   summary="Start a design run: power by simulation (manage.py design) in the background.")
    def post(self, request):
        body, errors = check_body(request.data)
        if body is None:
            return Response({"errors": errors}, status=status.HTTP_400_BAD_REQUEST)
        run, errors = start_run(request.user, body)
        if run is None:
            return Response({"errors": errors}, status=status.HTTP_400_BAD_REQUEST)
        return Response(body_of(run), status=status.HTTP_201_CREATED)


class DesignRunDetailView(APIView):
    permission_classes = [IsResearcherRole]

    @extend_schema(responses={200: DesignRunSerializer, 403: DetailSerializer,
                              404: OpenApiResponse(DetailSerializer, description="No such run, or not yours to read.")},
                   summary="A design run's status, progress (done/total simulated studies) and result.")
    def get(self, request, run_id):
        run = runs.load(run_id)
        if not runs.visible(run, request.user):
            raise Http404("No such design run.")
        assert run is not None
        return Response(body_of(run))
