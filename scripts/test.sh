#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine: Debian packages (Chromium for the browser
# tests, WordNet for METEOR/lemmatizing), PostgreSQL and Redis up, the venv, then pytest.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh tests/evaluation -x`).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for pkg in chromium wordnet-base wordnet-sense-index; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
fi
if ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi
for _ in $(seq 30); do
  pg_isready -q -h 127.0.0.1 -p 5432 && redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break
  sleep 1
done

bash scripts/setup.sh

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/humeval}"
export CELERY_TEST_BROKER_URL="${CELERY_TEST_BROKER_URL:-redis://127.0.0.1:6379/15}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/python manage.py makemigrations --check --dry-run >/dev/null
exec .venv/bin/python -m pytest "$@"
