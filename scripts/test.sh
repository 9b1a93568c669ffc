#!/usr/bin/env bash
# The whole test suite. Uses PostgreSQL at DATABASE_URL when set (CI does), else SQLite.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/python manage.py makemigrations --check --dry-run >/dev/null
exec .venv/bin/python -m pytest "$@"
