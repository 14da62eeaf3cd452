"""Held-out evaluation of a checkpoint, written as a results file that
``envgym submit`` and the leaderboard accept.

The checkpoint's model plays ``eval_episodes`` episodes of the trained env
on seeds ``eval_seed ..`` through `envgym.evaluation.evaluate_many` (what
``envgym eval --agent hf:PATH`` runs), greedily, with the trainer's reply
length. Training seeds start at ``seed`` and evaluation seeds far above, so
the evaluation tasks are ones the policy never trained on. A fixed training
task (``--task-id``) is not used here: the leaderboard scores the env's own
seeded tasks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envgym.evaluation.batch import evaluate_many
from envgym.evaluation.results_file import write_results
from envgym.trainers.common.checkpoint import MODEL_DIR
from envgym.trainers.common.options import EnvRunOptions

__all__ = ["evaluate_checkpoint", "evaluate_step"]


def evaluate_checkpoint(
    checkpoint: str | Path, config: EnvRunOptions, results_path: str | Path, device: str
) -> tuple[dict[str, Any], Path]:
    """Evaluate ``checkpoint`` (a folder from `save_checkpoint`) as ``config``
    says (``env_source()``, ``eval_episodes``, ``eval_seed``,
    ``max_new_tokens``); returns the results and the file they were written to."""
    env_id, kwargs = config.env_source()
    results = evaluate_many(
        [(env_id, kwargs)],
        f"hf:{Path(checkpoint) / MODEL_DIR}",
        config.eval_episodes,
        config.eval_seed,
        num_envs=min(config.eval_episodes, 32),
        agent_options={
            "max_new_tokens": config.max_new_tokens,
            "temperature": 0.0,
            "device": device,
        },
    )[0]
    return results, write_results(results, results_path)


def evaluate_step(
    checkpoint: Path, done: int, *, config: EnvRunOptions, out_dir: Path, device: str
) -> tuple[dict[str, float], list[Path]]:
    """`evaluate_checkpoint` after step ``done``, written to
    ``out_dir/eval/step_N.json``: the ``eval/`` metrics and that file."""
    results, path = evaluate_checkpoint(
        checkpoint, config, out_dir / "eval" / f"step_{done:06d}.json", device
    )
    summary = results["summary"]
    return {
        "eval/success_rate": summary["success_rate"],
        "eval/mean_return": summary["mean_return"],
    }, [path]
