"""Evaluate agents on envgym envs and keep, check and replay what happened.

`evaluate` runs an agent for seeded episodes and returns a results dict (JSON,
``schema_version`` 1, schema in ``envgym/schemas/``) that records every
episode's seed and the agent's raw replies, so anyone can replay it in the
same env version and check the rewards (`replay_episode`, `verify_results`);
the leaderboard does exactly that. The summary carries 95% confidence
intervals. The parts:

- `runner`: `evaluate`, `agent_seed`
- `inputs`: the checks made before any episode, `EvaluationError`
- `summary`: the summary block and its confidence intervals
- `results_file`: the schema, and validating, writing and loading files
- `replay`: `replay_episode`, `verify_results`
- `identity`: `env_version`, `env_hash` (which code an env id runs)
"""

from envgym.evaluation.identity import env_hash, env_source_files, env_version
from envgym.evaluation.inputs import (
    EvaluationError,
    prepare_output_dir,
    prepare_output_path,
)
from envgym.evaluation.replay import ReplayResult, replay_episode, verify_results
from envgym.evaluation.results_file import (
    SCHEMA_VERSION,
    ResultsFileError,
    load_results,
    load_schema,
    validate_results,
    write_results,
)
from envgym.evaluation.runner import ProgressCallback, agent_seed, evaluate
from envgym.evaluation.summary import mean_ci95, summarize, t_critical_95, wilson_ci95
from envgym.registry import make_text_env

__all__ = [
    "SCHEMA_VERSION",
    "EvaluationError",
    "ProgressCallback",
    "ReplayResult",
    "ResultsFileError",
    "agent_seed",
    "env_hash",
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
    "summarize",
    "t_critical_95",
    "validate_results",
    "verify_results",
    "wilson_ci95",
    "write_results",
]
