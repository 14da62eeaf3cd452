"""Evaluate one agent on many (env id, kwargs) jobs at once, `num_envs` episodes
in flight, stepped through `envgym.vector.TextVectorEnv`.

Each job runs the episodes ``seed .. seed + episodes - 1``, each once, and its
results dict equals what `envgym.evaluation.evaluate` writes for the same env,
agent and seeds (apart from ``created_at``): same records, same agent seeds,
same summary. Only the order in which episodes are played changes.

How the batch is laid out. All jobs' episodes form one list of tasks, job by
job and seed by seed; slot ``i`` of the vector env plays tasks ``i, i + K,
i + 2K, ...`` (``K`` slots). Each slot is an `_EvalSlot`: an env that, on every
reset the vector env asks of it (the first one and each same-step autoreset),
starts its own next task with that task's seed, whatever seed the vector env
offers (the vector env's own seed rule derives autoreset seeds, which an
evaluation must not use). A slot whose tasks are done idles: its steps cost
nothing and never end. Infos cross the vector env wrapped in `_Carried`, so the
agent sees each env's info dict exactly as `evaluate` would show it (the vector
env's batching turns numbers into numpy arrays of the first value's type).

Agents. A plain agent (``random``, ``oracle``, ...) is made afresh for every
episode with `make_agent` and `agent_seed` of the episode seed, as `evaluate`
makes it. Agents other than ``random`` get the env to read (the oracles of
Code and PythonMath read the current problem), so each slot keeps a local
copy of its env reset to the episode's seed; it is never stepped. A batch
agent (`envgym.agents.is_batch_agent`: LLM agents) is made once, answers every
waiting slot in one `act_batch` call, starts each episode with
`reset_slot(slot)`, and its `usage(slot)` is recorded in the episode's
``"usage"``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

from envgym.agents import LLM_KINDS, is_batch_agent, make_agent, parse_agent_spec
from envgym.core import coerce_action
from envgym.evaluation.identity import env_hash
from envgym.evaluation.inputs import EvaluationError, check_inputs, make_evaluation_env
from envgym.evaluation.runner import (
    MAX_STEPS_PER_EPISODE,
    ProgressCallback,
    agent_seed,
    results_dict,
)
from envgym.registry import register_envs
from envgym.vector import TextVectorEnv

__all__ = ["BATCH_WORKERS", "EvalJob", "evaluate_many"]

#: One evaluation: an env id and the kwargs its env is made with.
EvalJob = tuple[str, Mapping[str, Any]]

#: Worker kinds an evaluation may step its envs in.
BATCH_WORKERS = ("sync", "subprocess")


class _Carried:
    """An env's info dict, kept whole across the vector env's info batching."""

    __slots__ = ("info", "task")

    def __init__(self, task: int | None, info: dict[str, Any]) -> None:
        self.task = task
        self.info = info

    def __getstate__(self) -> tuple[int | None, dict[str, Any]]:
        return self.task, self.info

    def __setstate__(self, state: tuple[int | None, dict[str, Any]]) -> None:
        self.task, self.info = state


class _EvalSlot(gym.Env):
    """One slot of the batch: plays its tasks in order, each reset starting the
    next with its own seed, then idles. Made in the worker, so it must pickle."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        jobs: Sequence[tuple[str, dict[str, Any]]],
        tasks: Sequence[tuple[int, int, int]],
        observation_space: gym.Space,
        action_space: gym.Space,
    ) -> None:
        register_envs()  # a fresh worker process knows no ids yet
        self._jobs = list(jobs)
        self._tasks = list(tasks)  # (task number, job, seed)
        self._next = 0
        self._job: int | None = None
        self._env: gym.Env | None = None
        self._task: int | None = None
        self.observation_space = observation_space
        self.action_space = action_space

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        # The vector env's seed is ignored on purpose: the task list says which
        # episode this slot plays next.
        if self._next >= len(self._tasks):
            self._close_env()
            self._task = None
            return "", {"eval": _Carried(None, {})}
        task, job, episode_seed = self._tasks[self._next]
        self._next += 1
        if job != self._job:
            self._close_env()
            self._env = make_evaluation_env(*self._jobs[job])
            self._job = job
        assert self._env is not None
        obs, info = self._env.reset(seed=episode_seed)
        self._task = task
        return obs, {"eval": _Carried(task, info)}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._env is None or self._task is None:
            return "", 0.0, False, False, {"eval": _Carried(None, {})}
        obs, reward, terminated, truncated, info = self._env.step(action)
        return obs, reward, terminated, truncated, {"eval": _Carried(self._task, info)}

    def _close_env(self) -> None:
        if self._env is not None:
            self._env.close()
        self._env, self._job = None, None

    def close(self) -> None:
        self._close_env()


