#!/usr/bin/env bash
# Installs envgym into .venv and evaluates the random and oracle agents on
# every env and difficulty, printing one table. Extra arguments go to
# `envgym baselines` (e.g. `--episodes 100 --out-dir results/`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/envgym baselines "$@"
