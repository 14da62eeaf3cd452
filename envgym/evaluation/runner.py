"""Run an agent for a number of seeded episodes and return (or write) a results dict.

Episode ``i`` resets the env with ``seed + i``; its agent is seeded from that
seed by `agent_seed`, so a run is reproducible and any one episode of it can
be re-run on its own. `evaluate` is `evaluate_many` on one job with one env;
both play through `envgym.evaluation.play.play`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from envgym.evaluation.batch import evaluate_many, results_dict
from envgym.evaluation.inputs import check_inputs, prepare_output_path
from envgym.evaluation.play import (
    MAX_STEPS_PER_EPISODE,
    ProgressCallback,
    agent_seed,
    check_trials,
)
from envgym.evaluation.results_file import write_results

__all__ = [
    "MAX_STEPS_PER_EPISODE",
    "ProgressCallback",
    "agent_seed",
    "evaluate",
    "results_dict",
]


def evaluate(
    env_id: str,
    agent_name: str = "random",
    episodes: int = 10,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    progress: ProgressCallback | None = None,
    out: str | os.PathLike[str] | None = None,
    trials: int = 1,
) -> dict[str, Any]:
    """Run `episodes` episodes of `agent_name` on `env_id` and return a results dict.

    Episode ``i`` resets the env with ``seed + i`` and gets a fresh agent
    seeded with `agent_seed` of that seed (recorded as ``agent_seed``). The
    header records `seed`, `episodes` (as ``num_episodes``) and `trials`: with
    ``trials=K`` each seed runs K times (trial t's agent seeded with
    ``agent_seed(seed, t)``) and the summary holds pass^1 .. pass^K.
    `progress(done, total)` is called before the first episode and after each
    one. With `out`, the file is checked to be writable before
    any episode runs and written at the end.

    Raises KeyError for an unknown env id and `EvaluationError` for any other
    bad input, always before the first episode; an env that fails during an
    episode raises RuntimeError naming the env and the seed.
    """
    check_inputs(env_id, agent_name, episodes, seed, env_kwargs)
    check_trials(trials)
    out_path = prepare_output_path(out) if out is not None else None
    results = evaluate_many(
        [(env_id, dict(env_kwargs or {}))],
        agent_name,
        episodes,
        seed,
        1,
        "sync",
        progress,
        trials=trials,
    )[0]
    if out_path is not None:
        write_results(results, out_path)
    return results
