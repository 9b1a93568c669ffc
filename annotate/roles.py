"""The three roles of interfaces.md as Django groups, and checks on a user."""
ADMINS = "admins"
RESEARCHERS = "researchers"
ANNOTATORS = "annotators"
ROLES = (ADMINS, RESEARCHERS, ANNOTATORS)


def has_role(user, *roles):
    """True for superusers and for members of any of `roles`."""
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    names = getattr(user, "_humeval_groups", None)
    if names is None:
        names = set(user.groups.values_list("name", flat=True))
        user._humeval_groups = names
    return bool(names.intersection(roles))


def is_admin(user):
    return has_role(user, ADMINS)


def is_researcher(user):
    """Researchers read reports; admins may too."""
    return has_role(user, ADMINS, RESEARCHERS)


def member(user_id, role):
    """`has_role` for one group as an SQL expression (superusers not included: callers
    decide those), for decisions made inside one compiled statement."""
    from django.contrib.auth import get_user_model
    from django.db.models import Exists

    groups = get_user_model().groups.through.objects
    return Exists(groups.filter(user_id=user_id, group__name=role))
