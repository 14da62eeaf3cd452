"""Evaluate agents on envgym envs and keep, check and replay what happened.

`evaluate` runs an agent for seeded episodes and returns a results dict (JSON,
``schema_version`` 2, schema in ``envgym/schemas/``) that records the base seed
and episode count, every episode's seed and the agent's raw replies, so anyone
can replay it in the same env version and check the rewards (`replay_episode`,
`verify_results`). `verify_submission` is what the leaderboard runs: it
recomputes every figure of a file and replays every episode, trusting nothing.
The summary carries 95% confidence intervals. The parts:

- `play`: `play`, the one episode loop (on `envgym.vector.TextVectorEnv`'s
  task queue), and `episode_record`, the one writer of an episode
- `runner`: `evaluate`; `batch`: `evaluate_many`, many jobs in one batch
- `baselines`: `run_baselines`, the loop behind ``envgym baselines`` and the
  committed baselines
- `inputs`: the checks made before any episode, `EvaluationError`
- `summary`: the summary block and its confidence intervals
- `results_file`: the schema, validating, writing and loading files, and
  `results_file_name`, the one name rule for a folder of them
- `replay`: `replay_in_env` (the one replay loop), `replay_episode`, `verify_results`
- `submitted_kwargs`: `env_kwargs_problem`, `scoring_kwargs` (which env_kwargs
  from someone else's file may make an env here)
- `verify`: `verify_submission`, `Verdict`
- `identity`: `env_version`, `env_hash` (which code an env id runs)
"""

from envgym.evaluation.identity import env_hash, env_source_files, env_version
from envgym.evaluation.inputs import (
    EvaluationError,
    prepare_output_dir,
    prepare_output_path,
)
from envgym.evaluation.replay import ReplayResult, replay_episode, replay_in_env, verify_results
from envgym.evaluation.results_file import (
    READABLE_VERSIONS,
    SCHEMA_VERSION,
    ResultsFileError,
    load_results,
    load_schema,
    validate_results,
    write_results,
)
from envgym.evaluation.runner import ProgressCallback, agent_seed, evaluate
from envgym.evaluation.submitted_kwargs import env_kwargs_problem, scoring_kwargs
from envgym.evaluation.summary import mean_ci95, summarize, t_critical_95, wilson_ci95
from envgym.evaluation.verify import Verdict, verify_submission
from envgym.registry import make_text_env

__all__ = [
    "READABLE_VERSIONS",
    "SCHEMA_VERSION",
    "EvaluationError",
    "ProgressCallback",
    "ReplayResult",
    "ResultsFileError",
    "Verdict",
    "agent_seed",
    "env_hash",
    "env_kwargs_problem",
    "env_source_files",
    "env_version",
    "evaluate",
    "load_results",
    "load_schema",
    "make_text_env",
    "mean_ci95",
    "prepare_output_dir",
    "prepare_output_path",
    "replay_episode",
    "replay_in_env",
    "scoring_kwargs",
    "summarize",
    "t_critical_95",
    "validate_results",
    "verify_results",
    "verify_submission",
    "wilson_ci95",
    "write_results",
]
