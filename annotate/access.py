"""Who may see a study, annotate it and read its results: the one definition.

- annotate: the users the study lists in `annotators`, whatever their groups; a study
  listing nobody is open to every member of the `annotators` group.
- read (report, judgments export, dashboard, quality page, predictions, participants):
  the users the study lists in `researchers`; a study listing nobody is open to every
  member of `researchers`. Admins read every study (they load batches and start jobs).
- see (list it, open its pages, learn that it exists): annotate or read.
- participants (annotate/participants/participation.py) annotate the one study they joined through a
  participant link, and their session is scoped to it: `ParticipantScopeMiddleware`
  below answers 404 to every other path (other studies, home, dashboard, admin, API).
Superusers pass everything. A study a user may not see answers 404 everywhere, exactly
like a slug that does not exist, so nobody can probe which studies exist; a study they
see but may not use for that purpose answers 403.

Every view, the API, the assignment engine and the submit path ask these questions
through `Study.objects.visible_to / annotatable_by / readable_by` (or the helpers below),
never through groups directly. The rules are written once (`annotate_rule`, `read_rule`);
`access_flags` turns them into SQL expressions (group membership included), so that a
request's one access decision is made by the statement that reads its study or its
assignment (`study_for`, annotate.desk.assignment.desk_for, the submit path).
"""
from __future__ import annotations

import re
from functools import partial
from typing import TYPE_CHECKING, TypeAlias

from django.core.exceptions import PermissionDenied
from django.db.models import BooleanField, ExpressionWrapper, Value
from django.http import Http404, HttpRequest, HttpResponse

from annotate import roles
from annotate.access_rules import annotate_rule, read_rule
from annotate.models import Assignment, Study
from annotate.prepared import Prepared, columns, instance

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    User: TypeAlias = AbstractBaseUser | AnonymousUser



class NotAllowed(Exception):
    """The user may not annotate this study."""


def may_annotate(user: User, study: Study) -> bool:
    return type(study).objects.annotatable_by(user).filter(pk=study.pk).exists()


def may_read(user: User, study: Study) -> bool:
    return type(study).objects.readable_by(user).filter(pk=study.pk).exists()


def may_read_study(user: User, slug: object) -> bool:
    """Whether study `slug` exists and `user` may read it: a missing slug and a study they
    may not read are one answer, so a page that 404s on False is no slug oracle."""
    study = Study.objects.filter(slug=slug).first() if isinstance(slug, str) and slug else None
    return study is not None and may_read(user, study)


def may_read_results(user: User, slug: str | None = None) -> bool:
    """Whether `user` may read results about study `slug` (e.g. a runtime job's output).
    About a study: those who may read it; a study that does not exist (not yet: a plan
    before its import step, whose params carry the header's lists; or no longer) admits
    admins only. Results tied to no study are open to every researcher and admin."""
    if not slug:
        return roles.is_researcher(user)
    return may_read_study(user, slug) or roles.is_admin(user)


def access_flags(user_id, superuser: bool, study: str = "pk") -> dict:
    """{"may_annotate", "may_read"} as boolean SQL expressions for `annotate()`: the rules
    above (group membership included) decided by the statement that reads the study."""
    if superuser:
        return {"may_annotate": Value(True), "may_read": Value(True)}
    member = partial(roles.member, user_id)
    return {"may_annotate": ExpressionWrapper(annotate_rule(Study, user_id, member, study), BooleanField()),
            "may_read": ExpressionWrapper(read_rule(Study, user_id, member, study), BooleanField())}


def refuse(study: Study | None, may_annotate: bool, may_read: bool, purpose: str | None) -> None:
    """Raises what a request needing `purpose` (None: just see it, "annotate" or "read") gets:
    Http404 when the user may not see the study (or it does not exist: the two are
    indistinguishable), PermissionDenied when they see it but may not use it for `purpose`."""
    if study is None or not (may_annotate or may_read):
        raise Http404("No such study.")
    if purpose == "annotate" and not may_annotate:
        raise PermissionDenied("You are not an annotator of this study.")
    if purpose == "read" and not may_read:
        raise PermissionDenied("Only this study's researchers may see its results.")


def _study_statement(slug, user_id, superuser):
    flags = access_flags(user_id, superuser)
    return Study.objects.filter(slug=slug).order_by().annotate(**flags).values(*columns(Study), *flags)


STUDY = Prepared(_study_statement)


def study_for(user: User, slug: str, purpose: str | None = None) -> Study:
    """The study `slug` for a request by `user` that needs `purpose` (see `refuse`), read and
    decided in one statement (compiled once: annotate.prepared)."""
    if not user.is_authenticated or not isinstance(slug, str):
        raise Http404("No such study.")
    superuser = bool(user.is_superuser)  # their statement names no user: None is no parameter
    row = STUDY.first(slug=slug, user_id=None if superuser else user.pk, superuser=superuser)
    study = instance(Study, row) if row else None
    refuse(study, bool(row and row["may_annotate"]), bool(row and row["may_read"]), purpose)
    assert study is not None  # refuse() raised 404 for a missing study
    return study


# --- participant sessions ------------------------------------------------------------------

SCOPE_KEY = "participant_scope"  # session key: {"study": slug, "user": pk}
_ASSIGNMENT_API = re.compile(r"^/api/assignments/(\d+)/(judgments|skip|extend)/$")


def scoped_path_allowed(slug: str, path: str) -> bool:
    """Whether a session scoped to study `slug` may open `path`: the participant pages
    (of any study: another link signs in another participant, or says why not), this
    study's task page and htmx partials (not its quality page nor "My judgments"), the
    API's next item of this study, submit/skip/extend of this study's assignments, and
    /login/ and /logout/ (a researcher who opened a participant link can sign in again).
    Nothing else."""
    if path.startswith(("/p/", "/static/")) or path in (f"/api/studies/{slug}/assignments/next/", "/login/",
                                                        "/logout/"):
        return True
    if path.startswith(f"/annotate/{slug}/"):
        return not path.startswith((f"/annotate/{slug}/quality/", f"/annotate/{slug}/mine/"))
    match = _ASSIGNMENT_API.match(path)
    return match is not None and Assignment.objects.filter(pk=int(match.group(1)), study__slug=slug).exists()


def participant_scope(request: HttpRequest) -> str | None:
    """The slug a participant session is scoped to, or None for an ordinary session."""
    session = getattr(request, "session", None)
    scope = session.get(SCOPE_KEY) if session is not None else None
    if not isinstance(scope, dict):
        return None
    if session is not None and scope.get("user") != getattr(request.user, "pk", None):  # someone else signed in
        del session[SCOPE_KEY]
        return None
    return scope.get("study")


class ParticipantScopeMiddleware:
    """The one gate of participant sessions: a session signed in by a participant link
    reaches only its own study's pages and API (anything else answers 404, as if it did
    not exist). Runs after AuthenticationMiddleware."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        slug = participant_scope(request)
        if slug is not None and not scoped_path_allowed(slug, request.path):
            raise Http404("Not part of this study.")  # rendered by the 404 page like any other
        return self.get_response(request)
