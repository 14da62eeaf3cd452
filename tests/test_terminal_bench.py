"""The speed benchmarks of sessions, Terminal-v0 and RepoFix-v0 run (in a tiny
mode, on bwrap), so they cannot rot; and the shell envs' pool sizes, which the
oracle benchmark sets, are checked arguments. No timing is asserted."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import types
from pathlib import Path

import gymnasium as gym
import pytest
from sandbox_backends import require_backend

import envgym  # noqa: F401 - registers the ids
from envgym.envs.terminal.families import FAMILIES

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("env_id", ["envgym/Terminal-v0", "envgym/RepoFix-v0"])
@pytest.mark.parametrize("name", ["session_pool_size", "grader_pool_size"])
@pytest.mark.parametrize("value", [0, 65, 2.0, True, "4"])
def test_pool_sizes_say_what_to_do(env_id, name, value):
    with pytest.raises(ValueError, match=f"{name} must be an integer from 1 to 64"):
        gym.make(env_id, **{name: value})


@pytest.mark.parametrize("backend", [pytest.param("docker", marks=pytest.mark.docker), "bwrap"])
def test_the_oracle_benchmark_plays_every_episode_through_pools_of_its_size(backend):
    require_backend(backend)
    bench = load("terminal_envs")
    row = bench.oracle_row("envgym/Terminal-v0", backend, episodes=2, concurrent=2)
    assert row["episodes"] >= 2 and row["failures"] == 0
    assert row["episodes_per_s"] > 0
    for name in ("reset", "step", "first step (shell, solution)", "last step (grading)"):
        p50, p99 = row[name]
        assert 0 < p50 <= p99, name
    # Every family at every level is on the schedule the rows go round.
    tasks = bench.schedule("envgym/Terminal-v0")
    assert len(tasks) == 3 * len(FAMILIES) and len(set(tasks)) == len(tasks)
    assert {task_id.split("-")[0] for _, task_id in tasks} == set(FAMILIES)
    assert [level for level, _ in bench.schedule("envgym/RepoFix-v0")] == [
        "easy",
        "medium",
        "hard",
    ]


def test_env_throughput_has_shell_rows(tmp_path, capsys):
    require_backend("bwrap")
    bench = load("env_throughput")
    out = tmp_path / "rows.json"
    argv = ["--ids", "envgym/Terminal-v0", "--sandbox", "bwrap", "--steps", "10", "--passes", "1"]
    assert bench.main([*argv, "--resets", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "envgym/Terminal-v0 (bwrap)" in printed
    rows = json.loads(out.read_text())["envs"]
    shell = [r for r in rows if r["env"] == "envgym/Terminal-v0 (bwrap)"]
    assert [r["difficulty"] for r in shell] == ["easy", "medium", "hard"]
    assert all(r["steps_per_s"] > 0 and r["reset_p50_ms"] > 0 for r in shell)


def test_the_sessions_benchmark_reports_every_row():
    require_backend("bwrap")
    bench = load("sessions")
    rows = bench.measure("bwrap", runs=8, takes=3, episodes=2)
    names = list(rows)
    for wanted in ("start", "reset: take", "exec `true`", "snapshot", "restore", "fork"):
        assert any(name.startswith(wanted) for name in names), (wanted, names)
    assert any("bisect-hard-0" in name for name in names)
    assert rows["episodes/s (pool of 4, 4 threads)"][0] > 0


def test_repofix_tasks_generate_side_by_side_in_threads():
    """The oracle benchmark's thread workers reset RepoFix envs at once: each
    reset runs the generated package in this process, and once failed with
    "dictionary changed size during iteration" when another thread imported
    meanwhile. Threads switching as often as possible make that race likely."""
    from envgym.envs.terminal.repofix import make_repo_task

    seeds = range(24)
    alone = {seed: make_repo_task(seed, "easy") for seed in seeds}
    made, errors = {}, []

    def work(offset: int) -> None:
        try:
            for seed in seeds[offset::4]:
                made[seed] = make_repo_task(seed, "easy")
        except Exception as exc:  # reported below
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    assert made == alone
