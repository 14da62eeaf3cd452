"""Steps per second of `TextVectorEnv` with subprocess workers against sync, same run.

The workload is CPU-heavy on purpose: hard Sokoban with a three-turn limit, so
level generation (a reset every third step, done inside the step by same-step
autoreset) dominates. Each reply names a move drawn from the env's own
``info["admissible_actions"]`` with draws made before timing; only time inside
``step()`` counts. Sync and subprocess passes alternate, and each keeps its best
pass, since a shared machine only ever makes a pass slower. The same run also
measures the machine's ceiling: how much faster the worker count of processes
burn pure-Python CPU than one process does (on a machine shared with other
jobs this can be far below the CPU count, and no worker kind can beat it).

    python benchmarks/vector.py                      # 32 envs, one worker per CPU
    python benchmarks/vector.py --num-envs 64 --steps 300 --workers 4

`measure_steps_per_second` is importable for other benchmarks.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import time
from typing import Any

import numpy as np

from envgym.vector import TextVectorEnv

CPU_HEAVY = ("envgym/Sokoban-v0", {"difficulty": "hard", "max_turns": 3})


def measure_steps_per_second(
    envs: TextVectorEnv, steps: int, seed: int = 0, warmup: int = 5
) -> float:
    """Env steps per second (batch steps times ``num_envs``) over `steps` batch
    steps, counting only time inside ``envs.step``."""
    rng = np.random.default_rng(seed)
    draws = rng.random((warmup + steps, envs.num_envs))
    _, infos = envs.reset(seed=seed)
    busy = 0.0
    for t, row in enumerate(draws):
        moves = infos["admissible_actions"]
        picks = zip(moves, row, strict=True)
        actions = [f"<answer>{m[int(u * len(m))]}</answer>" for m, u in picks]
        start = time.perf_counter()
        _, _, _, _, infos = envs.step(actions)
        if t >= warmup:
            busy += time.perf_counter() - start
    return steps * envs.num_envs / busy


def _burn(n: int) -> float:
    start = time.perf_counter()
    total = 0
    for i in range(n):
        total += i * i
    return time.perf_counter() - start


def parallel_ceiling(processes: int, n: int = 3_000_000) -> float:
    """How many times more pure-Python work `processes` processes do than one."""
    ctx = multiprocessing.get_context("forkserver")
    with ctx.Pool(processes) as pool:
        pool.map(_burn, [n // 10] * processes)  # start-up and warm-up
        one = min(pool.map(_burn, [n]))
        start = time.perf_counter()
        pool.map(_burn, [n] * processes)
        together = time.perf_counter() - start
    return processes * one / together


def compare(
    num_envs: int = 32,
    steps: int = 100,
    repeats: int = 3,
    num_workers: int | None = None,
    env: tuple[str, dict[str, Any]] = CPU_HEAVY,
) -> dict[str, float]:
    """Best-of-`repeats` env steps/s for sync and subprocess workers, their ratio,
    and the machine's best-of-`repeats` parallel ceiling for as many processes."""
    best = {"sync": 0.0, "subprocess": 0.0}
    batches = {
        kind: TextVectorEnv(env, num_envs, workers=kind, num_workers=num_workers) for kind in best
    }
    workers = num_workers or min(os.cpu_count() or 1, num_envs)
    ceiling = 0.0
    try:
        for attempt in range(repeats):
            for kind, envs in batches.items():
                best[kind] = max(best[kind], measure_steps_per_second(envs, steps, seed=attempt))
            ceiling = max(ceiling, parallel_ceiling(workers))
    finally:
        for envs in batches.values():
            envs.close()
    return {**best, "ratio": best["subprocess"] / best["sync"], "ceiling": ceiling}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument("--steps", type=int, default=100, help="batch steps per pass")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None, help="subprocess workers")
    args = parser.parse_args()
    env_id, kwargs = CPU_HEAVY
    workers = args.workers or min(os.cpu_count() or 1, args.num_envs)
    print(f"{env_id} {kwargs}, {args.num_envs} envs, {workers} subprocess workers")
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    result = compare(args.num_envs, args.steps, args.repeats, args.workers)
    print(f"{'workers':<12}{'env steps/s':>12}")
    print(f"{'sync':<12}{result['sync']:>12.0f}")
    print(f"{'subprocess':<12}{result['subprocess']:>12.0f}")
    print(f"subprocess / sync: {result['ratio']:.2f}x")
    print(f"ceiling ({workers} processes burning CPU / 1): {result['ceiling']:.2f}x")


if __name__ == "__main__":
    main()
