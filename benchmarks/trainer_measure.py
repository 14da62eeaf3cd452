"""One measured run of the reference GRPO trainer, for ``benchmarks/trainer.py``
(the CPU section) and ``benchmarks/trainer_gpu.py`` (its envgym runs): train a few
steps and read the medians back from ``metrics.jsonl``. Its own module so the two
benchmark files need not import each other."""

from __future__ import annotations

import statistics
import tempfile
from typing import Any

from envgym.trainers.common.run_log import read_metrics
from envgym.trainers.grpo import GRPOConfig, train

#: Table column -> metrics.jsonl key (the share is computed per step).
COLUMNS = {
    "generation s": "rollout/generation_s",
    "env s": "rollout/env_s",
    "tokenization s": "rollout/tokenization_s",
    "update s": "update/update_s",
    "step s": "time/step_s",
}


def measure(env_id: str, **overrides: Any) -> dict[str, float]:
    """Train on `env_id` for a few steps (``overrides`` go to `GRPOConfig`) and
    return the median of each timing over the steps after the first."""
    with tempfile.TemporaryDirectory() as out_dir:
        config = GRPOConfig(
            env=env_id,
            out_dir=out_dir,
            progress=False,
            tensorboard=False,
            warmup_steps=0,
            drop_zero_variance=False,  # a random policy's groups all tie; update them anyway
            **overrides,
        )
        train(config)
        steps = read_metrics(out_dir)[1:]
    if not steps:
        raise ValueError("--steps must be at least 2: the first step is left out as warm-up")
    row = {key: statistics.median(s[key] for s in steps) for key in COLUMNS.values()}
    row["env_share_pct"] = statistics.median(
        100 * s["rollout/env_s"] / s["time/step_s"] for s in steps
    )
    row["tokens_per_s"] = statistics.median(s["rollout/tokens_per_s"] for s in steps)
    row["trained_tokens"] = statistics.median(trained_tokens(s) for s in steps)
    row["trained_tokens_per_s"] = statistics.median(
        trained_tokens(s) / s["time/step_s"] for s in steps
    )
    row["episode_turns"] = statistics.median(s["charts/episode_turns"] for s in steps)
    row["measured_steps"] = len(steps)
    return row


def trained_tokens(step: dict[str, float]) -> float:
    """Reply tokens in the step's loss: ``update/trained_tokens`` where the trainer
    logs it, else every generated token (no group is dropped in these runs)."""
    if "update/trained_tokens" in step:
        return step["update/trained_tokens"]
    return step["rollout/tokens_per_s"] * step["rollout/generation_s"]
