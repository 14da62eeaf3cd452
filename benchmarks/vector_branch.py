"""What `TextVectorEnv.branch` costs, against a `step()` of the same batch, same run.

A tree rollout forks every live node at a branch turn, so the question a
trainer asks is how a fork compares with the step it sits between. Each round,
for each worker kind in turn: reset Sokoban (16 envs, groups of 4), play two
steps, then time ``branch(i, 3)`` from each group's first env into the rest
of its group, and one ``step()`` of the whole batch; repeat. The table gives
each kind's median fork and step time over every round and the ratio
fork / step (rounds interleave the kinds so they share the machine's state).

    python benchmarks/vector_branch.py              # sync and subprocess, 5 rounds
    python benchmarks/vector_branch.py --rounds 9 --kinds sync subprocess ray
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from envgym.vector import TextVectorEnv

SOKOBAN = "envgym/Sokoban-v0"


def one_round(envs: TextVectorEnv, rng: np.random.Generator, repeats: int) -> tuple[list, list]:
    forks, steps = [], []
    obs, infos = envs.reset(seed=int(rng.integers(1 << 20)))
    for _ in range(repeats):
        actions = [f"<answer>{rng.choice(m)}</answer>" for m in infos["admissible_actions"]]
        t0 = time.perf_counter()
        obs, _, _, _, infos = envs.step(actions)
        steps.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for g in range(envs.num_groups):
            envs.branch(g * envs.group_size, envs.group_size - 1)
        forks.append((time.perf_counter() - t0) / envs.num_groups)
    return forks, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=20, help="fork + step pairs per round")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--kinds", nargs="+", default=["sync", "subprocess"])
    args = parser.parse_args()
    if "ray" in args.kinds:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    vecs = {
        kind: TextVectorEnv(
            SOKOBAN, num_envs=args.num_envs, group_size=4, workers=kind, num_workers=2
        )
        for kind in args.kinds
    }
    forks: dict[str, list[float]] = {k: [] for k in vecs}
    steps: dict[str, list[float]] = {k: [] for k in vecs}
    rng = np.random.default_rng(0)
    try:
        for _ in range(args.rounds):
            for kind, envs in vecs.items():
                f, s = one_round(envs, rng, args.repeats)
                forks[kind] += f
                steps[kind] += s
    finally:
        for envs in vecs.values():
            envs.close()
    print(f"load average {os.getloadavg()[0]:.2f}; {args.num_envs} envs, groups of 4")
    print(f"{'workers':<12}{'fork 1->3 (ms)':>16}{'step (ms)':>12}{'fork/step':>11}")
    for kind in vecs:
        f, s = statistics.median(forks[kind]), statistics.median(steps[kind])
        print(f"{kind:<12}{f * 1e3:>16.3f}{s * 1e3:>12.3f}{f / s:>11.2f}")


if __name__ == "__main__":
    main()
