"""Terminal-v0 (every family) and RepoFix-v0 played over 100 seeds per level
on bwrap with the oracle and the random agent: the oracle succeeds on every
seed; the random agent's mean reward and success rate stay below 5% in every
family at every level. Marked ``sweep`` (minutes): ENVGYM_SWEEPS=1 runs it.

Each case prints its row of the table in docs/terminal-tasks.md ("Random
agent over 100 seeds"); with ``ENVGYM_SWEEP_TABLE=path`` the rows are also
appended to that file.

Below it, the default tests of what the sweep found: a family whose checks a
random command sequence could pass (``build`` at easy: running the broken
script as given built the outputs its bug spares, 6.8% mean reward).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import replace

import gymnasium as gym
import pytest
from sandbox_backends import require_backend
from terminal_play import play_episode, play_solution, verdicts

import envgym  # noqa: F401 - registers the ids
from envgym.agents import make_agent
from envgym.envs.terminal.families import FAMILIES, make_task
from envgym.envs.terminal.task import LEVELS
from envgym.sandbox import open_sandbox

SEEDS = range(100)
#: The random agent's mean reward and success rate must stay under this.
RANDOM_BOUND = 0.05
BACKEND = "bwrap"  # the faster backend; docker runs the same env and grader code
CASES = [("envgym/Terminal-v0", family) for family in sorted(FAMILIES)]
CASES.append(("envgym/RepoFix-v0", None))


def _play(env: gym.Env, agent, seed: int) -> tuple[float, bool, str]:
    total, info, _ = play_episode(env, agent, seed)
    return total, bool(info["success"]), info["task_id"]


@pytest.mark.sweep
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(("env_id", "family"), CASES, ids=[f or "repofix" for _, f in CASES])
def test_oracle_always_and_random_under_five_percent(env_id, family, level):
    require_backend(BACKEND)
    kwargs = {"family": family} if family else {}
    env = gym.make(env_id, difficulty=level, sandbox=BACKEND, **kwargs)
    start = time.monotonic()
    oracle = make_agent("oracle", env, seed=0)
    failed = []
    for seed in SEEDS:
        total, success, task_id = _play(env, oracle, seed)
        if not success or total != pytest.approx(1.0):
            failed.append(task_id)
    rewards, successes = [], []
    for seed in SEEDS:
        total, success, _ = _play(env, make_agent("random", env, seed=seed), seed)
        rewards.append(total)
        successes.append(success)
    env.close()
    mean, rate = statistics.fmean(rewards), statistics.fmean(successes)
    row = (
        f"| {family or 'repofix'} | {level} | {len(SEEDS) - len(failed)}/{len(SEEDS)} | "
        f"{mean:.3f} | {rate:.2f} | {max(rewards):.2f} | {time.monotonic() - start:.0f} s |"
    )
    print("\n" + row)
    if os.environ.get("ENVGYM_SWEEP_TABLE"):
        with open(os.environ["ENVGYM_SWEEP_TABLE"], "a") as f:
            f.write(row + "\n")
    assert not failed, f"the oracle failed {failed}"
    assert mean < RANDOM_BOUND and rate < RANDOM_BOUND, row


#: The build family's bugs that spare some outputs: running the broken script
#: as given builds dist/book.txt and one of the other two right.
SPARING_BUGS = ("sha256sum dist/book.txt > dist/SHA256SUMS", "wc -l < dist/book.txt")


def test_running_the_broken_build_script_as_given_passes_no_check():
    require_backend("bwrap")
    tasks = []
    for bug in SPARING_BUGS:
        seed = next(s for s in range(200) if bug in make_task("build", s, "easy").files["build.sh"])
        tasks.append(make_task("build", seed, "easy"))
    with open_sandbox(backend="bwrap") as box:
        for task in tasks:
            ran = replace(task, solution="bash build.sh")  # what a random agent may run
            ran = verdicts(box, task, play_solution(box, ran))
            assert not any(r.passed for r in ran), (task.task_id, ran)
            assert all(r.passed for r in verdicts(box, task, play_solution(box, task)))
