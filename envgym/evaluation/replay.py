"""Replay recorded episodes from their seeds and actions, and say where they differ.

The leaderboard trusts a results file only as far as this reproduces it: the
same env, reset with the recorded seed and stepped with the recorded replies,
must give the recorded rewards, success and ending. `replay_in_env` is the one
replay loop: the verifier (`envgym.evaluation.verify`) runs it on every
episode, and the trajectory pages (`envgym.leaderboard.trajectory`) run it
keeping the observations, to show what the agent saw. Which `env_kwargs` from
a file may make the env is `envgym.evaluation.submitted_kwargs`'s to say;
`replay_episode` and `verify_results` replay your own files and check none.
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
    #: With ``observations=True``: the observation before each replayed reply, then the last.
    observations: list[str] = field(default_factory=list)
    #: ``info["system_prompt"]`` at reset, when the env gives one (a str).
    system_prompt: str | None = None
    #: "ExceptionType: message" when the env raised on the recorded seed or a
    #: reply; the replay stopped there (and ``problems`` says so).
    error: str | None = None

    @property
    def matches(self) -> bool:
        return not self.problems


def _same_number(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def replay_in_env(
    env: gym.Env, episode: Mapping[str, Any], *, index: int = 0, observations: bool = False
) -> ReplayResult:
    """Replay the recorded `episode` (a results file's episode record) in `env`,
    made from the file's id and kwargs (one env serves every episode of a file).

    Resets with the recorded seed, steps the recorded actions (stopping where
    the episode ends) and compares rewards, success and how the episode ended
    with the record; `ReplayResult.problems` lists every difference. `index`
    only labels the result. `observations` keeps what the agent saw (pages show
    it; the verifier does not keep it, since a file may hold 100,000 turns).
    An env that raises does not raise here: ``error`` says what it raised.
    """
    seed = int(episode["seed"])
    actions = [str(a) for a in episode.get("actions") or []]
    result = ReplayResult(index, seed, [], 0.0, False, False, False)
    info: Mapping[str, Any] = {}
    try:
        obs, info = env.reset(seed=seed)
        if observations:
            result.observations.append(str(obs))
        prompt = info.get("system_prompt")
        result.system_prompt = prompt if isinstance(prompt, str) else None
        for turn, action in enumerate(actions, start=1):
            if result.terminated or result.truncated:
                result.problems.append(
                    f"the episode ended after {turn - 1} turns but {len(actions)} actions "
                    "are recorded"
                )
                break
            obs, reward, terminated, truncated, info = env.step(action)
            if observations:
                result.observations.append(str(obs))
            result.rewards.append(float(reward))
            result.terminated, result.truncated = bool(terminated), bool(truncated)
    except Exception as exc:  # a reply the env cannot take is the file's problem
        result.error = f"{type(exc).__name__}: {exc}"
        result.problems.insert(0, f"replaying it failed ({result.error})")
    result.success = bool(info.get("success", False))
    result.episode_return = float(sum(result.rewards))
    if result.error is None:
        result.problems += _differences(result, episode, len(actions))
    return result


def _differences(result: ReplayResult, episode: Mapping[str, Any], actions: int) -> list[str]:
    problems: list[str] = []
    recorded = [float(r) for r in episode.get("rewards") or []]
    for turn, (got, want) in enumerate(zip(result.rewards, recorded, strict=False), start=1):
        if not _same_number(got, want):
            problems.append(f"turn {turn}: replayed reward {got!r} but the file records {want!r}")
            break
    if not (result.terminated or result.truncated):
        problems.append(f"the episode had not ended after the {actions} recorded actions")
    if result.success != bool(episode.get("success")):
        problems.append(
            f"replayed success is {result.success} but the file records {episode.get('success')}"
        )
    for key in ("terminated", "truncated"):
        value = getattr(result, key)
        if key in episode and bool(episode[key]) != value:
            problems.append(f"replayed {key} is {value} but the file records {episode[key]}")
    return problems


def _episode(results: Mapping[str, Any], index: int) -> tuple[int, Mapping[str, Any]]:
    episodes = results["episodes"]
    if not -len(episodes) <= index < len(episodes):
        raise IndexError(
            f"episode index {index} is out of range; the file holds {len(episodes)} episodes"
        )
    index %= len(episodes)
    return index, episodes[index]


def replay_episode(results: Mapping[str, Any], index: int) -> ReplayResult:
    """Replay episode `index` of `results` in a fresh env made from the recorded id and kwargs.

    Resets with the recorded seed, steps the recorded actions and compares
    rewards, success and how the episode ended; `ReplayResult.problems` lists
    every difference (empty when the replay matches). The env's code is the
    installed one: compare `results["env_hash"]` with `env_hash(env_id)` to
    know whether it is the code that produced the file. Raises
    `EvaluationError` if the recorded env cannot be made.
    """
    index, episode = _episode(results, index)
    env = make_evaluation_env(results["env_id"], results.get("env_kwargs") or {})
    try:
        return replay_in_env(env, episode, index=index)
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
        return [
            replay_in_env(env, episode, index=i) for i, episode in enumerate(results["episodes"])
        ]
    finally:
        env.close()