class _Episode:
    """The record of an episode in progress in one slot."""

    def __init__(self, task: int, job: int, seed: int, info: dict[str, Any], agent: Any) -> None:
        self.task, self.job, self.seed = task, job, seed
        self.task_id = info.get("task_id")
        self.info = info
        self.agent = agent
        self.actions: list[str] = []
        self.rewards: list[float] = []

    def record(self, terminated: bool, truncated: bool, final_info: dict[str, Any]) -> dict:
        record: dict[str, Any] = {
            "seed": self.seed,
            "agent_seed": agent_seed(self.seed),
            "actions": self.actions,
            "rewards": self.rewards,
            "return": float(sum(self.rewards)),
            "success": bool(final_info.get("success", False)),
            "turns": len(self.actions),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
        }
        if isinstance(self.task_id, str) and self.task_id:
            record["task_id"] = self.task_id
        return record


def _check(
    jobs: Sequence[EvalJob], agent_spec: str, episodes: int, seed: int, num_envs: int, workers: str
) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise EvaluationError(f"num_envs must be a whole number >= 1, got {num_envs!r}")
    if workers not in BATCH_WORKERS:
        raise EvaluationError(
            f"unknown workers={workers!r}; choose one of {', '.join(BATCH_WORKERS)}"
        )
    checked = []
    for job in jobs:
        if not (isinstance(job, tuple | list) and len(job) == 2):
            raise EvaluationError(f"a job is an (env_id, env_kwargs) pair, got {job!r}")
        env_id, kwargs = job
        check_inputs(env_id, agent_spec, episodes, seed, kwargs)
        checked.append((env_id, dict(kwargs or {})))
    if not checked:
        raise EvaluationError("no jobs given; pass at least one (env_id, env_kwargs) pair")
    return checked


