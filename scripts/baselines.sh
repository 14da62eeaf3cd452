#!/usr/bin/env bash
# Installs envgym into .venv and evaluates the random and oracle agents on
# every env and difficulty, printing one table, then writes the leaderboard of
# the committed baselines (leaderboard/baselines/) as static pages under
# build/leaderboard/. Extra arguments go to `envgym baselines` (e.g.
# `--episodes 100 --out-dir results/`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/envgym baselines "$@"
.venv/bin/envgym leaderboard export --baselines --out build/leaderboard
