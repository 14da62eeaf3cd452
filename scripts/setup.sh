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
# envgym[verifiers] (tests/test_integration_verifiers.py): verifiers 0.4 pins
# mcp==2.0.0 and the mcp extra needs mcp 2.3, so the dev install takes verifiers
# without its dependencies, then those it imports, the mcp it has kept (its chat
# programs' MCP client is not used by envgym.integrations.verifiers).
case ",$extras," in
*,dev,*)
    "${pip[@]}" --no-deps "verl==0.9.1"
    "${pip[@]}" "tensordict>=0.8,<=0.10.0,!=0.9.0" "hydra-core>=1.3" "codetiming>=1.4" "cachetools>=5"
    "${pip[@]}" --no-deps "verifiers>=0.4,<0.5"
    "${pip[@]}" "aiohttp>=3.14.1" "anthropic>=1.0.0" "gepa>=0.0.6" "httpx2>=2.12.0" \
        "loguru>=0.7.0" "math-verify>=0.8.0" "msgpack>=1.1.2" "openai>=2.54.0,<3" \
        "prime-pydantic-config[toml]>=0.4.3" "prime-runs>=0.1.4" "prime-sandboxes>=0.4.2" \
        "prime-tunnel>=0.1.14" "pyzmq>=27.1.0" "renderers[multimodal]>=0.1.12" \
        "tenacity>=8.5.0" "tomli-w>=1.0.0" "mcp>=2.3,<2.4" "torch==2.13.0"
    ;;
esac
