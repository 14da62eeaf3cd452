"""The baselines: the random and oracle agents on every env and difficulty.

`run_baselines` is the one loop that makes them: ``envgym baselines`` (which
prints their table) and `envgym.leaderboard.baselines.make_baselines` (which
writes the committed files the leaderboard's pages show) both call it, and each
run's file is named by `results_file_name`, so a table and the pages built
from the same folder show the same runs. Each run is one `evaluate`, so an env
that fails costs only its own runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envgym.evaluation.results_file import results_file_name, write_results
from envgym.evaluation.runner import ProgressCallback, evaluate
from envgym.registry import list_envs, missing_data

__all__ = ["BASELINE_AGENTS", "BaselineRun", "baseline_jobs", "run_baselines"]

BASELINE_AGENTS: tuple[str, ...] = ("random", "oracle")


@dataclass(frozen=True)
class BaselineRun:
    """One (env, difficulty, agent) run: its results and the file they went to,
    or the error that stopped it."""

    env_id: str
    difficulty: str
    agent: str
    results: dict[str, Any] | None = None
    path: Path | None = None
    error: str | None = None
    seconds: float = 0.0


def baseline_jobs(
    envs: Iterable[str] | None = None, agents: Iterable[str] = BASELINE_AGENTS
) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """The ``(env_id, difficulty, agent)`` runs for every registered env (or those
    in `envs`), every difficulty and every agent it has (no oracle, no oracle
    run); and ``(env_id, why)`` for each env left out because its data is not
    on this machine (WebShop-v0)."""
    wanted = set(envs) if envs else None
    agents = tuple(agents)
    jobs: list[tuple[str, str, str]] = []
    skipped: list[tuple[str, str]] = []
    for spec in list_envs():
        if wanted is not None and spec.id not in wanted:
            continue
        why = missing_data(spec)
        if why is not None:
            skipped.append((spec.id, why))
            continue
        for difficulty in spec.difficulties:
            for agent in agents:
                if agent != "oracle" or spec.oracle is not None:
                    jobs.append((spec.id, difficulty, agent))
    return jobs, skipped


def run_baselines(
    jobs: Sequence[tuple[str, str, str]],
    episodes: int,
    seed: int,
    out_dir: str | Path | None = None,
    *,
    progress: ProgressCallback | None = None,
    describe: Callable[[str], None] | None = None,
) -> list[BaselineRun]:
    """Run each ``(env_id, difficulty, agent)`` job for `episodes` episodes from
    `seed`, writing ``out_dir/<results_file_name>`` per run when `out_dir` is
    given. `progress(done, total)` counts episodes over all jobs; `describe`
    is told which run starts. A run that fails is returned with its error (which
    names the ``envgym eval`` command that shows the traceback), so one broken
    env does not lose the others."""
    total = len(jobs) * episodes
    runs: list[BaselineRun] = []
    for j, (env_id, difficulty, agent) in enumerate(jobs):
        offset = j * episodes
        if describe is not None:
            describe(f"{env_id} {difficulty} {agent}")

        def report(done: int, _total: int, offset: int = offset) -> None:
            if progress is not None:
                progress(offset + done, total)

        started = time.perf_counter()
        try:
            kwargs = {"difficulty": difficulty}
            results = evaluate(env_id, agent, episodes, seed, env_kwargs=kwargs, progress=report)
            path = None
            if out_dir is not None:
                path = write_results(
                    results, Path(out_dir) / results_file_name(env_id, difficulty, agent)
                )
        except Exception as exc:  # one broken env must not lose every other run
            error = (
                f"{env_id} {difficulty} {agent} failed: {type(exc).__name__}: {exc} (run "
                f"`envgym eval {env_id} --agent {agent} --difficulty {difficulty}` to see "
                "the traceback)"
            )
            runs.append(BaselineRun(env_id, difficulty, agent, error=error))
            report(episodes, total)
            continue
        seconds = time.perf_counter() - started
        runs.append(BaselineRun(env_id, difficulty, agent, results, path, seconds=seconds))
    return runs
