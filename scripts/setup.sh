#!/usr/bin/env bash
# Creates .venv (if missing) and installs envgym into it, editable, with the
# extras given as arguments (e.g. `bash scripts/setup.sh dev`).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
"${pip[@]}" --upgrade pip
# The CPU build of torch first: anything later that asks for torch is then
# satisfied, instead of pulling a multi-GB CUDA build.
"${pip[@]}" "torch==2.13.0"
extras=$(IFS=,; echo "$*")
"${pip[@]}" -e ".${extras:+[$extras]}"
# The dev extra's tests of envgym.integrations.verl: verl 0.9.1 itself pins
# transformers<5.11 and pulls wandb and ray[default], so only the package and
# what its agent loop imports (the rest is in dev already), keeping dev's
# transformers; its declared pin is not checked.
case ",$extras," in
*,dev,*)
    "${pip[@]}" --no-deps "verl==0.9.1"
    "${pip[@]}" "tensordict>=0.8,<=0.10.0,!=0.9.0" "hydra-core>=1.3" "codetiming>=1.4" "cachetools>=5"
    ;;
esac
