"""`play`: the one episode loop of an evaluation, and the one writer of its records.

`play(vector_env, agent, seeds)` plays every seed once on a
`envgym.vector.TextVectorEnv` in its task-queue mode: each env starts on the
next seed left and, when its episode ends, takes the next one, so N seeds on
k envs need no bookkeeping here. `evaluate` and `evaluate_many` (and through
them ``envgym eval``, ``envgym baselines`` and the trainers' held-out
evaluations) all play their episodes through it, and `episode_record` is the
only code that writes an episode of a results file.

Agents. A plain agent (``random``, ``oracle``, ...) is named by its spec and
made afresh for every episode with `make_agent` and `agent_seed` of the
episode's seed, once the env is reset to that seed. Agents that read their
env (the oracles of Code and PythonMath read the current problem) get an
`EnvView` of the env playing the episode, whose attributes are read from the
live env through `TextVectorEnv.env_attr`. A batch agent
(`envgym.agents.is_batch_agent`: LLM agents) is made once by the caller
(`make_batch_agent`), answers every waiting env in one ``act_batch`` call
(the env's index is its slot), starts each episode with ``reset_slot`` and its
``usage(slot)`` is recorded in the episode's ``"usage"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from envgym.agents import BatchAgent, is_batch_agent, make_agent
from envgym.core import coerce_action
from envgym.evaluation.inputs import EvaluationError
from envgym.vector import TextVectorEnv

__all__ = [
    "MAX_STEPS_PER_EPISODE",
    "EnvView",
    "ProgressCallback",
    "agent_seed",
    "episode_record",
    "make_batch_agent",
    "play",
]

#: A correct env ends every episode through its turn limit; this only stops a
#: broken one from hanging an evaluation forever.
MAX_STEPS_PER_EPISODE = 100_000

#: ``progress(done, total)``: episodes finished so far, of how many.
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


def episode_record(
    seed: int,
    actions: list[str],
    rewards: list[float],
    terminated: bool,
    truncated: bool,
    first_info: Mapping[str, Any],
    last_info: Mapping[str, Any],
    usage: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """One episode of a results file: its seed and agent seed, the agent's
    replies and the rewards they earned, the outcome, and the task id from the
    reset's info (and an LLM agent's token `usage`)."""
    record: dict[str, Any] = {
        "seed": seed,
        "agent_seed": agent_seed(seed),
        "actions": actions,
        "rewards": rewards,
        "return": float(sum(rewards)),
        "success": bool(last_info.get("success", False)),
        "turns": len(actions),
        "terminated": bool(terminated),
        "truncated": bool(truncated),
    }
    task_id = first_info.get("task_id")
    if isinstance(task_id, str) and task_id:
        record["task_id"] = task_id
    if usage is not None:
        record["usage"] = dict(usage)
    return record


class EnvView:
    """Env `index` of a vector env as an agent reads it: every attribute comes
    from the live env (`TextVectorEnv.env_attr`; a copy when the env lives in a
    worker process). It is its own ``unwrapped``; it cannot be stepped."""

    def __init__(self, vector_env: TextVectorEnv, index: int) -> None:
        self._vector_env = vector_env
        self._index = index

    @property
    def unwrapped(self) -> EnvView:
        return self

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._vector_env.env_attr(self._index, name)

    def __repr__(self) -> str:
        return f"EnvView(env {self._index} of {self._vector_env!r})"


def make_batch_agent(agent_spec: str, seed: int, options: Mapping[str, Any] | None) -> BatchAgent:
    """The LLM agent `agent_spec` names, made once for a whole evaluation;
    `EvaluationError` if what it makes cannot answer many episodes at once."""
    agent = make_agent(agent_spec, None, seed=agent_seed(seed), **dict(options or {}))
    if not is_batch_agent(agent):
        raise EvaluationError(
            f"{agent_spec} made a {type(agent).__name__}, which has no "
            "act_batch/reset_slot/usage; batched evaluation needs a batch agent"
        )
    return agent  # type: ignore[return-value]


class _Episode:
    """An episode in progress on one env of the vector env."""

    def __init__(self, seed: int, info: dict[str, Any], agent: Any) -> None:
        self.seed = seed
        self.first_info = info
        self.info = info
        self.agent = agent
        self.actions: list[str] = []
        self.rewards: list[float] = []


def play(
    vector_env: TextVectorEnv,
    agent: str | BatchAgent,
    seeds: Sequence[int] | Sequence[Sequence[int]],
    progress: ProgressCallback | None = None,
) -> list[list[dict[str, Any]]]:
    """Play `agent` once on every seed and return the episode records: one list
    per env source of `vector_env` (an entry of its ``envs`` list), in the order
    of that source's seeds.

    `agent` is a plain agent's spec (``"random"``, ``"oracle"``...) or a batch
    agent (`make_batch_agent`). `seeds` is one list per source, or a single list
    when the vector env runs one source; it becomes the vector env's task queue.
    `progress(done, total)` is called after each episode. An env that fails
    during an episode raises RuntimeError naming the env and the seed.
    """
    queue = [list(q) for q in seeds] if seeds and not _is_flat(seeds) else [list(seeds)]
    wanted: list[dict[int, list[int]]] = []
    for q in queue:
        positions: dict[int, list[int]] = {}
        for position, seed in enumerate(q):
            positions.setdefault(int(seed), []).append(position)
        wanted.append(positions)
    records: list[list[dict[str, Any] | None]] = [[None] * len(q) for q in queue]
    batch = None if isinstance(agent, str) else agent
    done, total = 0, sum(len(q) for q in queue)

    def start(i: int) -> _Episode | None:
        if not vector_env.active[i]:
            return None
        seed = int(vector_env.episode_seeds[i])
        if batch is not None:
            batch.reset_slot(i)
            player: Any = batch
        else:
            view = None if agent == "random" else EnvView(vector_env, i)
            player = make_agent(agent, view, seed=agent_seed(seed))
            player.reset()
        return _Episode(seed, vector_env.env_info(i), player)

    obs, _ = vector_env.reset(queue=queue)
    running = [start(i) for i in range(vector_env.num_envs)]
    while any(episode is not None for episode in running):
        active = [i for i, episode in enumerate(running) if episode is not None]
        for i in active:
            if len(running[i].actions) >= MAX_STEPS_PER_EPISODE:
                raise RuntimeError(
                    f"episode with seed {running[i].seed} of {vector_env.env_ids[i]} did not "
                    f"end after {MAX_STEPS_PER_EPISODE} steps; the env's turn limit is broken"
                )
        if batch is not None:
            replies = batch.act_batch(
                active, [obs[i] for i in active], [running[i].info for i in active]
            )
            if len(replies) != len(active):
                raise RuntimeError(
                    f"{type(batch).__name__}.act_batch answered {len(replies)} of "
                    f"{len(active)} slots; it must answer every slot it is given"
                )
        else:
            replies = [running[i].agent.act(obs[i], running[i].info) for i in active]
        actions = [""] * vector_env.num_envs
        for i, reply in zip(active, replies, strict=True):
            actions[i] = coerce_action(reply)
        obs, rewards, terminated, truncated, infos = vector_env.step(actions)
        errors = infos.get("_error")
        for i in active:
            episode = running[i]
            if errors is not None and errors[i]:
                raise RuntimeError(
                    f"{vector_env.env_ids[i] or f'env {i}'} failed in the episode with seed "
                    f"{episode.seed}: {infos['error'][i]}"
                )
            episode.actions.append(actions[i])
            episode.rewards.append(float(rewards[i]))
            final = vector_env.final_info(i)
            if final is None:
                episode.info = vector_env.env_info(i)
                continue
            usage = batch.usage(i) if batch is not None else None
            source = int(vector_env.source_index[i])
            position = wanted[source][episode.seed].pop(0)
            records[source][position] = episode_record(
                episode.seed,
                episode.actions,
                episode.rewards,
                bool(terminated[i]),
                bool(truncated[i]),
                episode.first_info,
                final,
                usage,
            )
            done += 1
            if progress is not None:
                progress(done, total)
            running[i] = start(i)
    if any(r is None for rs in records for r in rs):  # a bug here, never the user's doing
        raise RuntimeError("some seeds were not played; the vector env's task queue lost them")
    return records  # type: ignore[return-value]


def _is_flat(seeds: Sequence[Any]) -> bool:
    return all(isinstance(s, int | np.integer) for s in seeds)
