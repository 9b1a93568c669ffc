"""The access rules as SQL (annotate/access.py explains them) and `Study.objects`, the
queryset that applies them. Kept apart from access.py so that annotate/models.py can use
the queryset without importing the helpers that read models (no import circle); the
models are reached through `study_model`, never imported.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from django.db import models
from django.db.models import Exists, OuterRef, Q

from annotate import roles

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    User: TypeAlias = AbstractBaseUser | AnonymousUser

NOWHERE = Q(pk__in=[])  # matches no study


# The rules, once. `member(role)` says whether the user is in the role's group: a bool when
# the caller knows it (annotate.roles.has_role), or an SQL expression (annotate.roles.member)
# when the decision is one compiled statement (annotate.desk.assignment.desk_for). `study` names
# the outer query's study id ("pk" for Study querysets, "study_id" for Assignment ones).

def _listed_or_open(study_model: Any, field: str, user_id, member, study: str) -> Q:
    """Studies that list the user in the M2M `field`, plus (for members of the role's
    group) studies whose list is empty."""
    m2m = study_model._meta.get_field(field)
    rows = m2m.remote_field.through.objects
    study_of_row = m2m.m2m_field_name()
    listed = Q(Exists(rows.filter(**{study_of_row: OuterRef(study), m2m.m2m_reverse_field_name(): user_id})))
    if member is False:
        return listed
    open_list = ~Q(Exists(rows.filter(**{study_of_row: OuterRef(study)})))
    return listed | (open_list if member is True else Q(member) & open_list)


def _joined(study_model: Any, user_id, study: str) -> Q:
    """Studies the user joined through a participant link (and did not decline)."""
    Participant = study_model._meta.get_field("participants").related_model  # noqa: N806
    return Q(Exists(Participant.objects.filter(study=OuterRef(study), user=user_id, declined_at__isnull=True)))


def annotate_rule(study_model: Any, user_id, member, study: str = "pk") -> Q:
    """Who may annotate (not for anonymous users or superusers: callers decide those)."""
    listed = _listed_or_open(study_model, "annotators", user_id, member(roles.ANNOTATORS), study)
    return listed | _joined(study_model, user_id, study)


def read_rule(study_model: Any, user_id, member, study: str = "pk") -> Q:
    """Who may read results (not for anonymous users or superusers: callers decide those)."""
    admin = member(roles.ADMINS)
    if admin is True:
        return Q()
    rule = _listed_or_open(study_model, "researchers", user_id, member(roles.RESEARCHERS), study)
    return rule if admin is False else rule | Q(admin)


class StudyQuerySet(models.QuerySet):
    """Study.objects: visibility filters. No DISTINCT joins (EXISTS subqueries), so the
    result can be counted, ordered and locked like any queryset."""

    def _annotate_q(self, user: User) -> Q:
        if not user.is_authenticated:
            return NOWHERE
        if user.is_superuser:
            return Q()
        return annotate_rule(self.model, user.pk, lambda role: roles.has_role(user, role))

    def _read_q(self, user: User) -> Q:
        if not user.is_authenticated:
            return NOWHERE
        if user.is_superuser:
            return Q()
        return read_rule(self.model, user.pk, lambda role: roles.has_role(user, role))

    def annotatable_by(self, user: User) -> StudyQuerySet:
        """Studies `user` may annotate (be served items of, submit and edit answers in)."""
        return self.filter(self._annotate_q(user))

    def readable_by(self, user: User) -> StudyQuerySet:
        """Studies whose results `user` may read: report, judgments, dashboard, quality."""
        return self.filter(self._read_q(user))

    def visible_to(self, user: User) -> StudyQuerySet:
        """Studies `user` may know about: annotatable or readable."""
        annotate, read = self._annotate_q(user), self._read_q(user)
        if not annotate or not read:  # Q() = every study
            return self.all()
        return self.filter(annotate | read)
