"""DRF permission class for the admin role (superusers pass). Reading a study's results
or annotating it is decided per study in annotate/access.py, not by a role gate."""
from rest_framework.permissions import BasePermission

from annotate.roles import is_admin


class IsAdminRole(BasePermission):
    """Members of `admins` (load batches, start jobs)."""

    message = "Only admins may do this."

    def has_permission(self, request, view):
        return is_admin(request.user)
