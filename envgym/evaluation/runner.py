"""Run an agent for a number of seeded episodes and return (or write) a results dict.

Episode ``i`` resets the env with ``seed + i``; its agent is seeded from that
seed by `agent_seed`, so a run is reproducible and any one episode of it can
be re-run on its own.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from envgym.agents import is_batch_agent, make_agent, parse_agent_spec
from envgym.core import coerce_action
from envgym.evaluation.identity import env_hash, env_version
from envgym.evaluation.inputs import check_inputs, make_evaluation_env, prepare_output_path
from envgym.evaluation.results_file import SCHEMA_VERSION, write_results
from envgym.evaluation.summary import summarize

__all__ = [
    "MAX_STEPS_PER_EPISODE",
    "ProgressCallback",
    "agent_seed",
    "evaluate",
    "results_dict",
]

#: A correct env ends every episode through its turn limit; this only stops a
#: broken one from hanging an evaluation forever.
MAX_STEPS_PER_EPISODE = 100_000

ProgressCallback = Callable[[int, int], None]


def agent_seed(episode_seed: int) -> int:
    """The seed an episode's agent gets: derived from the episode seed, never equal to it.

    Gymnasium seeds `env.np_random` exactly as `numpy.random.default_rng(seed)`
    does, so an agent seeded with the env's own seed draws the env's numbers
    (a random guesser would "know" the secret). A spawned child stream of the
    seed is independent of it.
    """
    child = np.random.SeedSequence(entropy=episode_seed, spawn_key=(1,))
    return int(child.generate_state(1, dtype=np.uint32)[0])


def _run_episode(env: gym.Env, agent_name: str, episode_seed: int) -> dict[str, Any]:
    obs, info = env.reset(seed=episode_seed)
    agent = make_agent(agent_name, env, seed=agent_seed(episode_seed))
    agent.reset()
    task_id = info.get("task_id")
    actions: list[str] = []
    rewards: list[float] = []
    terminated = truncated = False
    while not (terminated or truncated):
        if len(actions) >= MAX_STEPS_PER_EPISODE:
            raise RuntimeError(
                f"episode with seed {episode_seed} did not end after {MAX_STEPS_PER_EPISODE} "
                "steps; the env's turn limit is broken"
            )
        action = coerce_action(agent.act(obs, info))
        obs, reward, terminated, truncated, info = env.step(action)
        actions.append(action)
        rewards.append(float(reward))
    record: dict[str, Any] = {
        "seed": episode_seed,
        "agent_seed": agent_seed(episode_seed),
        "actions": actions,
        "rewards": rewards,
        "return": float(sum(rewards)),
        "success": bool(info.get("success", False)),
        "turns": len(actions),
        "terminated": bool(terminated),
        "truncated": bool(truncated),
    }
    if isinstance(task_id, str) and task_id:
        record["task_id"] = task_id
    if is_batch_agent(agent):
        # An LLM agent counts the tokens of its episode (slot 0 is the plain `act`).
        record["usage"] = dict(agent.usage(0))
    return record


def evaluate(
    env_id: str,
    agent_name: str = "random",
    episodes: int = 10,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    progress: ProgressCallback | None = None,
    out: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Run `episodes` episodes of `agent_name` on `env_id` and return a results dict.

    Episode ``i`` resets the env with ``seed + i`` and gets a fresh agent
    seeded with `agent_seed` of that seed (recorded as ``agent_seed``). The
    header records `seed` and `episodes` (as ``num_episodes``).
    `progress(done, total)` is called before the first episode and after each
    one. With `out`, the file is checked to be writable before
    any episode runs and written at the end.

    Raises KeyError for an unknown env id and `EvaluationError` for any other
    bad input, always before the first episode.
    """
    check_inputs(env_id, agent_name, episodes, seed, env_kwargs)
    out_path = prepare_output_path(out) if out is not None else None
    kwargs = dict(env_kwargs or {})
    hash_ = env_hash(env_id)
    env = make_evaluation_env(env_id, kwargs)
    records: list[dict[str, Any]] = []
    try:
        if progress is not None:
            progress(0, episodes)
        for i in range(episodes):
            records.append(_run_episode(env, agent_name, seed + i))
            if progress is not None:
                progress(i + 1, episodes)
        difficulty = getattr(env.unwrapped, "difficulty", None)
    finally:
        env.close()
    results = results_dict(
        env_id, kwargs, parse_agent_spec(agent_name).record(), records, difficulty, hash_, seed
    )
    if out_path is not None:
        write_results(results, out_path)
    return results


def results_dict(
    env_id: str,
    kwargs: dict[str, Any],
    agent: dict[str, Any],
    records: list[dict[str, Any]],
    difficulty: Any,
    hash_: str,
    seed: int,
) -> dict[str, Any]:
    """A results file's content for `records`, the episodes with seeds `seed` onwards
    (`evaluate` and `envgym.evaluation.batch.evaluate_many` both write these)."""
    results: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "env_id": env_id,
        "env_version": env_version(env_id),
        "env_hash": hash_,
        "env_kwargs": kwargs,
        # What was asked for, so a verifier can check the file holds exactly that run.
        "seed": seed,
        "num_episodes": len(records),
        "agent": agent,
        "episodes": records,
        "summary": summarize(records),
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    if isinstance(difficulty, str):
        results["difficulty"] = difficulty
    return results
