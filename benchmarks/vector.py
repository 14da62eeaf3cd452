"""Steps per second of `TextVectorEnv` with subprocess workers against sync, same run.

The workload is CPU-heavy on purpose: hard Sokoban with a three-turn limit, so
level generation (a reset every third step, done inside the step by same-step
autoreset) dominates. Each reply names a move drawn from the env's own
``info["admissible_actions"]`` with draws made before timing; only time inside
``step()`` counts.

Each round runs three passes back to back: sync, subprocess, and subprocess
with ``prefetch=True`` (workers reset spare envs ahead while they wait). A
kind's speed-up is the median over rounds of its pass over that round's sync
pass: passes close in time share the machine's state. (Best passes are listed
too, but the best sync and subprocess passes can fall in different rounds.)

Each round also reports the CPU time the same steps took in all processes,
over sync's: above 1.0x, the machine's cores slowed each other down (a host
that gives a VM two hyperthreads of one core, or other jobs), not that the
workers idled; and the machine's ceiling: how many times more of the env's
resets one process per CPU does than one process alone, on the same seeds.
On a shared VM both swing from round to round; no worker kind beats them.

Last, the time a trainer waits inside ``step()`` when it spends 50 ms
generating between steps, for each kind: with ``prefetch=True`` the workers
reset spare envs during that time, so resets leave the step.

    python benchmarks/vector.py                      # 32 envs, one worker per CPU, 6 rounds
    python benchmarks/vector.py --num-envs 64 --steps 300 --workers 4

`measure_steps_per_second` is importable for other benchmarks.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import time
from typing import Any, NamedTuple

import numpy as np

from envgym.vector import TextVectorEnv

CPU_HEAVY = ("envgym/Sokoban-v0", {"difficulty": "hard", "max_turns": 3})


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU seconds that the processes `pids` have used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in set(pids):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


class Pass(NamedTuple):
    steps_per_s: float
    cpu_ms_per_step: float  # CPU time of this process and the workers, per env step


def measure_steps_per_second(
    envs: TextVectorEnv, steps: int, seed: int = 0, warmup: int = 5
) -> Pass:
    """Env steps per second (batch steps times ``num_envs``) over `steps` batch
    steps, counting only time inside ``envs.step``, and the CPU time the same
    steps took in this process and the workers together."""
    rng = np.random.default_rng(seed)
    draws = rng.random((warmup + steps, envs.num_envs))
    _, infos = envs.reset(seed=seed)
    pids = [os.getpid(), *envs.worker_pids()]
    busy = cpu = 0.0
    for t, row in enumerate(draws):
        if t == warmup:
            cpu = cpu_seconds(pids)
        moves = infos["admissible_actions"]
        picks = zip(moves, row, strict=True)
        actions = [f"<answer>{m[int(u * len(m))]}</answer>" for m, u in picks]
        start = time.perf_counter()
        _, _, _, _, infos = envs.step(actions)
        if t >= warmup:
            busy += time.perf_counter() - start
    done = steps * envs.num_envs
    return Pass(done / busy, 1000 * (cpu_seconds(pids) - cpu) / done)


_CEILING_ENV: dict[str, Any] = {}


def _env_work(env: tuple[str, dict[str, Any]], resets: int, seed: int) -> float:
    """Seconds for `resets` resets of `env` (the benchmark's costly part), in this process."""
    import gymnasium as gym

    key = repr(env)
    if key not in _CEILING_ENV:
        _CEILING_ENV[key] = gym.make(env[0], **env[1])
        _CEILING_ENV[key].reset(seed=0)
    made = _CEILING_ENV[key]
    start = time.perf_counter()
    for s in range(seed, seed + resets):
        made.reset(seed=s)
    return time.perf_counter() - start


def parallel_ceiling(
    processes: int, env: tuple[str, dict[str, Any]] = CPU_HEAVY, resets: int = 150
) -> float:
    """How many times more of `env`'s resets `processes` processes do than one,
    on the same seeds: what this machine allows any worker kind right now."""
    ctx = multiprocessing.get_context("forkserver")
    with ctx.Pool(processes) as pool:
        pool.starmap(_env_work, [(env, 5, 0)] * processes)  # build and warm up
        one = min(pool.starmap(_env_work, [(env, resets, 1000)]))
        start = time.perf_counter()
        pool.starmap(_env_work, [(env, resets, 1000)] * processes)
        together = time.perf_counter() - start
    return processes * one / together


#: The kinds compared: name -> TextVectorEnv keyword arguments.
KINDS: dict[str, dict[str, Any]] = {
    "sync": {"workers": "sync"},
    "subprocess": {"workers": "subprocess"},
    "subprocess+prefetch": {"workers": "subprocess", "prefetch": True},
}


def make_kind(
    kind: str, env: tuple[str, dict[str, Any]], num_envs: int, num_workers: int | None
) -> TextVectorEnv:
    """The vector env of one of `KINDS` (`num_workers` for the process kinds)."""
    options = KINDS[kind]
    if options["workers"] != "sync":
        options = {**options, "num_workers": num_workers}
    return TextVectorEnv(env, num_envs, **options)


class Round(NamedTuple):
    ratios: dict[str, float]  # each kind's steps/s over sync's, passes back to back
    cpu_ratios: dict[str, float]  # CPU time per env step over sync's: the same work
    ceiling: float  # parallel_ceiling right after the passes


def compare(
    num_envs: int = 32,
    steps: int = 100,
    repeats: int = 3,
    num_workers: int | None = None,
    env: tuple[str, dict[str, Any]] = CPU_HEAVY,
) -> dict[str, Any]:
    """Best-of-`repeats` env steps/s of each of `KINDS`; the median over rounds
    of each round's ratio to sync ("ratio" is plain subprocess's,
    "prefetch_ratio" with prefetch); each round's ratios (passes run back to back) and the machine's
    parallel ceiling measured right after them; the ceiling's median."""
    best = dict.fromkeys(KINDS, 0.0)
    rounds: list[Round] = []
    batches = {}
    try:
        for kind in KINDS:
            batches[kind] = make_kind(kind, env, num_envs, num_workers)
        workers = num_workers or min(os.cpu_count() or 1, num_envs)
        for attempt in range(repeats):
            passes = {
                kind: measure_steps_per_second(envs, steps, seed=attempt)
                for kind, envs in batches.items()
            }
            for kind, result in passes.items():
                best[kind] = max(best[kind], result.steps_per_s)
            sync = passes["sync"]
            rounds.append(
                Round(
                    ratios={k: p.steps_per_s / sync.steps_per_s for k, p in passes.items()},
                    cpu_ratios={
                        k: p.cpu_ms_per_step / sync.cpu_ms_per_step for k, p in passes.items()
                    },
                    ceiling=parallel_ceiling(min(workers, os.cpu_count() or 1), env),
                )
            )
    finally:
        for envs in batches.values():
            envs.close()
    return {
        **best,
        "ratio": float(np.median([r.ratios["subprocess"] for r in rounds])),
        "prefetch_ratio": float(np.median([r.ratios["subprocess+prefetch"] for r in rounds])),
        "rounds": rounds,
        "ceiling": float(np.median([r.ceiling for r in rounds])),
    }


def step_latency_during_training(
    num_envs: int = 32,
    steps: int = 60,
    generate_ms: float = 50.0,
    num_workers: int | None = None,
    env: tuple[str, dict[str, Any]] = CPU_HEAVY,
) -> dict[str, float]:
    """Mean milliseconds inside ``envs.step`` for each of `KINDS` when the
    caller spends `generate_ms` between steps (a trainer's GPU generating: idle
    time the prefetching workers use to reset ahead)."""
    out = {}
    for kind in KINDS:
        with make_kind(kind, env, num_envs, num_workers) as envs:
            rng = np.random.default_rng(0)
            _, infos = envs.reset(seed=0)
            busy = 0.0
            for _ in range(steps):
                time.sleep(generate_ms / 1000)
                moves = infos["admissible_actions"]
                actions = [f"<answer>{m[int(rng.random() * len(m))]}</answer>" for m in moves]
                start = time.perf_counter()
                _, _, _, _, infos = envs.step(actions)
                busy += time.perf_counter() - start
            out[kind] = 1000 * busy / steps
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument("--steps", type=int, default=60, help="batch steps per pass")
    parser.add_argument("--repeats", type=int, default=6, help="rounds")
    parser.add_argument("--workers", type=int, default=None, help="subprocess workers")
    args = parser.parse_args()
    env_id, kwargs = CPU_HEAVY
    workers = args.workers or min(os.cpu_count() or 1, args.num_envs)
    print(f"{env_id} {kwargs}, {args.num_envs} envs, {workers} subprocess workers")
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    result = compare(args.num_envs, args.steps, args.repeats, args.workers)
    print(f"{'workers':<22}{'best env steps/s':>17}{'vs sync, median of rounds':>27}")
    medians = {"sync": 1.0, "subprocess": result["ratio"]}
    medians["subprocess+prefetch"] = result["prefetch_ratio"]
    for kind in KINDS:
        print(f"{kind:<22}{result[kind]:>17.0f}{medians[kind]:>26.2f}x")
    print("rounds: steps/s over sync (CPU time per step over sync), then the ceiling")
    for k, r in enumerate(result["rounds"]):
        cells = ", ".join(
            f"{kind} {r.ratios[kind]:.2f}x ({r.cpu_ratios[kind]:.2f}x)" for kind in KINDS
        )
        print(f"  {k}: {cells}; ceiling {r.ceiling:.2f}x")
    print(
        f"ceiling (the env's resets, one process per CPU / one process), median: "
        f"{result['ceiling']:.2f}x"
    )
    generate_ms = 50.0
    latency = step_latency_during_training(args.num_envs, generate_ms=generate_ms)
    print(f"step latency with {generate_ms:g} ms of generation between steps (mean ms per step)")
    for kind, ms in latency.items():
        print(f"  {kind:<22}{ms:>8.1f} ms{latency['sync'] / ms:>8.1f}x")


if __name__ == "__main__":
    main()
