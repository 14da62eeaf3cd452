#!/usr/bin/env bash
# Downloads the wheels the GPU check needs that the GPU machine's image lacks
# (scripts/gpu-requirements.txt), on a machine that reaches PyPI, for CPython on
# manylinux x86-64, into .gpu-wheels/pyX.Y/ (ignored by git), then checks that
# they and the image's own packages cover every requirement.
#
#   bash scripts/gpu_wheels.sh                          # for the GPU machine: py3.12
#   bash scripts/gpu_wheels.sh --python-version 3.11    # for a dry run on this Python
#   bash scripts/gpu_wheels.sh --dest DIR               # into DIR instead
#
# The folder is replaced whole, so no wheel of an older pin stays behind (two
# versions of one package stop pip). `scripts/gpu_check.sh` installs from it.
set -euo pipefail
cd "$(dirname "$0")/.."
version=3.12
dir=
while [ $# -gt 0 ]; do
    case "$1" in
        --python-version) version=${2:?--python-version takes X.Y, e.g. 3.12}; shift 2 ;;
        --dest) dir=${2:?--dest takes a folder}; shift 2 ;;
        -h|--help) sed -n '2,/^set -/{/^#/p}' "$0"; exit 0 ;;
        *) echo "gpu_wheels.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if ! [[ $version =~ ^3\.[0-9]+$ ]]; then
    echo "gpu_wheels.sh: --python-version takes X.Y (e.g. 3.12), got $version" >&2
    exit 2
fi
python=${PYTHON:-}
if [ -z "$python" ]; then
    if [ -x .venv/bin/python ]; then python=.venv/bin/python; else python=python3; fi
fi
dir=${dir:-.gpu-wheels/py$version}
dir=${dir%/}
rm -rf "$dir.partial"
mkdir -p "$dir.partial"
abi=cp${version/./}
"$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version "$version" --implementation cp --abi "$abi" --abi abi3 --abi none \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any \
    -d "$dir.partial" -r scripts/gpu-requirements.txt
rm -rf "$dir"
mv "$dir.partial" "$dir"
"$python" scripts/gpu_check.py wheels "$dir" --python-version "$version"
