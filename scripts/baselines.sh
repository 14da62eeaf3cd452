#!/usr/bin/env bash
# Installs envgym into .venv, evaluates the random and oracle agents on every
# env and difficulty (printing one table) into results files, then writes the
# leaderboard of those same files as static pages under build/leaderboard/.
# Extra arguments go to `envgym baselines` (e.g. `--episodes 100`);
# BASELINES_DIR picks the folder of results files (default build/baselines;
# leaderboard/baselines refreshes the committed baselines).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${BASELINES_DIR:-build/baselines}"
for arg in "$@"; do
    if [[ "$arg" == --out-dir* ]]; then
        echo "baselines.sh: set BASELINES_DIR=DIR instead of --out-dir, so the pages read the same files" >&2
        exit 2
    fi
done
# The reasoning extra: envgym/ReasoningGym-v0 bridges a package of its own.
bash scripts/setup.sh reasoning
.venv/bin/envgym baselines --out-dir "$out" "$@"
.venv/bin/envgym leaderboard export --baselines "$out" --out build/leaderboard
