"""How fast the leaderboard verifies a submission, against how long it took to make.

For Sokoban, Household and Search (default sizes, easy), the oracle plays
1,000 episodes through `envgym.evaluation.evaluate` (timed), and the results
file is then checked by `envgym.evaluation.verify_submission` (timed): the
schema, the env's identity, the seeds, the summary and a replay of every
episode. Both run in this process, one after the other, so the ratio holds on
a noisy machine.

    python benchmarks/leaderboard.py                 # 1,000 episodes per env
    python benchmarks/leaderboard.py --episodes 200  # quicker
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import envgym
from envgym.evaluation import evaluate, verify_submission

ENVS = ("envgym/Sokoban-v0", "envgym/Household-v0", "envgym/Search-v0")


def measure(env_id: str, episodes: int) -> dict[str, float]:
    """Seconds to evaluate the oracle and to verify its results file."""
    # The first episode loads what the env shares per process (Search's index):
    # a warm-up run keeps that out of both timings.
    evaluate(env_id, "oracle", episodes=1, seed=10**6)
    start = time.perf_counter()
    results = evaluate(env_id, "oracle", episodes=episodes, seed=0)
    evaluated = time.perf_counter() - start
    start = time.perf_counter()
    verdict = verify_submission(results)
    verified = time.perf_counter() - start
    if not verdict.accepted:
        raise SystemExit(f"{env_id}: the oracle's own file was rejected: {verdict.reason}")
    return {
        "env": env_id,
        "episodes": episodes,
        "evaluate_s": evaluated,
        "verify_s": verified,
        "verified_per_s": episodes / verified,
        "verify_over_evaluate": verified / evaluated,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1000, help="episodes per env")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)
    rows = [measure(env_id, args.episodes) for env_id in ENVS]
    print(f"envgym {envgym.__version__}, Python {platform.python_version()}, {platform.machine()}")
    print(f"{args.episodes} oracle episodes per env; verification includes a full replay\n")
    header = f"{'env':22} {'evaluate':>10} {'verify':>10} {'verified/s':>11} {'verify/eval':>12}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['env']:22} {row['evaluate_s']:>9.2f}s {row['verify_s']:>9.2f}s "
            f"{row['verified_per_s']:>11,.0f} {row['verify_over_evaluate']:>11.2f}x"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
