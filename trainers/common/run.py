"""What every trainer does around its loop: the run folder, resuming or
warming up, the log, saving and evaluating, the summary and the command line.

`open_run` picks the run folder and refuses to write over a finished run
(``--resume`` continues it instead); `resume_or_warm_up` loads the checkpoint
a run resumes from (refusing options that a resumed run may not change,
`check_resume`) or runs the format warm-up, then gives every rank rank 0's
weights; `open_log` is the run's `RunLog` on rank 0; `rollout_metrics` are
the episode and rollout charts over every rank's episodes; `save_and_evaluate`
checkpoints and evaluates when due; `run_summary` and `run_main` end a run
and make ``python -m envgym.trainers.<name>``. A trainer's config is a
`RunOptions` (`envgym.trainers.common.options`).

A trainer's ``train`` uses them through two calls around its own loop:
`start_training` (the setup, returning a `Training`) and `Training.end_step`
(each step's tail)::

    training = start_training(config, "grpo", config.env_source())
    with envs, training:
        for step in range(training.start, config.steps):
            ...  # the algorithm's rollout, advantages and update
            training.end_step(step + 1, metrics)
    return training.finish()

`Training.first_seed` is the one seeding rule: step ``s`` plays the seeds
from ``seed + s * per_step``, each rank its share of them in order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from envgym.trainers.common.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from envgym.trainers.common.distributed import Distributed, init_distributed
from envgym.trainers.common.generation import SamplingParams
from envgym.trainers.common.options import RunOptions, parse_options, resume_conflicts
from envgym.trainers.common.policy import load_policy, make_backend
from envgym.trainers.common.progress import TrainProgress, print_summary
from envgym.trainers.common.rollout import Episode, RolloutTimes, collect_rollouts
from envgym.trainers.common.run_log import RunLog
from envgym.trainers.common.tokenization import ChatTokenizer
from envgym.trainers.common.tree import TreeShape
from envgym.trainers.common.warmup import format_warmup

Options = TypeVar("Options", bound=RunOptions)

__all__ = [
    "RunDir",
    "Training",
    "check_resume",
    "checkpoint_due",
    "eval_due",
    "open_log",
    "open_run",
    "resume_or_warm_up",
    "rollout_metrics",
    "run_main",
    "run_summary",
    "save_and_evaluate",
    "seed_everything",
    "start_training",
]


@dataclass(frozen=True)
class RunDir:
    """Where a run writes, and the checkpoint it resumes from (None: a new run)."""

    out_dir: Path
    checkpoints: Path
    resume_from: Path | None


def open_run(config: RunOptions, name: str, env_id: str) -> RunDir:
    """The run folder of ``config`` (``runs/<name>-<env>-<time>`` when
    ``out_dir`` is empty). A new run refuses a folder that already holds one;
    ``resume`` needs a checkpoint there."""
    default = f"runs/{name}-{env_id.split('/')[-1]}-{time.strftime('%Y%m%d-%H%M%S')}"
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


def check_resume(config: RunOptions, saved_config: Mapping[str, Any], run: RunDir) -> None:
    """Raise ValueError naming the options that differ from the saved run's
    and that a resumed run may not change (`resume_conflicts`)."""
    changed = resume_conflicts(config, saved_config)
    if changed:
        raise ValueError(
            f"--resume: {', '.join(changed)} differ from "
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


def eval_due(config: RunOptions, done: int) -> bool:
    """Evaluate after step ``done``: every ``eval_every`` steps and at the end."""
    return bool(config.eval_every) and (done % config.eval_every == 0 or done == config.steps)


def checkpoint_due(config: RunOptions, done: int) -> bool:
    """Save after step ``done``: every ``save_every`` steps, at the end, and
    before each evaluation (it plays the saved model)."""
    return (
        bool(config.save_every and done % config.save_every == 0)
        or done == config.steps
        or eval_due(config, done)
    )


def resume_or_warm_up(
    config: RunOptions,
    run: RunDir,
    dist: Distributed,
    *,
    model: Any,
    optimizer: Any,
    chat: ChatTokenizer,
    make_env: Callable[[], Any],
    options: dict[str, Any] | None = None,
    history: bool = True,
) -> dict[str, Any] | None:
    """Load the checkpoint ``run`` resumes from into ``model`` and
    ``optimizer`` and return what it saved (``step``, ``config``, ``extra``),
    or else run ``config.warmup_steps`` steps of the format warm-up
    (`format_warmup` on episodes of ``make_env()``, with a progress bar) and
    return None. Then every rank gets rank 0's weights, and every rank but 0
    reseeds torch so that ranks sample different replies (rank 0's stream
    resumes exactly)."""
    import torch

    saved = None
    if run.resume_from is not None:
        saved = load_checkpoint(run.resume_from, model=model, optimizer=optimizer)
        check_resume(config, saved["config"], run)
    elif config.warmup_steps:
        enabled = config.progress and dist.is_main
        with TrainProgress(config.warmup_steps, enabled=enabled, label="warm-up") as bar:
            format_warmup(
                model,
                chat,
                make_env,
                steps=config.warmup_steps,
                learning_rate=config.warmup_learning_rate,
                seed=config.seed + 10**8,
                options=options,
                system_prompt=config.system_prompt,
                history=history,
                on_step=lambda k, loss: bar.advance(k + 1, f"loss {loss:.3f}"),
            )
    dist.broadcast_model(model)
    if dist.rank:
        start = saved["step"] if saved else 0
        torch.manual_seed(config.seed + dist.rank + 100_003 * start)
    return saved


def open_log(run: RunDir, config: RunOptions, dist: Distributed, start: int) -> Any:
    """The run's `RunLog` on rank 0 (a resumed run's from step ``start``);
    an empty context on the other ranks, which log nothing."""
    if not dist.is_main:
        return contextlib.nullcontext()
    return RunLog(
        run.out_dir,
        tensorboard=config.tensorboard,
        config=dataclasses.asdict(config),
        resume_step=start if run.resume_from is not None else None,
    )


def rollout_metrics(
    dist: Distributed, played: Sequence[Episode], times: RolloutTimes, learning_rate: float
) -> dict[str, float]:
    """The ``charts/`` rates over every rank's episodes, and this rank's
    ``rollout/`` timings."""
    mine = [(e.success, e.episode_return, len(e.turns), e.context_full) for e in played]
    every = [s for part in dist.gather(mine) for s in part]
    return {
        "charts/success_rate": float(np.mean([s[0] for s in every])),
        "charts/episodic_return": float(np.mean([s[1] for s in every])),
        "charts/episode_turns": float(np.mean([s[2] for s in every])),
        "charts/learning_rate": learning_rate,
        "charts/episodes": float(len(every)),
        "rollout/tokens_per_s": times.generated_tokens / max(times.generation_s, 1e-9),
        "rollout/generation_s": times.generation_s,
        "rollout/env_s": times.env_s,
        "rollout/tokenization_s": times.tokenization_s,
        "rollout/context_full": float(sum(s[3] for s in every)),
    }


def save_and_evaluate(
    run: RunDir,
    config: RunOptions,
    dist: Distributed,
    done: int,
    *,
    model: Any,
    tokenizer: Any,
    optimizer: Any,
    extra: Mapping[str, Any] | None = None,
    evaluate: Callable[[Path, int], tuple[dict[str, float], list[Path]]],
) -> tuple[dict[str, float], list[Path]]:
    """After step ``done``, on rank 0: save a checkpoint when due and, when an
    evaluation is due, ``evaluate(checkpoint, done)`` (its metrics and results
    files). The other ranks wait at a barrier."""
    metrics: dict[str, float] = {}
    files: list[Path] = []
    if dist.is_main and checkpoint_due(config, done):
        path = save_checkpoint(
            run.checkpoints,
            step=done,
            model=model,
            tokenizer=tokenizer,
            optimizer=optimizer,
            config=dataclasses.asdict(config),
            extra=dict(extra) if extra else None,
        )
        if eval_due(config, done):
            metrics, files = evaluate(path, done)
    dist.barrier()
    return metrics, files


def run_summary(
    run: RunDir, config: RunOptions, history: Sequence[Mapping[str, float]], evals: Sequence[Path]
) -> dict[str, Any]:
    """What `train` returns: the run folder, the last step's rates, the
    evaluation files and the last checkpoint."""
    last = history[-1] if history else {}
    return {
        "out_dir": str(run.out_dir),
        "steps": config.steps,
        "success_rate": last.get("charts/success_rate"),
        "episodic_return": last.get("charts/episodic_return"),
        "eval_results": [str(p) for p in evals],
        "checkpoint": str(latest_checkpoint(run.checkpoints)),
    }


def run_main(
    name: str,
    title: str,
    config_cls: type[Options],
    train: Callable[[Options], dict[str, Any]],
    argv: Sequence[str] | None,
) -> int:
    """``python -m envgym.trainers.<name>``: parse the options, train, print the
    summary; bad options, an unknown env id or a bad path exit 2 with the error."""
    prog = f"python -m envgym.trainers.{name}"
    try:
        summary = train(parse_options(config_cls, argv, prog))
    except KeyError as exc:  # an unknown env id, with the registry's suggestions
        print(f"{prog}: error: {exc.args[0]}", file=sys.stderr)
        raise SystemExit(2) from None
    except (ValueError, FileNotFoundError, FileExistsError) as exc:  # bad options, data, paths
        print(f"{prog}: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    print_summary(title, summary)
    return 0


@dataclass
class Training:
    """A trainer's run once `start_training` has set it up: what its loop
    uses, and each step's tail (`end_step`). ``with training:`` opens the
    run's log (rank 0) and progress display; `finish` ends the run."""

    config: RunOptions
    dist: Distributed
    run: RunDir
    #: This rank's share of the items a step plays (``config.per_step``).
    mine: range
    model: Any
    tokenizer: Any
    chat: ChatTokenizer
    params: SamplingParams
    #: The longest context an episode may reach (None: no limit known).
    max_context: int | None
    optimizer: Any
    #: What the checkpoint this run resumes from saved; None in a new run.
    saved: dict[str, Any] | None
    backend: Any
    #: The options every episode resets with.
    options: dict[str, Any] | None
    #: Every step's metrics so far, and the evaluation results files.
    history: list[dict[str, float]] = field(default_factory=list)
    evals: list[Path] = field(default_factory=list)
    _open: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)
    _log: Any = field(default=None, repr=False)
    _progress: Any = field(default=None, repr=False)

    @property
    def start(self) -> int:
        """The first step to run: 0, or the step a resumed run saved."""
        return self.saved["step"] if self.saved else 0

    def __enter__(self) -> Training:
        start, show = self.start, self.config.progress and self.dist.is_main
        self._log = self._open.enter_context(open_log(self.run, self.config, self.dist, start))
        self._progress = self._open.enter_context(
            TrainProgress(self.config.steps, start, enabled=show)
        )
        return self

    def __exit__(self, *exc: Any) -> bool:
        return self._open.__exit__(*exc)

    def first_seed(self, step: int) -> int:
        """The seed of this rank's first item in ``step``: step ``s`` plays the
        seeds from ``seed + s * per_step``, each rank its share of them in order."""
        return self.config.seed + step * self.config.per_step + self.mine.start

    def rollouts(
        self, envs: Any, step: int, tree: TreeShape | None = None
    ) -> tuple[list[Episode], RolloutTimes]:
        """Step ``step``'s episodes, one in each env of ``envs`` (a
        `TextVectorEnv`) from `first_seed` on (with ``tree``: one per leaf of
        the tree rollouts): `collect_rollouts` with this run's backend,
        sampling, reset options, system prompt and context limit."""
        return collect_rollouts(
            envs,
            self.backend,
            self.chat,
            self.params,
            seed=self.first_seed(step),
            options=self.options,
            system_prompt=self.config.system_prompt,
            max_tokens=self.max_context,
            tree=tree,
        )

    def end_step(
        self,
        done: int,
        metrics: dict[str, float],
        *,
        extra: Mapping[str, Any] | None = None,
        evaluate: Callable[[Path, int], tuple[dict[str, float], list[Path]]] | None = None,
    ) -> None:
        """The tail of step ``done``: save a checkpoint (with the trainer's
        ``extra`` state) and evaluate when due (`save_and_evaluate`;
        ``evaluate`` defaults to `evaluate_step` on the trained env), add the
        scores to ``metrics``, log them on rank 0 and advance the progress."""
        if evaluate is None:
            from envgym.trainers.common.evaluation import evaluate_step

            evaluate = partial(
                evaluate_step, config=self.config, out_dir=self.run.out_dir, device=self.dist.device
            )
        scores, files = save_and_evaluate(
            self.run,
            self.config,
            self.dist,
            done,
            model=self.model,
            tokenizer=self.tokenizer,
            optimizer=self.optimizer,
            extra=extra,
            evaluate=evaluate,
        )
        metrics.update(scores)
        self.evals += files
        if self.dist.is_main:
            self._log.log(done, metrics)
        self.history.append(metrics)
        self._progress.update(done, metrics)

    def finish(self) -> dict[str, Any]:
        """Close the backend and torch.distributed; the run's summary (`run_summary`)."""
        self.backend.close()
        self.dist.close()
        return run_summary(self.run, self.config, self.history, self.evals)


