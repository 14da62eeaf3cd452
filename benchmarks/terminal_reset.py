"""Reset time of Terminal-v0's task families, per level: building the task
and its starting tree (the git family writes its repository object by
object, no git runs); `env.reset` (which builds the task; the session is
taken on the first command); and `env.reset` plus a first command, ``true``
(a warm session taken from the pool, the tree loaded, the set-up run, the
command's round trip), p50 and p99 in ms.

    python benchmarks/terminal_reset.py [--families git,make] [--resets 50] [--backend bwrap]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import gymnasium as gym

import envgym  # noqa: F401 - registers the ids
from envgym.envs.terminal.families import make_task
from envgym.envs.terminal.grade import starting_tree
from envgym.envs.terminal.task import LEVELS


def p50_p99(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return f"{statistics.median(ordered) * 1000:7.1f} {p99 * 1000:7.1f}"


def build_times(family: str, level: str, runs: int) -> list[float]:
    samples = []
    for seed in range(runs):
        started = time.perf_counter()
        starting_tree(make_task(family, seed, level))
        samples.append(time.perf_counter() - started)
    return samples


def reset_times(family: str, level: str, runs: int, backend: str):
    env = gym.make("envgym/Terminal-v0", sandbox=backend, family=family, difficulty=level)
    env.reset(seed=0)
    env.step("<bash>true</bash>")  # the pool warms up
    resets, firsts = [], []
    for seed in range(1, runs + 1):
        started = time.perf_counter()
        env.reset(seed=seed)
        resets.append(time.perf_counter() - started)
        env.step("<bash>true</bash>")
        firsts.append(time.perf_counter() - started)
    env.close()
    return resets, firsts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="git,make")
    parser.add_argument("--resets", type=int, default=50)
    parser.add_argument("--backend", default="bwrap")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; ms: p50 p99")
    print(f"{'family':8} {'level':7} {'task+tree':>15} {'env.reset':>15} {'+1st command':>15}")
    for family in args.families.split(","):
        for level in LEVELS:
            build = p50_p99(build_times(family, level, args.resets))
            resets, firsts = reset_times(family, level, args.resets, args.backend)
            print(f"{family:8} {level:7} {build} {p50_p99(resets)} {p50_p99(firsts)}", flush=True)


if __name__ == "__main__":
    main()
