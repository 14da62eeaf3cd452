#!/usr/bin/env bash
# The GPU check: envgym's trainers on a CUDA GPU, in under 8 minutes, offline.
#
#   bash scripts/gpu_wheels.sh                      # first, here (PyPI): .gpu-wheels/py3.12
#   bash scripts/gpu_check.sh OUTDIR                # on the GPU machine, from the repo root
#   bash scripts/gpu_check.sh --dry-run OUTDIR      # the same steps on the CPU, tiny model
#   bash scripts/gpu_check.sh --only bench OUTDIR   # some phases again (install always runs)
#   bash scripts/gpu_check.sh --wheels DIR OUTDIR   # wheels from DIR (default .gpu-wheels/pyX.Y)
#
# Phases, each under a time budget (together 7.5 minutes on a GPU), each one's
# output in OUTDIR/check.log:
#   install  envgym (built from this checkout) and the wheels into a fresh
#            folder on PYTHONPATH, without the network; OUTDIR/environment.json
#   tests    the tests marked gpu (OUTDIR/tests.xml)
#   bench    benchmarks/trainer.py's GPU section, reduced: envgym's GRPO and
#            TRL's GRPOTrainer, both generating with transformers, on a random
#            Qwen2-0.5B-shaped model in bf16, Sokoban and Household
#            (OUTDIR/benchmark.json)
#   train    GRPO and PPO of the tiny model: straight to step 4, and stopped
#            at a checkpoint and resumed; compared (OUTDIR/train.json)
# Then OUTDIR/summary.md (printed) and OUTDIR/summary.json. The exit status is
# 1 if a phase failed or ran out of time. --dry-run runs every step on the CPU
# with a tiny model and smaller batches, and fetches wheels for this Python if
# they are missing (PyPI); only what needs CUDA is skipped (the gpu tests skip).
set -uo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -/{/^#/p}' "$0"; }
dry_run=0
only=install,tests,bench,train
wheels=
out=
while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) dry_run=1; shift ;;
        --only) only=install,${2:?--only takes phases, e.g. bench,train}; shift 2 ;;
        --wheels) wheels=${2:?--wheels takes a folder of wheels}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "gpu_check.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) [ -z "$out" ] || { echo "gpu_check.sh: one OUTDIR only" >&2; exit 2; }; out=$1; shift ;;
    esac
done
[ -n "$out" ] || { echo "gpu_check.sh: give an OUTDIR (see --help)" >&2; exit 2; }
for phase in ${only//,/ }; do
    case "$phase" in
        install|tests|bench|train) ;;
        *) echo "gpu_check.sh: --only: unknown phase $phase (install, tests, bench, train)" >&2
           exit 2 ;;
    esac
done

python=${PYTHON:-}
if [ -z "$python" ]; then
    if [ "$dry_run" = 1 ] && [ -x .venv/bin/python ]; then python=.venv/bin/python; else python=python3; fi
fi
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
wheels=${wheels:-.gpu-wheels/py$version}
if ! compgen -G "$wheels/*.whl" > /dev/null; then
    if [ "$dry_run" = 1 ]; then
        PYTHON=$python bash scripts/gpu_wheels.sh --python-version "$version" --dest "$wheels" \
            || exit 1
    else
        echo "gpu_check.sh: no wheels in $wheels; run 'bash scripts/gpu_wheels.sh" \
            "--python-version $version' on a machine with PyPI and bring $wheels along" >&2
        exit 1
    fi
