"""What a training run writes down: its metrics, its config, TensorBoard events.

A run's ``out_dir`` holds

- ``metrics.jsonl``: one JSON object per `RunLog.log` call,
  ``{"step": n, "time": unix_seconds, "charts/success_rate": 0.5, ...}``,
  flushed as soon as it is written, so a crashed run keeps every step it logged;
- ``config.json``: the run's config, as given;
- ``tensorboard/``: the same scalars as TensorBoard event files
  (``tensorboard --logdir out_dir``).

Names are stable across trainers, as in CleanRL, so runs compare in one chart.
Every name is ``section/name`` (``^[a-z_]+/[a-z0-9_]+$``); the standard ones:

==========================  ====================================================
name                        what it is
==========================  ====================================================
charts/success_rate         share of this step's episodes that succeeded
charts/episodic_return      mean return of this step's episodes
charts/episode_turns        mean turns per episode
charts/learning_rate        the optimizer's learning rate at this step
charts/episodes             episodes played this step (every rank's)
losses/policy               policy-gradient loss
losses/kl                   KL divergence to the reference policy
losses/entropy              mean token entropy of the policy (optional)
losses/clip_fraction        share of tokens whose ratio was clipped
losses/value                PPO: the critic's clipped squared error
losses/explained_variance   PPO: 1 - Var(returns - values) / Var(returns)
rollout/tokens_per_s        generated tokens per second of generation time
rollout/generation_s        seconds spent generating replies
rollout/env_s               seconds spent in env reset/step
rollout/tokenization_s      seconds spent tokenizing
update/update_s             seconds spent in the optimizer update
update/dropped_groups       groups dropped because every advantage was ~0
update/trained_episodes     episodes the update trained on
update/trained_tokens       policy tokens in the update's loss
eval/success_rate           success rate on the evaluation seeds
eval/mean_return            mean return on the evaluation seeds
time/step_s                 wall-clock seconds of the whole step
==========================  ====================================================

A resumed run opens the same ``out_dir`` with ``resume_step=k`` (the step of
the checkpoint it loaded): lines and TensorBoard points after step ``k`` are
dropped and new ones appended, so the log holds each step once.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import re
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from envgym.extras import missing_extra

__all__ = ["METRIC_NAME", "STANDARD_METRICS", "RunLog", "read_metrics"]

#: What every metric name must look like: ``section/name``, lower case.
METRIC_NAME = re.compile(r"^[a-z_]+/[a-z0-9_]+$")

#: The standard metric names and what each means (the table above).
STANDARD_METRICS: dict[str, str] = {
    "charts/success_rate": "share of this step's episodes that succeeded",
    "charts/episodic_return": "mean return of this step's episodes",
    "charts/episode_turns": "mean turns per episode",
    "charts/learning_rate": "the optimizer's learning rate at this step",
    "charts/episodes": "episodes played this step (every rank's)",
    "losses/policy": "policy-gradient loss",
    "losses/kl": "KL divergence to the reference policy",
    "losses/entropy": "mean token entropy of the policy (optional)",
    "losses/clip_fraction": "share of tokens whose ratio was clipped",
    "losses/value": "PPO: the critic's clipped squared error",
    "losses/explained_variance": "PPO: 1 - Var(returns - values) / Var(returns)",
    "rollout/tokens_per_s": "generated tokens per second of generation time",
    "rollout/generation_s": "seconds spent generating replies",
    "rollout/env_s": "seconds spent in env reset/step",
    "rollout/tokenization_s": "seconds spent tokenizing",
    "update/update_s": "seconds spent in the optimizer update",
    "update/dropped_groups": "groups dropped because every advantage was ~0",
    "update/trained_episodes": "episodes the update trained on",
    "update/trained_tokens": "policy tokens in the update's loss",
    "eval/success_rate": "success rate on the evaluation seeds",
    "eval/mean_return": "mean return on the evaluation seeds",
    "time/step_s": "wall-clock seconds of the whole step",
}

METRICS_FILE = "metrics.jsonl"
CONFIG_FILE = "config.json"
TENSORBOARD_DIR = "tensorboard"


def config_to_dict(config: Mapping[str, Any] | Any) -> dict[str, Any]:
    """A plain dict of ``config``: trainers keep their config in a dataclass."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    if isinstance(config, Mapping):
        return dict(config)
    raise TypeError(f"config must be a dict or a dataclass instance, not {type(config).__name__}")


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` to ``path`` whole or not at all (temp file, then rename).
    Paths and other non-JSON values are written as their ``str``."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


def read_metrics(out_dir: str | Path) -> list[dict[str, Any]]:
    """Every line of ``out_dir/metrics.jsonl``, in order, as dicts.

    A last line without its newline is what a crash mid-write leaves; it is
    skipped. Any other line that is not JSON is an error naming the line."""
    path = Path(out_dir) / METRICS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no metrics at {path}; is {out_dir} a RunLog out_dir?")
    text = path.read_text()
    lines = text.split("\n")
    # The part after the last newline is "" for a complete file, else a torn line.
    complete, torn = lines[:-1], lines[-1]
    rows = []
    for number, line in enumerate(complete, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as error:
            message = f"{path}, line {number} is not JSON ({error}): {line[:80]!r}"
            raise ValueError(message) from None
    if torn.strip():
        try:
            rows.append(json.loads(torn))
        except json.JSONDecodeError:
            pass
    return rows


def checked_metrics(metrics: Mapping[str, Any]) -> dict[str, int | float]:
    """``metrics`` as plain Python numbers, or a ValueError naming the bad key."""
    checked: dict[str, int | float] = {}
    for key, value in metrics.items():
        if not isinstance(key, str) or not METRIC_NAME.match(key):
            raise ValueError(
                f"metric name {key!r} is not section/name in lower case "
                f"({METRIC_NAME.pattern}), e.g. 'charts/success_rate'; "
                f"see STANDARD_METRICS for the standard names"
            )
        # bool is an int, but a True in a chart is a bug in the caller.
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(
                f"metric {key!r} must be a number, got {type(value).__name__} {value!r}; "
                f"pass a float (tensor.item() for a tensor)"
            )
        number = int(value) if isinstance(value, numbers.Integral) else float(value)
        if not math.isfinite(number):
            raise ValueError(f"metric {key!r} is {number}; log only finite numbers")
        checked[key] = number
    return checked


class RunLog:
    """Writes a run's metrics to ``out_dir/metrics.jsonl`` and TensorBoard.

    ``tensorboard``: True writes event files under ``out_dir/tensorboard`` and
    raises ImportError if TensorBoard is missing; False writes none; None (the
    default) writes them when TensorBoard is installed and warns when it is not.
    ``config`` (a dict or a dataclass) is written to ``out_dir/config.json``.
    ``resume_step``: continue the run already in ``out_dir`` after step
    ``resume_step``, dropping what it logged after that step. Without it,
    an ``out_dir`` that already has metrics is an error, so runs never mix.

    Use it as a context manager, or call `close`::

        with RunLog("runs/grpo-frozenlake", config=asdict(args)) as run_log:
            run_log.log(step, {"charts/success_rate": 0.5, "losses/policy": 0.12})
    """

    def __init__(
        self,
        out_dir: str | Path,
        *,
        tensorboard: bool | None = None,
        config: Mapping[str, Any] | Any | None = None,
        resume_step: int | None = None,
    ) -> None:
        self.out_dir = Path(out_dir)
        metrics_path = self.out_dir / METRICS_FILE
        if resume_step is None and metrics_path.exists() and metrics_path.stat().st_size:
            raise FileExistsError(
                f"{metrics_path} already holds a run's metrics; pass resume_step=STEP to "
                f"continue that run from its checkpoint, or choose a new out_dir"
            )
        writer_class = self._summary_writer_class(tensorboard)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if resume_step is not None and metrics_path.exists():
            kept = [row for row in read_metrics(self.out_dir) if row.get("step", 0) <= resume_step]
            tmp = metrics_path.with_name(METRICS_FILE + ".tmp")
            tmp.write_text("".join(json.dumps(row) + "\n" for row in kept))
            os.replace(tmp, metrics_path)
        if config is not None:
            write_json(self.out_dir / CONFIG_FILE, config_to_dict(config))
        self._file = metrics_path.open("a")
        self._writer = None
        if writer_class is not None:
            # purge_step hides the points a crashed run logged after its
            # checkpoint, so TensorBoard too shows each step once.
            purge = None if resume_step is None else resume_step + 1
            self._writer = writer_class(
                log_dir=str(self.out_dir / TENSORBOARD_DIR), purge_step=purge, flush_secs=30
            )

    @staticmethod
    def _summary_writer_class(tensorboard: bool | None) -> Any:
        if tensorboard is False:
            return None
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as error:
            message = str(
                missing_extra(
                    error.name or "tensorboard",
                    extra="train",
                    purpose="TensorBoard logging",
                    note="(or pip install tensorboard), or pass tensorboard=False to log "
                    "to metrics.jsonl only",
                )
            )
            if tensorboard:
                raise ImportError(message) from error
            warnings.warn(message, stacklevel=3)
            return None
        return SummaryWriter

    @property
    def tensorboard(self) -> bool:
        """Whether this log writes TensorBoard event files."""
        return self._writer is not None

    def log(self, step: int, metrics: Mapping[str, float]) -> None:
        """Record ``metrics`` at ``step``: one line of metrics.jsonl, flushed now,
        and one TensorBoard scalar per metric. Names must be ``section/name``
        and values finite numbers (ValueError naming the key otherwise)."""
        if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
            raise ValueError(f"step must be an int >= 0, got {step!r}")
        if self._file.closed:
            raise ValueError(f"this RunLog of {self.out_dir} is closed; open a new one to log")
        # Checked before anything is written, so a bad call leaves no half line.
        checked = checked_metrics(metrics)
        now = time.time()
        self._file.write(json.dumps({"step": int(step), "time": now, **checked}) + "\n")
        self._file.flush()
        if self._writer is not None:
            for key, value in checked.items():
                self._writer.add_scalar(key, value, global_step=int(step), walltime=now)

    def close(self) -> None:
        """Flush and close the files; calling it again does nothing."""
        if not self._file.closed:
            self._file.close()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
