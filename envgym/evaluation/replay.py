"""Replay recorded episodes from their seeds and actions, and say where they differ.

The leaderboard trusts a results file only as far as this reproduces it: the
same env, reset with the recorded seed and stepped with the recorded replies,
must give the recorded rewards, success and ending.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from envgym.evaluation.inputs import make_evaluation_env

__all__ = ["ReplayResult", "replay_episode", "replay_in_env", "verify_results"]


@dataclass
class ReplayResult:
    """One recorded episode replayed from its seed and actions."""

    index: int
    seed: int
    rewards: list[float]
    episode_return: float
    success: bool
    terminated: bool
    truncated: bool
    #: What differs from the record; empty when the replay reproduces it.
    problems: list[str] = field(default_factory=list)

    @property
    def matches(self) -> bool:
        return not self.problems


def _same_number(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def replay_in_env(env: gym.Env, results: Mapping[str, Any], index: int) -> ReplayResult:
    """Replay episode `index` of `results` in `env` (made from the recorded id and
    kwargs; one env serves every episode of a file)."""
    episodes = results["episodes"]
    if not -len(episodes) <= index < len(episodes):
        raise IndexError(
            f"episode index {index} is out of range; the file holds {len(episodes)} episodes"
        )
    index %= len(episodes)
    record = episodes[index]
    obs, info = env.reset(seed=record["seed"])
    rewards: list[float] = []
    terminated = truncated = False
    problems: list[str] = []
    for turn, action in enumerate(record["actions"], start=1):
        if terminated or truncated:
            problems.append(
                f"the episode ended after {turn - 1} turns but "
                f"{len(record['actions'])} actions are recorded"
            )
            break
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(float(reward))
    success = bool(info.get("success", False))
    recorded = [float(r) for r in record["rewards"]]
    for turn, (got, want) in enumerate(zip(rewards, recorded, strict=False), start=1):
        if not _same_number(got, want):
            problems.append(f"turn {turn}: replayed reward {got!r} but the file records {want!r}")
            break
    if not (terminated or truncated):
        problems.append(
            f"the episode had not ended after the {len(record['actions'])} recorded actions"
        )
    if success != bool(record["success"]):
        problems.append(f"replayed success is {success} but the file records {record['success']}")
    for key, value in (("terminated", terminated), ("truncated", truncated)):
        if key in record and bool(record[key]) != value:
            problems.append(f"replayed {key} is {value} but the file records {record[key]}")
    return ReplayResult(
        index=index,
        seed=record["seed"],
        rewards=rewards,
        episode_return=float(sum(rewards)),
        success=success,
        terminated=bool(terminated),
        truncated=bool(truncated),
        problems=problems,
    )


def replay_episode(results: Mapping[str, Any], index: int) -> ReplayResult:
    """Replay episode `index` of `results` in a fresh env made from the recorded id and kwargs.

    Resets with the recorded seed, steps the recorded actions and compares
    rewards, success and how the episode ended; `ReplayResult.problems` lists
    every difference (empty when the replay matches). The env's code is the
    installed one: compare `results["env_hash"]` with `env_hash(env_id)` to
    know whether it is the code that produced the file. Raises
    `EvaluationError` if the recorded env cannot be made.
    """
    env = make_evaluation_env(results["env_id"], results.get("env_kwargs") or {})
    try:
        return replay_in_env(env, results, index)
    finally:
        env.close()


def verify_results(results: Mapping[str, Any]) -> list[ReplayResult]:
    """Replay every episode of `results` in one env; see `replay_episode`.

    This checks the recorded rewards only. Whether to trust a file (its seeds,
    summary, env identity and arguments too) is `envgym.evaluation.verify_submission`,
    which the leaderboard runs.
    """
    env = make_evaluation_env(results["env_id"], results.get("env_kwargs") or {})
    try:
        return [replay_in_env(env, results, i) for i in range(len(results["episodes"]))]
    finally:
        env.close()
