"""DRF permission classes for the three roles of interfaces.md (superusers pass all)."""
from rest_framework.permissions import BasePermission

from annotate.roles import is_admin, is_annotator, is_researcher


class IsAdminRole(BasePermission):
    """Members of `admins` (load batches, start jobs)."""

    message = "Only admins may do this."

    def has_permission(self, request, view):
        return is_admin(request.user)


class IsResearcherRole(BasePermission):
    """Members of `researchers` or `admins` (read reports and exports)."""

    message = "Only researchers may do this."

    def has_permission(self, request, view):
        return is_researcher(request.user)


class IsAnnotatorRole(BasePermission):
    """Members of `annotators` (judge items)."""

    message = "Only annotators may do this."

    def has_permission(self, request, view):
        return is_annotator(request.user)
