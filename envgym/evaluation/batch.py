"""Evaluate one agent on many (env id, kwargs) jobs at once, `num_envs` episodes
in flight, stepped through `envgym.vector.TextVectorEnv` by `play`.

Each job runs the episodes ``seed .. seed + episodes - 1``, each `trials`
times (once by default), and its
results dict equals what `envgym.evaluation.evaluate` writes for the same env,
agent and seeds (apart from ``created_at``): same records, same agent seeds,
same summary. Only the order in which episodes are played changes.

How the batch is laid out. The jobs share one vector env whose env sources are
the jobs, ``num_envs // len(jobs)`` envs each (at most one per episode, at
least one), and each job's seeds are its sources' task queue. With more jobs
than `num_envs`, they run in waves of `num_envs` jobs, one env each.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from envgym.agents import LLM_KINDS, parse_agent_spec
from envgym.evaluation.identity import env_hash, env_version
from envgym.evaluation.inputs import EvaluationError, check_inputs, make_evaluation_env
from envgym.evaluation.play import ProgressCallback, check_trials, make_batch_agent, play
from envgym.evaluation.results_file import SCHEMA_VERSION
from envgym.evaluation.summary import summarize
from envgym.vector import TextVectorEnv

__all__ = ["BATCH_WORKERS", "EvalJob", "evaluate_many", "results_dict"]

#: One evaluation: an env id and the kwargs its env is made with.
EvalJob = tuple[str, Mapping[str, Any]]

#: Worker kinds an evaluation may step its envs in.
BATCH_WORKERS = ("sync", "subprocess")


def _check(
    jobs: Sequence[EvalJob],
    agent_spec: str,
    episodes: int,
    seed: int,
    num_envs: int,
    workers: str,
    trials: int,
) -> list[tuple[str, dict[str, Any]]]:
    check_trials(trials)
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


def _difficulty(env_id: str, kwargs: dict[str, Any]) -> Any:
    """The difficulty the env runs at; making it here also refuses bad kwargs
    with `EvaluationError`, before any episode."""
    env = make_evaluation_env(env_id, kwargs)
    try:
        return getattr(env.unwrapped, "difficulty", None)
    finally:
        env.close()


def evaluate_many(
    jobs: Sequence[EvalJob],
    agent_spec: str,
    episodes: int,
    seed: int,
    num_envs: int = 8,
    workers: str = "sync",
    progress: ProgressCallback | None = None,
    agent_options: Mapping[str, Any] | None = None,
    trials: int = 1,
) -> list[dict[str, Any]]:
    """Run `agent_spec` for `episodes` episodes (seeds ``seed .. seed+episodes-1``)
    on every job, `num_envs` episodes in flight, and return one results dict per
    job, in the order of `jobs`.

    With `trials` K > 1 every seed runs K times (its records carry ``trial``
    0 .. K-1, each trial's agent seeded apart) and the summary holds pass^1 ..
    pass^K (``summary.pass_k``).

    `workers` is ``"sync"`` (every env in this process) or ``"subprocess"``
    (envs in worker processes). `progress(done, total)` counts episodes over all
    jobs (seeds x trials): once before the first and after each one. `agent_options` go to an
    LLM agent's constructor (``max_new_tokens``, ``temperature``...).

    Raises KeyError for an unknown env id and `EvaluationError` for any other
    bad input, always before the first episode; an env that fails during an
    episode raises RuntimeError naming the env and seed.
    """
    checked = _check(jobs, agent_spec, episodes, seed, num_envs, workers, trials)
    hashes = [env_hash(env_id) for env_id, _ in checked]
    difficulties = [_difficulty(env_id, kwargs) for env_id, kwargs in checked]
    spec = parse_agent_spec(agent_spec)
    agent: Any = agent_spec
    if spec.kind in LLM_KINDS:  # an LLM agent: one for every env, made now
        agent = make_batch_agent(agent_spec, seed, agent_options)
    seeds = list(range(seed, seed + episodes))
    per_run = episodes * trials
    total = len(checked) * per_run
    records: list[list[dict[str, Any]]] = []
    if progress is not None:
        progress(0, total)
    for start in range(0, len(checked), num_envs):
        wave = checked[start : start + num_envs]
        per_job = max(1, min(per_run, num_envs // len(wave)))
        offset = len(records) * per_run

        def report(done: int, _total: int, offset: int = offset) -> None:
            if progress is not None:
                progress(offset + done, total)

        with TextVectorEnv(
            wave, per_job * len(wave), workers=workers, step_timeout_s=None
        ) as vector_env:
            records.extend(play(vector_env, agent, [seeds] * len(wave), report, trials))
    agent_info = spec.record()
    return [
        results_dict(env_id, kwargs, dict(agent_info), job_records, level, hash_, seed, trials)
        for (env_id, kwargs), job_records, level, hash_ in zip(
            checked, records, difficulties, hashes, strict=True
        )
    ]


def results_dict(
    env_id: str,
    kwargs: dict[str, Any],
    agent: dict[str, Any],
    records: list[dict[str, Any]],
    difficulty: Any,
    hash_: str,
    seed: int,
    trials: int = 1,
) -> dict[str, Any]:
    """A results file's content for `records`, the episodes with seeds `seed`
    onwards, each seed's `trials` trials in a row."""
    results: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "env_id": env_id,
        "env_version": env_version(env_id),
        "env_hash": hash_,
        "env_kwargs": kwargs,
        # What was asked for, so a verifier can check the file holds exactly that run.
        "seed": seed,
        "num_episodes": len(records) // trials,
        "trials": trials,
        "agent": agent,
        "episodes": records,
        "summary": summarize(records),
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    if isinstance(difficulty, str):
        results["difficulty"] = difficulty
    return results