fi
wheels=$(cd "$wheels" && pwd)

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/{check.log,phases.tsv,environment.json,tests.xml,benchmark.json,train.json}
rm -f "$out"/summary.{md,json}
work=$(mktemp -d "${TMPDIR:-/tmp}/envgym-gpu-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
site=$work/site
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 HF_HUB_DISABLE_PROGRESS_BARS=1
export XDG_CACHE_HOME=$work/cache

if [ "$dry_run" = 1 ]; then
    total=900  # seconds for the whole check: a CPU is slower, and CI does not wait on it
    budgets=(install:120 tests:120 bench:420 train:240)
    # One env on the CPU: the same code paths as two, in half of CI's time.
    bench_envs=(envgym/Sokoban-v0)
    bench_args=(--gpu-device cpu --gpu-shape tiny --gpu-steps 2 --num-groups 2 --group-size 4
                --threads 1 --run-timeout 200)
    device=cpu
else
    total=450
    budgets=(install:40 tests:45 bench:330 train:55)
    bench_envs=(envgym/Sokoban-v0 envgym/Household-v0)
    bench_args=(--gpu-device cuda --gpu-shape qwen2-0.5b --gpu-steps 3 --num-groups 4
                --group-size 8 --run-timeout 100)
    device=cuda
fi
started=$SECONDS

# run_phase NAME COMMAND...: the command under the phase's budget (cut to what
# is left of the total), its output in check.log and on stdout, one line in
# phases.tsv: name, exit status (124: out of time), seconds, budget.
run_phase() {
    local name=$1 budget=0 entry
    shift
    for entry in "${budgets[@]}"; do [ "${entry%%:*}" = "$name" ] && budget=${entry#*:}; done
    local left=$((total - (SECONDS - started) - 10))
    [ "$left" -lt "$budget" ] && budget=$left
    if [ "$budget" -lt 10 ]; then
        printf '%s\t124\t0\t0\n' "$name" >> "$out/phases.tsv"
        echo "== $name: no time left" | tee -a "$out/check.log"
        return 1
    fi
    echo "== $name (at most ${budget} s)" | tee -a "$out/check.log"
    local t0=$SECONDS status
    timeout -k 10 "$budget" "$@" 2>&1 | tee -a "$out/check.log"
    status=${PIPESTATUS[0]}
    printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$((SECONDS - t0))" "$budget" >> "$out/phases.tsv"
    echo "== $name: exit status $status after $((SECONDS - t0)) s" | tee -a "$out/check.log"
    return "$status"
}

# The install phase, as a function that `timeout` runs in a child bash.
install_phase() {
    set -o pipefail
    local pip=("$python" -m pip install --quiet --disable-pip-version-check --no-index --no-deps
               --no-compile --target "$site")
    "${pip[@]}" "$wheels"/*.whl || return 1
    # From this checkout, with the setuptools just installed (it is on PYTHONPATH).
    "${pip[@]}" --no-build-isolation . || return 1
    # -P: the checkout's own envgym/ folder (without envs/ and trainers/) must not
    # shadow the install, as the current folder would at the front of sys.path.
    "$python" -P - "$site" <<'EOF' || return 1
import sys
from pathlib import Path

import datasets, trl  # noqa: F401, E401 - the wheels import
import envgym
import envgym.trainers.grpo, envgym.trainers.ppo  # noqa: F401, E401

where = Path(envgym.__file__).resolve()
if Path(sys.argv[1]).resolve() not in where.parents:
    sys.exit(f"envgym was imported from {where}, not from the fresh install in {sys.argv[1]}")
print(f"envgym from {where.parent}, trl {trl.__version__}, datasets {datasets.__version__}")
EOF
    "$python" scripts/gpu_check.py environment "$out"
}

export python wheels site out
export -f install_phase

status=0
run_phase install bash -c install_phase || status=1
if [ "$status" = 0 ]; then
    case ",$only," in *,tests,*)
        run_phase tests "$python" -P -m pytest -q -p no:cacheprovider -m gpu -rs \
            --junitxml "$out/tests.xml" tests/test_trainer_gpu.py tests/test_trainer_vllm.py \
            || status=1 ;;
    esac
    case ",$only," in *,bench,*)
        run_phase bench "$python" benchmarks/trainer.py --no-cpu \
            --gpu-runs envgym-transformers,trl-transformers \
            --gpu-envs "${bench_envs[@]}" --max-turns 4 \
            "${bench_args[@]}" --json "$out/benchmark.json" || status=1 ;;
    esac
    case ",$only," in *,train,*)
        run_phase train "$python" scripts/gpu_check.py train "$out" --device "$device" \
            --work "$work/train" || status=1 ;;
    esac
fi
echo "== summary after $((SECONDS - started)) s" | tee -a "$out/check.log"
"$python" scripts/gpu_check.py summary "$out" || status=1
exit "$status"
