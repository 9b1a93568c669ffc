"""Migrations: the models and the migration files agree, and the role groups exist."""
import io

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command


@pytest.mark.django_db
def test_no_missing_migrations():
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=io.StringIO())
    assert "No changes detected" in out.getvalue()


@pytest.mark.django_db
def test_role_groups_are_created_by_migrations():
    assert set(Group.objects.values_list("name", flat=True)) >= {"admins", "researchers", "annotators"}


@pytest.mark.django_db
def test_every_app_has_a_single_leaf_migration():
    from django.db.migrations.loader import MigrationLoader

    loader = MigrationLoader(None, ignore_no_migrations=True)
    conflicts = loader.detect_conflicts()
    assert conflicts == {}
