"""Issue 32: an existing database upgrades across the reorganisation of annotate/ into
rooms. The code of main before this work (BASE, taken from git) migrates a fresh PostgreSQL
database and fills it with the demo studies and imported judgments; then this checkout
migrates the same database: the migrations of BASE stay applied, the new ones (added by
other changes of the same release, e.g. 0012's crowd-integrity columns) apply on top, and
every table keeps every row (the bookkeeping tables gain exactly the new migrations and the
new models' content types and permissions). The reports (JSON and CSV) that the code just
before the rooms (PRE_ROOMS: every other change of the release, which alter some reports on
purpose) writes from that database are the same, byte for byte, as this checkout's, once the
keys added after the rooms are taken out (`LATER_KEYS`: the report's `ppi`, issue 35, with its
CSV block)."""
import json
import os
import subprocess
import sys
import tarfile
import uuid
from io import BytesIO
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

ROOT = Path(__file__).resolve().parent.parent
BASE = "9bcaaa9"  # main before this release: the database is filled by its code
PRE_ROOMS = "3a4ab8d"  # the release's other changes merged, annotate/ not yet in rooms
BOOKKEEPING = ("django_migrations", "django_content_type", "auth_permission")

pytestmark = [pytest.mark.postgres("the upgrade is checked on PostgreSQL, the production database"),
              pytest.mark.slow]

FILL = r'''
import csv, json, sys
import django
django.setup()
from django.core.management import call_command
from annotate.models import Item, Study
call_command("demo", "--force")
study = Study.objects.get(kind="pairwise_alignment")
path = sys.argv[1]
with open(path, "w", newline="") as handle:
    writer = csv.writer(handle)
    writer.writerow(["study", "item_id", "annotator", "question", "value", "shown_order", "seconds", "submitted_at"])
    for n, item in enumerate(Item.objects.filter(study=study).order_by("id")):
        ids = [c["id"] for c in item.data["candidates"]]
        for k, who in enumerate(("upgrade1", "upgrade2", "upgrade3")):
            writer.writerow([study.slug, item.item_id, who, "choice", ids[(n + k) % 2] if k < 2 else ids[0],
                             "|".join(ids), 10 + n + k, f"2026-01-0{1 + k}T00:00:00+00:00"])
call_command("import_judgments", path)
'''

REPORTS = r'''
import json, sys
import django
django.setup()
from django.db import connection
from annotate.models import Study
from annotate.management.commands.report import Command  # noqa: F401  (the command's module, same at both ends)
from django.core.management import call_command
from io import StringIO
out = {"reports": {}, "rows": {}}
for slug in Study.objects.order_by("slug").values_list("slug", flat=True):
    for fmt in ("json", "csv"):
        buffer = StringIO()
        call_command("report", slug, "--format", fmt, stdout=buffer)
        out["reports"][f"{slug}.{fmt}"] = buffer.getvalue()
with connection.cursor() as cursor:
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
    for (table,) in cursor.fetchall():
        cursor.execute(f'SELECT count(*) FROM "{table}"')
        out["rows"][table] = cursor.fetchone()[0]
    cursor.execute("SELECT app, name FROM django_migrations ORDER BY id")
    out["migrations"] = cursor.fetchall()
json.dump(out, open(sys.argv[1], "w"))
'''


def run(cwd: Path, env: dict, *args: str) -> str:
    env = {**env, "PYTHONPATH": str(cwd)}  # the checkout's own packages, for scripts run from elsewhere
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def upgrade_db():
    url = urlsplit(os.environ["DATABASE_URL"])
    name = f"upgrade_{uuid.uuid4().hex[:10]}"
    admin = urlunsplit(url._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(url._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def checkout(commit: str, where: Path) -> Path:
    archive = subprocess.run(["git", "archive", commit, "annotate", "evaluation", "humeval", "models_runtime",
                              "templates", "static", "manage.py"], cwd=ROOT, capture_output=True, check=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(where, filter="data")
    return where


def new_migrations() -> tuple[list[list[str]], int]:
    """([app, name] of each migration added since BASE, models those migrations create)."""
    names = subprocess.run(["git", "diff", "--name-only", "--diff-filter=A", BASE, "HEAD", "--",
                            "annotate/migrations", "models_runtime/migrations"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    added = sorted(n for n in names if Path(n).name[:4].isdigit())
    created = sum((ROOT / n).read_text().count("migrations.CreateModel(") for n in added)
    return [[n.split("/")[0], Path(n).stem] for n in added], created


def test_a_database_filled_at_base_upgrades_with_every_row_and_the_same_reports(tmp_path, upgrade_db):
    old = checkout(BASE, tmp_path / "base")
    pre_rooms = checkout(PRE_ROOMS, tmp_path / "pre_rooms")
    env = {**os.environ, "DATABASE_URL": upgrade_db, "DJANGO_SETTINGS_MODULE": "humeval.test_settings",
           "PYTHONDONTWRITEBYTECODE": "1", "HUMEVAL_VAR_DIR": str(tmp_path / "var")}
    (tmp_path / "fill.py").write_text(FILL)
    (tmp_path / "reports.py").write_text(REPORTS)

    run(old, env, "manage.py", "migrate", "--noinput")
    run(old, env, str(tmp_path / "fill.py"), str(tmp_path / "judgments.csv"))
    run(old, env, str(tmp_path / "reports.py"), str(tmp_path / "base.json"))
    base = json.loads((tmp_path / "base.json").read_text())

    run(ROOT, env, "manage.py", "migrate", "--noinput")
    run(pre_rooms, env, str(tmp_path / "reports.py"), str(tmp_path / "before.json"))
    run(ROOT, env, str(tmp_path / "reports.py"), str(tmp_path / "after.json"))
    before, after = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("before", "after"))

    assert base["rows"]["annotate_judgment"] > 0 and base["rows"]["annotate_item"] > 0
    assert len(after["reports"]) == 2 * base["rows"]["annotate_study"]
    # Every data table keeps every row; the bookkeeping tables gain the new migrations, and
    # the content type and 4 permissions of each model they create.
    added, created = new_migrations()
    assert {t: after["rows"].get(t) for t in base["rows"] if t not in BOOKKEEPING} == {
        t: n for t, n in base["rows"].items() if t not in BOOKKEEPING}
    assert after["migrations"] == base["migrations"] + added
    assert after["rows"]["django_content_type"] == base["rows"]["django_content_type"] + created
    assert after["rows"]["auth_permission"] == base["rows"]["auth_permission"] + 4 * created
    assert without_later_keys(after["reports"]) == before["reports"]


# Report keys added after the rooms (issue 35's prediction-powered `ppi`): absent before.
LATER_KEYS = ("ppi",)
LATER_CSV_BLOCKS = ("ppi_table",)


def without_later_keys(reports: dict[str, str]) -> dict[str, str]:
    """The reports with LATER_KEYS dropped from the JSON (same layout as the command writes)
    and each LATER_CSV_BLOCKS table (one empty line, then the block) dropped from the CSV."""
    out = {}
    for name, text in reports.items():
        if name.endswith(".json"):
            report = json.loads(text)
            if any(key in report for key in LATER_KEYS):
                ending = text[len(text.rstrip("\n")):]
                text = json.dumps({k: v for k, v in report.items() if k not in LATER_KEYS}, indent=2) + ending
        else:
            for block in LATER_CSV_BLOCKS:  # each is the last block of the CSV
                at = text.find(f"\n\n{block},")
                text = text if at < 0 else text[:at + 1]
        out[name] = text
    return out
