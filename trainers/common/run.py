"""What every trainer does around its loop: the run folder, resuming, seeds,
and when to save and evaluate.

`open_run` picks the run folder and refuses to write over a finished run
(``--resume`` continues it instead); `check_resume` refuses a resume whose
options would compute something else than the run it continues; `seed_everything`
seeds Python, numpy and torch. A trainer's config is a dataclass with at least
``env``, ``out_dir``, ``resume``, ``save_every``, ``eval_every`` and ``steps``.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envgym.trainers.common.checkpoint import latest_checkpoint

__all__ = ["RunDir", "check_resume", "checkpoint_due", "eval_due", "open_run", "seed_everything"]


@dataclass(frozen=True)
class RunDir:
    """Where a run writes, and the checkpoint it resumes from (None: a new run)."""

    out_dir: Path
    checkpoints: Path
    resume_from: Path | None


def open_run(config: Any, name: str) -> RunDir:
    """The run folder of ``config`` (``runs/<name>-<env>-<time>`` when
    ``out_dir`` is empty). A new run refuses a folder that already holds one;
    ``resume`` needs a checkpoint there."""
    default = f"runs/{name}-{config.env.split('/')[-1]}-{time.strftime('%Y%m%d-%H%M%S')}"
    out_dir = Path(config.out_dir or default)
    checkpoints = out_dir / "checkpoints"
    resume_from = latest_checkpoint(checkpoints) if config.resume else None
    if not config.resume and (out_dir / "metrics.jsonl").exists():
        raise FileExistsError(
            f"{out_dir} already holds a run; pass --resume to continue it from its last "
            "checkpoint, or choose another --out-dir"
        )
    if config.resume and resume_from is None:
        raise FileNotFoundError(f"--resume: no checkpoint in {checkpoints}; start without --resume")
    return RunDir(out_dir, checkpoints, resume_from)


def check_resume(
    config: Any, saved_config: Mapping[str, Any], resumable: frozenset[str], run: RunDir
) -> None:
    """Raise ValueError naming the options that differ from the saved run's,
    except the ``resumable`` ones (they do not change what is computed)."""
    changed = sorted(
        k
        for k, v in dataclasses.asdict(config).items()
        if k not in resumable and saved_config.get(k, v) != v
    )
    if changed:
        raise ValueError(
            f"--resume: {', '.join('--' + k.replace('_', '-') for k in changed)} differ from "
            f"the run in {run.out_dir} ({run.resume_from}/config.json); resume with its "
            "options, or start a new run in another --out-dir"
        )


def seed_everything(seed: int, torch_threads: int = 0) -> None:
    """Seed Python, numpy and torch; cap torch's CPU threads when asked."""
    import torch

    if torch_threads:
        torch.set_num_threads(torch_threads)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def eval_due(config: Any, done: int) -> bool:
    """Evaluate after step ``done``: every ``eval_every`` steps and at the end."""
    return bool(config.eval_every) and (done % config.eval_every == 0 or done == config.steps)


def checkpoint_due(config: Any, done: int) -> bool:
    """Save after step ``done``: every ``save_every`` steps, at the end, and
    before each evaluation (it plays the saved model)."""
    return (
        bool(config.save_every and done % config.save_every == 0)
        or done == config.steps
        or eval_due(config, done)
    )