def start_training(
    config: RunOptions,
    name: str,
    env: tuple[str, dict[str, Any]],
    *,
    options: dict[str, Any] | None = None,
    history: bool = True,
    optimizer: Callable[[Any], Any] | None = None,
) -> Training:
    """Set up a run of the trainer ``name`` on ``env`` (an env id and its
    constructor kwargs), in this order: check the env (an unknown id or bad
    kwargs fail here), start torch.distributed under torchrun and take this
    rank's share of the step's items (``config.per_step``, which must split
    over the ranks), open the run folder (`open_run`), seed (`seed_everything`),
    load the policy and its tokenizer, build the optimizer (``optimizer(model)``;
    by default AdamW over the model's parameters), resume or run the format
    warm-up on ``env`` (`resume_or_warm_up`; episodes reset with ``options``,
    prompted with their ``history``) and make the generation backend."""
    import gymnasium as gym
    import torch

    from envgym.evaluation.inputs import make_evaluation_env

    env_id, env_kwargs = env
    make_evaluation_env(env_id, env_kwargs).close()
    dist = init_distributed(config.device)
    flag = "--" + config.per_step_option.replace("_", "-")
    mine = dist.shard(config.per_step, flag)  # a count that does not split fails here
    run = open_run(config, name, env_id)
    seed_everything(config.seed, config.torch_threads)
    model, tokenizer = load_policy(config.model, config.seed, dist.device)
    chat = ChatTokenizer(tokenizer)
    params = SamplingParams(config.temperature, config.top_p, 0, config.max_new_tokens)
    max_context = config.max_context or getattr(model.config, "max_position_embeddings", None)
    if optimizer is None:
        built = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
    else:
        built = optimizer(model)
    saved = resume_or_warm_up(
        config,
        run,
        dist,
        model=model,
        optimizer=built,
        chat=chat,
        make_env=lambda: gym.make(env_id, **env_kwargs),
        options=options,
        history=history,
    )
    backend = make_backend(
        config.backend,
        model,
        tokenizer,
        chat.stop_token_ids,
        gpu_memory_utilization=config.vllm_gpu_memory_utilization,
        seed=config.seed + dist.rank,
    )
    return Training(
        config=config,
        dist=dist,
        run=run,
        mine=mine,
        model=model,
        tokenizer=tokenizer,
        chat=chat,
        params=params,
        max_context=max_context,
        optimizer=built,
        saved=saved,
        backend=backend,
        options=options,
    )
