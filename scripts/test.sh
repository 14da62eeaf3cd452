#!/usr/bin/env bash
# Installs envgym with its test tools into .venv, checks style, runs the tests.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -k sokoban`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python scripts/lint_imports.py
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir site
.venv/bin/python -m pytest -q --durations=30 "$@"
