"""Episodes per second of envgym/Terminal-v0 and envgym/RepoFix-v0 played by
the oracle, 4 episodes at a time, on docker and on bwrap.

Each row runs 4 envs made with `gym.make(id, sandbox=BACKEND,
session_pool_size=4, grader_pool_size=4)` in one `TextVectorEnv` with thread
workers (``workers="remote"``: every env in this process, each step in a
thread of its own, so the 4 envs share one pool of 4 warm sessions and one
of 4 grader sandboxes). Every env is played by `ShellOracle`: its first
reply runs the task's reference solution (the session taken from the pool,
the starting tree put in, the task's set-up and the solution run), its second
is ``<done/>`` (the final tree snapshotted and every check run by the trusted
grader in fresh sandbox jobs). Episodes/s counts whole episodes, grading
included, from the first step after a warm-up round; the envs step in
lockstep, as a trainer's batch does (a vector step waits for the slowest of
the four). The tasks go round a fixed schedule shared by the 4 envs: every
Terminal family at every level (39 tasks), every RepoFix level; each must
succeed.

Per row: episodes/s, and the p50 and p99 of each env's own calls: reset (a
task generated; the shell is taken at the first command, not at reset), the
first step (take, set-up, solution) and the last (snapshot and grading), and
every step together.

    python benchmarks/terminal_envs.py [--backends docker,bwrap] [--episodes 66]
        [--ids envgym/Terminal-v0 envgym/RepoFix-v0] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
from typing import Any

import gymnasium as gym
import numpy as np

import envgym  # noqa: F401  (registers the ids)
from envgym.envs.terminal import runtime
from envgym.envs.terminal.agents import ShellOracle
from envgym.envs.terminal.families import FAMILIES
from envgym.envs.terminal.task import LEVELS
from envgym.vector import TextVectorEnv

IDS = ("envgym/Terminal-v0", "envgym/RepoFix-v0")
#: Episodes at once, warm sessions and grader sandboxes.
CONCURRENT = 4


def schedule(env_id: str, seed: int = 0) -> list[tuple[str, str]]:
    """The (difficulty, task id) of the episodes, in the order they are played:
    every family at every level (Terminal), every level (RepoFix), one seed each."""
    if env_id == "envgym/RepoFix-v0":
        return [(level, f"repofix-{level}-{seed}") for level in LEVELS]
    return [
        (level, f"{family}-{level}-{seed}") for level, family in itertools.product(LEVELS, FAMILIES)
    ]


class Timed(gym.Wrapper):
    """Times each reset and step of the env it wraps, and starts each episode on
    the next task of a schedule shared with the other envs of the row."""

    def __init__(self, env: gym.Env, tasks, times: dict[str, list[float]]) -> None:
        super().__init__(env)
        self.tasks = tasks  # a shared iterator with a lock: next_task()
        self.times = times
        self._turn = 0

    def reset(self, *, seed=None, options=None):
        if not options:
            level, task_id = self.tasks()
            options = {"difficulty": level, "task_id": task_id}
        start = time.perf_counter()
        out = self.env.reset(seed=seed, options=options)
        self.times["reset"].append(time.perf_counter() - start)
        self._turn = 0
        return out

    def step(self, action):
        start = time.perf_counter()
        out = self.env.step(action)
        elapsed = time.perf_counter() - start
        done = out[2] or out[3]
        self.times["step"].append(elapsed)
        if done:
            self.times["last step (grading)"].append(elapsed)
        elif self._turn == 0:
            self.times["first step (shell, solution)"].append(elapsed)
        self._turn += 1
        return out


def _round_robin(items: list) -> Any:
    lock = threading.Lock()
    cycle = itertools.cycle(items)

    def next_task():
        with lock:
            return next(cycle)

    return next_task


def oracle_row(
    env_id: str, backend: str, episodes: int, concurrent: int = CONCURRENT
) -> dict[str, Any]:
    """Episodes/s and call latencies of ``episodes`` oracle episodes of ``env_id``
    on ``backend``, ``concurrent`` at a time on pools of ``concurrent``."""
    times: dict[str, list[float]] = {
        "reset": [],
        "step": [],
        "first step (shell, solution)": [],
        "last step (grading)": [],
    }
    next_task = _round_robin(schedule(env_id))
    envs: dict[int, gym.Env] = {}

    def factory(i: int):
        def make() -> gym.Env:
            env = gym.make(
                env_id,
                sandbox=backend,
                session_pool_size=concurrent,
                grader_pool_size=concurrent,
            )
            envs[i] = Timed(env, next_task, times)
            return envs[i]

        return make

    vec = TextVectorEnv(env_fns=[factory(i) for i in range(concurrent)], workers="remote")
    # The pools the envs use (made here first, so they are warm when timing starts).
    sessions = runtime.session_pool(backend, envs[0].unwrapped._limits, concurrent)
    graders = runtime.grader_pool(backend, concurrent)
    try:
        sessions.wait_ready()
        obs, _ = vec.reset(seed=0)
        done = failures = 0
        started = None
        warm_up = concurrent  # one episode per env, untimed: pools and caches settle
        while done < episodes + warm_up:
            replies = []
            for i in range(concurrent):
                info = vec.env_info(i)
                replies.append(ShellOracle(envs[i]).act(obs[i], info))
            obs, _, terminated, truncated, infos = vec.step(replies)
            for i in np.flatnonzero(terminated | truncated):
                final = vec.final_info(int(i)) or {}
                if not final.get("success"):
                    failures += done >= warm_up  # only timed episodes count
                    print(f"  {final.get('task_id')}: the oracle failed: {final.get('grade')}")
                done += 1
                if done == warm_up:
                    started = time.perf_counter()
                    for samples in times.values():
                        samples.clear()
        elapsed = time.perf_counter() - started
    finally:
        vec.close()
        # This row's pools go, so the next row's backend runs alone.
        sessions.close()
        graders.close()
    row: dict[str, Any] = {
        "env": env_id,
        "backend": backend,
        "episodes": done - warm_up,
        "failures": failures,
        "episodes_per_s": (done - warm_up) / elapsed,
    }
    for name, samples in times.items():
        ms = np.array(samples) * 1000
        row[name] = (float(np.percentile(ms, 50)), float(np.percentile(ms, 99)))
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="docker,bwrap")
    parser.add_argument("--episodes", type=int, default=66, help="timed episodes per row")
    parser.add_argument("--ids", nargs="+", default=list(IDS), choices=IDS)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error("--episodes must be at least 1")
    rows = [
        oracle_row(env_id, backend, args.episodes)
        for env_id in args.ids
        for backend in args.backends.split(",")
    ]
    names = [n for n in rows[0] if isinstance(rows[0][n], tuple)]
    print(
        f"| env | backend | episodes | oracle successes | episodes/s | "
        f"{' | '.join(f'{n} p50 / p99 ms' for n in names)} |"
    )
    print(f"|---|---|---:|---:|---:|{'---:|' * len(names)}")
    for row in rows:
        cells = [f"{row[n][0]:.1f} / {row[n][1]:.1f}" for n in names]
        print(
            f"| {row['env']} | {row['backend']} | {row['episodes']} | "
            f"{row['episodes'] - row['failures']} | {row['episodes_per_s']:.2f} | "
            f"{' | '.join(cells)} |"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 1 if any(row["failures"] for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