def evaluate_many(
    jobs: Sequence[EvalJob],
    agent_spec: str,
    episodes: int,
    seed: int,
    num_envs: int = 8,
    workers: str = "sync",
    progress: ProgressCallback | None = None,
    agent_options: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Run `agent_spec` for `episodes` episodes (seeds ``seed .. seed+episodes-1``)
    on every job, `num_envs` episodes in flight, and return one results dict per
    job, in the order of `jobs`.

    `workers` is ``"sync"`` (every env in this process) or ``"subprocess"``
    (envs in worker processes). `progress(done, total)` counts episodes over all
    jobs: once before the first and after each one. `agent_options` go to an
    LLM agent's constructor (``max_new_tokens``, ``temperature``...).

    Raises KeyError for an unknown env id and `EvaluationError` for any other
    bad input, always before the first episode; an env that fails during an
    episode raises RuntimeError naming the env and seed.
    """
    checked = _check(jobs, agent_spec, episodes, seed, num_envs, workers)
    hashes = [env_hash(env_id) for env_id, _ in checked]
    # One env per job here: it must be makeable (bad kwargs fail now, not in a
    # worker), and it gives the difficulty and, for batch agents, an env to read.
    probes: list[gym.Env] = []
    shadows: dict[tuple[int, int], gym.Env] = {}
    vec: TextVectorEnv | None = None
    try:
        for env_id, kwargs in checked:
            probes.append(make_evaluation_env(env_id, kwargs))
        difficulties = [getattr(env.unwrapped, "difficulty", None) for env in probes]
        tasks = [(j, seed + e) for j in range(len(checked)) for e in range(episodes)]
        slots = min(num_envs, len(tasks))
        factories = [
            functools.partial(
                _EvalSlot,
                checked,
                [(t, *tasks[t]) for t in range(i, len(tasks), slots)],
                probes[0].observation_space,
                probes[0].action_space,
            )
            for i in range(slots)
        ]
        spec = parse_agent_spec(agent_spec)
        batch_agent = None
        if spec.kind in LLM_KINDS:  # an LLM agent: one for every slot, made now
            batch_agent = make_agent(
                agent_spec, probes[0], seed=agent_seed(seed), **dict(agent_options or {})
            )
            if not is_batch_agent(batch_agent):
                raise EvaluationError(
                    f"{agent_spec} made a {type(batch_agent).__name__}, which has no "
                    "act_batch/reset_slot/usage; batched evaluation needs a batch agent"
                )
        agent_info = spec.record()

        def start(slot: int, carried: _Carried) -> _Episode | None:
            if carried.task is None:
                return None
            job, episode_seed = tasks[carried.task]
            if batch_agent is not None:
                batch_agent.reset_slot(slot)
                agent = batch_agent
            else:
                if agent_spec == "random":
                    env = probes[job]
                else:
                    env = shadows.get((slot, job))
                    if env is None:
                        for key in [k for k in shadows if k[0] == slot]:
                            shadows.pop(key).close()
                        env = shadows[slot, job] = make_evaluation_env(*checked[job])
                    env.reset(seed=episode_seed)
                agent = make_agent(agent_spec, env, seed=agent_seed(episode_seed))
                agent.reset()
            return _Episode(carried.task, job, episode_seed, carried.info, agent)

        records: list[dict[str, Any] | None] = [None] * len(tasks)
        done, total = 0, len(tasks)
        if progress is not None:
            progress(0, total)
        vec = TextVectorEnv(env_fns=factories, workers=workers, step_timeout_s=None)
        obs, infos = vec.reset(seed=seed)
        running = [start(i, infos["eval"][i]) for i in range(slots)]
        while any(ep is not None for ep in running):
            active = [i for i, ep in enumerate(running) if ep is not None]
            for i in active:
                if len(running[i].actions) >= MAX_STEPS_PER_EPISODE:
                    raise RuntimeError(
                        f"episode with seed {running[i].seed} of {checked[running[i].job][0]} "
                        f"did not end after {MAX_STEPS_PER_EPISODE} steps; the env's turn "
                        "limit is broken"
                    )
            actions = [""] * slots
            if batch_agent is not None:
                replies = batch_agent.act_batch(
                    active, [obs[i] for i in active], [running[i].info for i in active]
                )
                if len(replies) != len(active):
                    raise RuntimeError(
                        f"{agent_spec}'s act_batch answered {len(replies)} of "
                        f"{len(active)} slots; it must answer every slot it is given"
                    )
            else:
                replies = [running[i].agent.act(obs[i], running[i].info) for i in active]
            for i, reply in zip(active, replies, strict=True):
                actions[i] = coerce_action(reply)
            obs, rewards, terminated, truncated, infos = vec.step(actions)
            errors = infos.get("_error")
            for i in active:
                episode = running[i]
                if errors is not None and errors[i]:
                    raise RuntimeError(
                        f"{checked[episode.job][0]} failed in the episode with seed "
                        f"{episode.seed}: {infos['error'][i]}"
                    )
                episode.actions.append(actions[i])
                episode.rewards.append(float(rewards[i]))
                if not (terminated[i] or truncated[i]):
                    episode.info = infos["eval"][i].info
                    continue
                final = infos["final_info"]["eval"][i].info
                record = episode.record(bool(terminated[i]), bool(truncated[i]), final)
                if batch_agent is not None:
                    record["usage"] = dict(batch_agent.usage(i))
                records[episode.task] = record
                done += 1
                if progress is not None:
                    progress(done, total)
                running[i] = start(i, infos["eval"][i])
    finally:
        if vec is not None:
            vec.close()
        for env in [*probes, *shadows.values()]:
            env.close()
    out = []
    for j, (env_id, kwargs) in enumerate(checked):
        job_records = records[j * episodes : (j + 1) * episodes]
        if any(r is None for r in job_records):  # a bug here, never the user's doing
            raise RuntimeError(f"{env_id}: some episodes were not played")
        out.append(
            results_dict(
                env_id, kwargs, dict(agent_info), job_records, difficulties[j], hashes[j], seed
            )
        )
    return out
