"""A scratch PostgreSQL database for the annotation benchmarks: created, migrated,
dropped afterwards, so a benchmark never touches real data."""
import os
import secrets
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@contextmanager
def scratch_database(suffix):
    """Points Django at `<name>_<suffix>` on the DATABASE_URL server for the block."""
    base_url = os.environ.get("DATABASE_URL", "")
    if not base_url.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL server (the benchmark is about PostgreSQL)")
    import psycopg

    server, _, name = base_url.rpartition("/")
    db = f"{name or 'humeval'}_{suffix}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{db}"')
        admin.execute(f'CREATE DATABASE "{db}"')
    os.environ["DATABASE_URL"] = f"{server}/{db}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "humeval.settings")
    # A throwaway key for the scratch instance (blinding tokens and sessions sign with it).
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    try:
        import django
        django.setup()
        from django.core.management import call_command
        call_command("migrate", verbosity=0, skip_checks=True)
        yield f"{server}/{db}"
    finally:
        from django.db import connections
        connections.close_all()
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}"')


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
