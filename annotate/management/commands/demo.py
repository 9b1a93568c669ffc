"""manage.py demo: demo users and one demo study of each kind (idempotent)."""
import os

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotate.batch_format import BatchInvalid
from annotate.demo_data import demo_batches
from annotate.importing import import_batch_bytes
from annotate.roles import ADMINS, ANNOTATORS, RESEARCHERS

# (username, password, role, superuser): local demo logins, printed by the command.
DEMO_USERS = [
    ("admin", "demo-admin-pw", ADMINS, True),
    ("researcher", "demo-researcher-pw", RESEARCHERS, False),
    ("annotator1", "demo-annotator1-pw", ANNOTATORS, False),
    ("annotator2", "demo-annotator2-pw", ANNOTATORS, False),
    ("annotator3", "demo-annotator3-pw", ANNOTATORS, False),
]


def create_demo_users():
    """Create or reset the demo users; returns [(username, password, role)]."""
    User = get_user_model()
    for username, password, role, superuser in DEMO_USERS:
        user, _ = User.objects.get_or_create(username=username)
        user.is_staff = user.is_superuser = superuser
        user.set_password(password)
        user.save()
        user.groups.add(Group.objects.get(name=role))
    return [(u, p, r) for u, p, r, _ in DEMO_USERS]


class Command(BaseCommand):
    help = "Create demo users (admin, researcher, three annotators) and one demo study of each kind."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true",
                            help="run even when HUMEVAL_PRODUCTION is set (the demo passwords are public)")

    def handle(self, *args, force=False, **options):
        if os.environ.get("HUMEVAL_PRODUCTION") and not force:
            raise CommandError("refusing to create demo users with public passwords in production (use --force)")
        try:
            with transaction.atomic():
                logins = create_demo_users()
                admin = get_user_model().objects.get(username="admin")
                results = [import_batch_bytes(data, user=admin, source=f"demo:{kind}")
                           for kind, data in demo_batches().items()]
        except BatchInvalid as exc:  # a bug in demo_data, not a user error
            raise CommandError("demo data is invalid: " + "; ".join(exc.errors)) from None
        self.stdout.write("Demo studies:")
        for result in results:
            self.stdout.write(f"  {result.study.slug:<20} {result.study.kind:<20} "
                              f"{result.created} new, {result.skipped} unchanged items")
        self.stdout.write("Logins (username / password / role):")
        for username, password, role in logins:
            self.stdout.write(f"  {username:<12} {password:<20} {role}")
