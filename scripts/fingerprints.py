"""Fingerprints of every registered env's behaviour, to compare before and after a refactor.

For each env id and difficulty level, seeds 0..N-1: the reset, an episode of
the oracle's replies (where the env has an oracle) and one of seeded random
replies, each turn's observation, reward, end flags and info; then a
snapshot taken mid-episode, one more step, a restore and the same step again.
Everything goes through one SHA-256 per (env, level); the JSON written to
``--out`` holds those digests, so two runs compare with ``diff`` or
``python scripts/fingerprints.py --compare A B``.

    python scripts/fingerprints.py --out before.json
    ... refactor ...
    python scripts/fingerprints.py --out after.json --compare before.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from typing import Any

import gymnasium as gym

import envgym
from envgym.agents import RandomAgent, make_agent
from envgym.registry import list_envs, missing_data

#: Info keys measured in wall-clock time (a sandbox's seconds): not behaviour.
#: Any key ending in "_seconds" is dropped too.
VOLATILE_KEYS = frozenset({"elapsed_s", "seconds", "wall_s", "cpu_s"})


def _canonical(value: Any) -> Any:
    """`value` as JSON-able data, with floats rounded and timing keys dropped."""
    if isinstance(value, dict):
        return {
            str(k): _canonical(v)
            for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
            if str(k) not in VOLATILE_KEYS and not str(k).endswith("_seconds")
        }
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, float):
        return "nan" if math.isnan(value) else round(value, 9)
    if hasattr(value, "tolist"):
        return _canonical(value.tolist())
    if isinstance(value, str | int | bool) or value is None:
        return value
    return repr(value)


def _episode(env: gym.Env, agent: Any, seed: int, max_turns: int, digest: Any) -> None:
    agent.reset()
    observation, info = env.reset(seed=seed)
    digest.update(json.dumps(_canonical([observation, info])).encode())
    for turn in range(max_turns):
        action = agent.act(observation, info)
        if turn == 1:
            _fork_check(env, action, digest)
        observation, reward, terminated, truncated, info = env.step(action)
        digest.update(
            json.dumps(
                _canonical([action, observation, reward, terminated, truncated, info])
            ).encode()
        )
        if terminated or truncated:
            return


def _fork_check(env: gym.Env, action: str, digest: Any) -> None:
    """Snapshot, step, restore, step again: both steps go into the digest."""
    base = env.unwrapped
    state = base.snapshot()
    first = base.step(action)
    base.restore(state)
    again = base.step(action)
    base.restore(state)
    digest.update(json.dumps(_canonical([list(first), list(again)])).encode())


def fingerprint(env_id: str, level: str, seeds: int, max_turns: int) -> str:
    digest = hashlib.sha256()
    env = gym.make(env_id, difficulty=level)
    try:
        spec = envgym.get_spec(env_id)
        for seed in range(seeds):
            if spec.oracle is not None:
                _episode(env, make_agent("oracle", env), seed, max_turns, digest)
            _episode(env, RandomAgent(seed), seed, max_turns, digest)
    finally:
        env.close()
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file of digests to write")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--max-turns", type=int, default=60)
    parser.add_argument("--env", action="append", help="only these ids (repeatable)")
    parser.add_argument("--compare", help="a JSON file of an earlier run: exit 1 on a difference")
    args = parser.parse_args(argv)
    digests: dict[str, str] = {}
    for spec in list_envs():
        if args.env and spec.id not in args.env:
            continue
        if missing_data(spec) is not None:
            print(f"{spec.id}: skipped (its data is not on this machine)", file=sys.stderr)
            continue
        for level in spec.difficulties:
            start = time.perf_counter()
            digests[f"{spec.id} {level}"] = fingerprint(spec.id, level, args.seeds, args.max_turns)
            print(
                f"{spec.id} {level}: {digests[f'{spec.id} {level}'][:16]} "
                f"({time.perf_counter() - start:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
    with open(args.out, "w") as fh:
        json.dump(digests, fh, indent=1, sort_keys=True)
    if args.compare:
        with open(args.compare) as fh:
            before = json.load(fh)
        # With --env, only the ids run are compared.
        keys = digests.keys() if args.env else before.keys() | digests.keys()
        differ = sorted(k for k in keys if before.get(k) != digests.get(k))
        for key in differ:
            print(f"DIFFERS: {key}: {before.get(key)} -> {digests.get(key)}")
        print(f"{len(keys) - len(differ)} of {len(keys)} identical")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
