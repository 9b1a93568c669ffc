"""manage.py demo: demo users and one demo study of each kind (idempotent).

The demo passwords are published (README, this file), so the command runs only with
DEBUG=1 (a local instance) or --force, and it never touches an account that already
exists: no password reset, no new role, no superuser flag.
"""
import io

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotate.kinds import all_kinds
from annotate.models import Judgment
from annotate.roles import ADMINS, ANNOTATORS, RESEARCHERS
from annotate.studies.batch_format import BatchInvalid
from annotate.studies.demo_data import demo_batches
from annotate.studies.demo_simulated import create_simulated_study
from annotate.studies.importing import import_batch_bytes
from annotate.studies.judgments_io import import_judgments

# (username, password, role, superuser): local demo logins, printed by the command.
DEMO_USERS = [
    ("admin", "demo-admin-pw", ADMINS, True),
    ("researcher", "demo-researcher-pw", RESEARCHERS, False),
    ("annotator1", "demo-annotator1-pw", ANNOTATORS, False),
    ("annotator2", "demo-annotator2-pw", ANNOTATORS, False),
    ("annotator3", "demo-annotator3-pw", ANNOTATORS, False),
]


def create_demo_users():
    """Create the demo users that do not exist yet. Returns [(username, password or None
    for an existing account left unchanged, role)]."""
    User = get_user_model()
    logins = []
    for username, password, role, superuser in DEMO_USERS:
        if User.objects.filter(username=username).exists():
            logins.append((username, None, role))
            continue
        user = User.objects.create_user(username=username, password=password,
                                        is_staff=superuser, is_superuser=superuser)
        user.groups.add(Group.objects.get(name=role))
        logins.append((username, password, role))
    return logins


class Command(BaseCommand):
    help = ("Create demo users (admin, researcher, three annotators) and one demo study of each kind. "
            "Local instances only: needs DEBUG=1 or --force; existing accounts are never changed.")

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true",
                            help="run without DEBUG=1 (the demo passwords are public)")
        parser.add_argument("--simulated", action="store_true",
                            help="also create the 4-system study with simulated judgments, and load the simulated "
                                 "judgments a kind has for its demo study (a full report at once)")

    def handle(self, *args, force=False, simulated=False, **options):
        if not settings.DEBUG and not force:
            raise CommandError("refusing to create demo accounts with published passwords: this is not a "
                               "development instance (DEBUG=1); use --force to run anyway")
        try:
            with transaction.atomic():
                logins = create_demo_users()
                uploader = get_user_model().objects.filter(username="admin").first()
                results = [import_batch_bytes(data, user=uploader, source=f"demo:{kind}")
                           for kind, data in demo_batches().items()]
                for kind in all_kinds() if simulated else ():  # a kind's simulated judgments, once
                    data = kind.demo_judgments()
                    if data and not Judgment.objects.filter(study__slug=kind.demo_slug).exists():
                        import_judgments(io.BytesIO(data), user=uploader, source=f"demo:{kind.name}")
                simulated_study = create_simulated_study(uploader) if simulated else None
        except BatchInvalid as exc:  # a bug in demo_data, not a user error
            raise CommandError("demo data is invalid: " + "; ".join(exc.errors)) from None
        self.stdout.write("Demo studies:")
        for result in results:
            self.stdout.write(f"  {result.study.slug:<20} {result.study.kind:<20} "
                              f"{result.created} new, {result.skipped} unchanged items")
        if simulated_study is not None:
            study, created = simulated_study
            self.stdout.write(f"  {study.slug:<20} {study.kind:<20} SIMULATED judgments: {created} new "
                              f"({study.judgments.count()} in all)")
        self.stdout.write("Logins (username / password / role):")
        for username, password, role in logins:
            shown = password if password is not None else "(existing account, not changed)"
            self.stdout.write(f"  {username:<12} {shown:<20} {role}")
