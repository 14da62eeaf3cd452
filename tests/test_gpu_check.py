"""The GPU check (`scripts/gpu_check.sh`) cannot rot between GPU loans.

Its dry run goes through every step on the CPU (install from the wheels
without the network, the gpu tests, the benchmark's GPU section with a tiny
model, GRPO and PPO stopped and resumed) and must report every figure; the
wheels for the GPU machine's Python, with the working tree, must fit what the
device tool carries and, with the image's own packages, cover every
requirement; and the summary must call a check that went wrong a failure.
Downloading the wheels needs PyPI, as CI and a developer's machine have.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def _load_script():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gpu_check = _load_script()


def download_wheels(dest: Path, version: str) -> Path:
    subprocess.run(
        ["bash", "scripts/gpu_wheels.sh", "--python-version", version, "--dest", str(dest)],
        cwd=ROOT,
        check=True,
        env={**os.environ, "PYTHON": sys.executable},
    )
    return dest


@pytest.fixture(scope="module")
def gpu_wheels(tmp_path_factory) -> Path:
    """The wheels for the GPU machine (CPython 3.12), as gpu_wheels.sh downloads them."""
    return download_wheels(tmp_path_factory.mktemp("wheels") / "py3.12", "3.12")


def test_the_wheels_and_the_working_tree_fit_what_the_device_tool_carries(gpu_wheels):
    assert gpu_check.missing_requirements(gpu_wheels, "3.12") == []
    total = gpu_check.travelling_bytes(ROOT, [gpu_wheels])
    assert total <= gpu_check.TRAVEL_LIMIT_BYTES, f"{total / 2**20:.1f} MiB travel"
    names = {p.name.split("-")[0].lower() for p in gpu_wheels.glob("*.whl")}
    assert {"trl", "datasets", "gymnasium", "pettingzoo", "jsonschema"} <= names
    assert not any(n.startswith(("torch", "vllm", "transformers")) for n in names)


def test_the_wheel_check_names_what_is_missing_doubled_or_for_another_python(gpu_wheels, tmp_path):
    broken = tmp_path / "wheels"
    shutil.copytree(gpu_wheels, broken)
    (dill,) = broken.glob("dill-*.whl")
    dill.unlink()
    (trl,) = broken.glob("trl-*.whl")
    shutil.copy(trl, broken / trl.name.replace("1.16.0", "1.15.0"))
    problems = gpu_check.missing_requirements(broken, "3.12")
    assert any(p.startswith("datasets 5.2.0 needs dill") for p in problems), problems
    assert any("two wheels of trl" in p for p in problems), problems
    # The 3.12 wheels of compiled or version-tagged packages do not install on 3.11.
    other = gpu_check.missing_requirements(gpu_wheels, "3.11")
    assert sorted(p.split("-")[0] for p in other) == ["multiprocess", "pydantic_core", "rpds_py"], (
        other
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "gpu_wheels.sh" in gpu_check.missing_requirements(empty)[0]


def test_the_summary_fails_a_check_that_went_wrong(tmp_path):
    (tmp_path / "phases.tsv").write_text("install\t0\t5\t40\nbench\t124\t330\t330\n")
    (tmp_path / "benchmark.json").write_text(
        json.dumps(
            {
                "gpu": [
                    {
                        "env": "envgym/Sokoban-v0",
                        "run": "trl transformers",
                        "error": "did not finish in 100 s (--run-timeout)",
                    }
                ]
            }
        )
    )
    run = {
        "steps": 4,
        "seconds": 9.0,
        "step_s": 0.3,
        "tokens_per_s": 2000.0,
        "success_rate": 0.25,
        "eval_success_rate": 0.0,
        "log_steps_resumed": [1, 2, 3, 4],
        "resumed_plays_the_same_episodes": False,
        "max_weight_diff": 1e-4,
        "results_replay": False,
        "results_problems": ["turn 1: replayed reward 0.0 but the file records 1.0"],
    }
    (tmp_path / "train.json").write_text(json.dumps({"device": "cuda", "grpo": run}))
    summary, text = gpu_check.summarize(tmp_path)
    problems = "\n".join(summary["problems"])
    for expected in (
        "phase bench: exit status 124",
        "trl transformers on envgym/Sokoban-v0: did not finish",
        "grpo: the resumed run played other episodes",
        "grpo: resumed weights differ by 1.00e-04",
        "grpo: the eval results do not replay",
    ):
        assert expected in problems
    assert "over its budget" in text and "Problems:" in text
    assert gpu_check.main(["summary", str(tmp_path)]) == 1


@pytest.mark.slow
def test_the_dry_run_goes_through_every_step_and_reports_every_figure(tmp_path):
    wheels = download_wheels(tmp_path / "wheels", PYTHON)
    out = tmp_path / "out"
    done = subprocess.run(
        ["bash", "scripts/gpu_check.sh", "--dry-run", "--wheels", str(wheels), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "No problems." in done.stdout
    files = {p.name for p in out.iterdir()}
    assert len(files) <= 8  # what the device tool brings back from $OUT
    summary = json.loads((out / "summary.json").read_text())
    assert [p["phase"] for p in summary["phases"]] == ["install", "tests", "bench", "train"]
    # envgym ran from the fresh install, not from the checkout.
    assert not summary["environment"]["envgym_from"].startswith(str(ROOT))
    tests = summary["tests"]
    assert tests["failed"] == 0 and tests["skipped"] >= 4  # no CUDA here: every gpu test skips
    rows = {(r["env"], r["run"]): r for r in summary["benchmark"]}
    # The dry run benchmarks one env (the GPU run both, Sokoban and Household).
    assert set(rows) == {
        ("envgym/Sokoban-v0", run) for run in ("envgym transformers", "trl transformers")
    }
    for row in rows.values():
        assert row["trained_tokens_per_s"] > 0 and row["tokens_per_s"] > 0
        assert 0 < row["env_share_pct"] < 100
    assert rows[("envgym/Sokoban-v0", "envgym transformers")]["vs_trl"] > 0
    train = summary["train"]
    for name in ("grpo", "ppo"):
        assert train[name]["log_steps_resumed"] == [1, 2, 3, 4]
        assert train[name]["resumed_plays_the_same_episodes"] is True
        assert train[name]["max_weight_diff"] == 0.0  # on a CPU, bit for bit
        assert train[name]["results_replay"] is True
