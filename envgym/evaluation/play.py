"""`play`: the one episode loop of an evaluation, and the one writer of its records.

`play(vector_env, agent, seeds, trials=K)` plays every seed K times (trials
0 .. K-1, one after another in the task queue) on a
`envgym.vector.TextVectorEnv` in its task-queue mode: each env starts on the
next seed left and, when its episode ends, takes the next one, so N seeds on
k envs need no bookkeeping here. `evaluate` and `evaluate_many` (and through
them ``envgym eval``, ``envgym baselines`` and the trainers' held-out
evaluations) all play their episodes through it, and `episode_record` is the
only code that writes an episode of a results file.

Agents. A plain agent (``random``, ``oracle``, ...) is named by its spec and
made afresh for every episode with `make_agent` and `agent_seed` of the
episode's seed and trial, once the env is reset to that seed. Agents that read their
env (the oracles of Code and PythonMath read the current problem) get an
`EnvView` of the env playing the episode, whose attributes are read from the
live env through `TextVectorEnv.env_attr`. A batch agent
(`envgym.agents.is_batch_agent`: LLM agents) is made once by the caller
(`make_batch_agent`), answers every waiting env in one ``act_batch`` call
(the env's index is its slot), starts each episode with ``reset_slot`` (trial t > 0 passes
``seed=agent_seed(seed, t)``, the slot's sampling seed, so sampled replies
differ between trials; trial 0 samples as a single-trial run does) and its
``usage(slot)`` is recorded in the episode's ``"usage"``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from envgym.agents import BatchAgent, is_batch_agent, make_agent
from envgym.core import coerce_action
from envgym.evaluation.inputs import EvaluationError
from envgym.vector import TextVectorEnv

__all__ = [
    "MAX_STEPS_PER_EPISODE",
    "MAX_TRIALS",
    "EnvView",
    "ProgressCallback",
    "agent_seed",
    "check_trials",
    "episode_record",
    "make_batch_agent",
    "play",
]

#: A correct env ends every episode through its turn limit; this only stops a
#: broken one from hanging an evaluation forever.
MAX_STEPS_PER_EPISODE = 100_000

#: The most trials (runs of each seed) one evaluation may ask for: pass^k up to
#: pass^32 is far past what tau-bench reports (pass^8), and the cap bounds what
#: a results file can make a verifier compute.
MAX_TRIALS = 32

#: ``progress(done, total)``: episodes finished so far, of how many.
ProgressCallback = Callable[[int, int], None]


def agent_seed(episode_seed: int, trial: int = 0) -> int:
    """The seed an episode's agent gets: derived from the episode seed (and, for
    trial ``t > 0`` of that seed, from ``t``), never equal to it.

    Gymnasium seeds `env.np_random` exactly as `numpy.random.default_rng(seed)`
    does, so an agent seeded with the env's own seed draws the env's numbers
    (a random guesser would "know" the secret). A spawned child stream of the
    seed is independent of it; each trial gets its own child, and trial 0's is
    the one a single-trial run uses.
    """
    spawn_key = (1,) if trial == 0 else (1, trial)
    child = np.random.SeedSequence(entropy=episode_seed, spawn_key=spawn_key)
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
    trial: int | None = None,
) -> dict[str, Any]:
    """One episode of a results file: its seed (and `trial`, in a run of several
    trials per seed) and agent seed, the agent's replies and the rewards they
    earned, the outcome, and the task id from the reset's info (and an LLM
    agent's token `usage`)."""
    record: dict[str, Any] = {"seed": seed}
    if trial is not None:
        record["trial"] = trial
    record |= {
        "agent_seed": agent_seed(seed, trial or 0),
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


def _takes_seed(batch: BatchAgent) -> bool:
    """Whether `batch`'s ``reset_slot`` takes a ``seed`` (a slot's own sampling seed)."""
    try:
        parameters = inspect.signature(batch.reset_slot).parameters
    except (TypeError, ValueError):
        return False
    return "seed" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def check_trials(trials: int) -> None:
    """`EvaluationError` unless `trials` is a whole number 1 .. `MAX_TRIALS`."""
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= MAX_TRIALS:
        raise EvaluationError(
            f"trials must be a whole number from 1 to {MAX_TRIALS} (runs of each seed, for "
            f"pass^1 .. pass^trials), got {trials!r}"
        )


class _Episode:
    """An episode in progress on one env of the vector env."""

    def __init__(
        self, seed: int, trial: int, position: int, info: dict[str, Any], agent: Any
    ) -> None:
        self.seed = seed
        self.trial = trial
        #: where its record goes in its source's list
        self.position = position
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
    trials: int = 1,
) -> list[list[dict[str, Any]]]:
    """Play `agent` `trials` times on every seed and return the episode records:
    one list per env source of `vector_env` (an entry of its ``envs`` list), in
    the order of that source's seeds, each seed's trials 0 .. trials-1 in a row.
    With ``trials > 1`` each record carries its ``trial``; trial t's agent is
    seeded with ``agent_seed(seed, t)``.

    `agent` is a plain agent's spec (``"random"``, ``"oracle"``...) or a batch
    agent (`make_batch_agent`). `seeds` is one list per source, or a single list
    when the vector env runs one source; it becomes the vector env's task queue.
    `progress(done, total)` is called after each episode. An env that fails
    during an episode raises RuntimeError naming the env and the seed.
    """
    check_trials(trials)
    batch = None if isinstance(agent, str) else agent
    if batch is not None and trials > 1 and not _takes_seed(batch):
        raise EvaluationError(
            f"{type(batch).__name__}.reset_slot takes no seed, so its trials of a seed would "
            "all sample alike; give it a seed keyword (a slot's sampling seed) or run one trial"
        )
    given = [list(q) for q in seeds] if seeds and not _is_flat(seeds) else [list(seeds)]
    queue = [[int(s) for s in q for _ in range(trials)] for q in given]
    # Where each start of a seed goes: its n-th start fills the n-th position of
    # that seed in the queue, and the position says the trial. Fixed when the
    # episode starts, so the trial and its agent seed always agree.
    wanted: list[dict[int, list[int]]] = []
    for q in queue:
        positions: dict[int, list[int]] = {}
        for position, seed in enumerate(q):
            positions.setdefault(seed, []).append(position)
        wanted.append(positions)
    records: list[list[dict[str, Any] | None]] = [[None] * len(q) for q in queue]
    done, total = 0, sum(len(q) for q in queue)

    def start(i: int) -> _Episode | None:
        if not vector_env.active[i]:
            return None
        seed = int(vector_env.episode_seeds[i])
        position = wanted[int(vector_env.source_index[i])][seed].pop(0)
        trial = position % trials
        if batch is not None:
            if trial:
                batch.reset_slot(i, seed=agent_seed(seed, trial))  # type: ignore[call-arg]
            else:
                batch.reset_slot(i)
            player: Any = batch
        else:
            player = make_agent(agent, EnvView(vector_env, i), seed=agent_seed(seed, trial))
            player.reset()
        return _Episode(seed, trial, position, vector_env.env_info(i), player)

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
            records[source][episode.position] = episode_record(
                episode.seed,
                episode.actions,
                episode.rewards,
                bool(terminated[i]),
                bool(truncated[i]),
                episode.first_info,
                final,
                usage,
                episode.trial if trials > 1 else None,
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
