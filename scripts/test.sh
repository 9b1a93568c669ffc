#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine: Debian packages (Chromium for the browser
# tests, WordNet for METEOR/lemmatizing, TeX Live to compile the datasheet's LaTeX), PostgreSQL
# and Redis up, the venv; then the checks:
#   migrations  makemigrations --check
#   ruff        ruff check . (rules in pyproject.toml)
#   mypy        mypy on every product package (annotate, evaluation, models_runtime, humeval;
#               evaluation/ fully typed, the others check annotated code: pyproject.toml)
#   doctests    the worked examples in evaluation/'s docstrings
#   postgres    pytest against DATABASE_URL (PostgreSQL)
#   sqlite      pytest on the SQLite default (DATABASE_URL unset, as the quick start runs) for
#               every test that touches the database; tests marked `postgres` skip with their reason
# Every check runs even when an earlier one failed; the exit status is 1 if any failed.
# TEST_LANES picks the pytest lanes (default "postgres sqlite"). Extra arguments go to pytest in
# each lane (e.g. `TEST_LANES=sqlite bash scripts/test.sh tests/evaluation -x`).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for pkg in chromium wordnet-base wordnet-sense-index texlive-latex-recommended; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
# Node.js and npm only when the commands are absent: a machine may carry NodeSource's nodejs,
# which bundles npm and conflicts with Debian's npm package ("held broken packages").
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
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
# axe-core for the browser tests' accessibility checks (package.json / package-lock.json).
[ -f node_modules/axe-core/axe.min.js ] || npm ci --no-audit --no-fund --loglevel=error

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/humeval}"
export CELERY_TEST_BROKER_URL="${CELERY_TEST_BROKER_URL:-redis://127.0.0.1:6379/15}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HUMEVAL_LOG_LEVEL="${HUMEVAL_LOG_LEVEL:-WARNING}"
# The suite's settings (humeval/test_settings.py: production settings with a throwaway key).
export DJANGO_SETTINGS_MODULE=humeval.test_settings
PY=.venv/bin/python

failed=()
step() {  # step NAME COMMAND...: runs it, times it, remembers a failure
  local name=$1 began=$SECONDS
  shift
  echo "== $name"
  if "$@"; then
    echo "== $name: ok ($((SECONDS - began)) s)"
  else
    failed+=("$name")
    echo "== $name: FAILED ($((SECONDS - began)) s)"
  fi
}
sqlite_pytest() {
  # DATABASE_URL unset: settings fall back to SQLite (the test database is in memory);
  # a throwaway HUMEVAL_VAR_DIR keeps the lane off var/. Tests that never touch the database
  # ran, identically, in the PostgreSQL lane and are deselected (HUMEVAL_TESTS_DB_ONLY).
  local var_dir
  var_dir=$(mktemp -d)
  env -u DATABASE_URL -u TEST_DATABASE_NAME HUMEVAL_VAR_DIR="$var_dir" HUMEVAL_TESTS_DB_ONLY=1 "$PY" -m pytest "$@"
  local status=$?
  rm -rf "$var_dir"
  return $status
}

step migrations "$PY" manage.py makemigrations --check --dry-run
step ruff .venv/bin/ruff check .
step mypy .venv/bin/mypy
step doctests "$PY" -m pytest -q -p no:cacheprovider --doctest-modules evaluation
for lane in ${TEST_LANES:-postgres sqlite}; do
  case $lane in
    postgres) step "postgres lane" "$PY" -m pytest "$@" ;;
    sqlite) step "sqlite lane" sqlite_pytest "$@" ;;
    *) echo "unknown lane in TEST_LANES: $lane (postgres, sqlite)"; failed+=("$lane") ;;
  esac
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all checks passed"
