"""The options every trainer takes, declared once, and their command line.

`RunOptions` is a dataclass of the options every reference trainer shares
(the model, the sampling, the run folder, checkpoints, evaluation, logging),
each declared once with its default and help text; `EnvRunOptions` adds the
env a GRPO or PPO run plays. A trainer's config extends one of them with its
algorithm's fields only, as TRL's ``GRPOConfig(TrainingArguments)`` does::

    @dataclass
    class GRPOConfig(EnvRunOptions):
        estimator: str = option("grpo", "advantage estimator", ESTIMATORS)

A field a resumed run may change is marked on its type,
``steps: Resumable[int]``; `resume_conflicts` is the one rule that reads the
marks. ``python -m envgym.trainers.<name>`` and ``envgym train <name>`` parse
the same options with `transformers.HfArgumentParser` (`options_parser`):
``--field-name`` (or ``--field_name``) per field, ``--flag``/``--no-flag``
for booleans, JSON for `JsonObject` fields, the declared choices.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, TypeVar

from envgym.evaluation.inputs import json_object
from envgym.trainers.common.policy import BACKENDS

__all__ = [
    "EnvRunOptions",
    "JsonObject",
    "Resumable",
    "RunOptions",
    "option",
    "options_parser",
    "override_default",
    "parse_options",
    "resumable_options",
    "resume_conflicts",
]

T = TypeVar("T")
Options = TypeVar("Options", bound="RunOptions")
RESUMABLE = "resumable"
#: The type of a field that a resumed run may change (``steps: Resumable[int]``):
#: changing it mid-run cannot corrupt the run's state (weights, optimizer, RNG
#: streams, baselines, pool) or make its config describe something it did not
#: do. The parser sees the plain type (``get_type_hints`` drops the mark).
Resumable = Annotated[T, RESUMABLE]


class JsonObject(dict):
    """A dict option; on the command line one JSON object, e.g. ``'{"max_turns": 6}'``."""

    def __init__(self, value: Any = ()) -> None:
        super().__init__(json_object(value) if isinstance(value, str) else value)


def option(default: Any, help: str, choices: Sequence[Any] | None = None) -> Any:
    """A config field with its default, its help text and (optionally) the
    values it may take; the metadata is what `HfArgumentParser` passes to
    ``add_argument``."""
    metadata: dict[str, Any] = {"help": help}
    if choices:
        metadata["choices"] = tuple(choices)
    if isinstance(default, dict):
        metadata["metavar"] = "JSON"
        return dataclasses.field(
            default_factory=lambda: json.loads(json.dumps(default)), metadata=metadata
        )
    return dataclasses.field(default=default, metadata=metadata)


def override_default(name: str, default: Any) -> Any:
    """`RunOptions`' field ``name`` (its help and choices) with another default,
    for an algorithm that wants one: ``update_epochs: int = override_default("update_epochs", 2)``.
    Restate the field's type as declared, ``Resumable`` included."""
    declared = {f.name: f for f in dataclasses.fields(RunOptions)}[name]
    return dataclasses.field(default=default, metadata=declared.metadata)


@dataclass
class RunOptions:
    """What every trainer's run takes besides its algorithm's options."""

    #: The option that counts what a step plays over every rank (tasks,
    #: episodes or games; a trainer's config names its own). Step ``s`` plays
    #: the seeds from ``seed + s * count``; the count must split over the ranks.
    per_step_option: ClassVar[str] = ""

    model: str = option(
        "tiny", "a folder saved by save_pretrained, or 'tiny' (a small random model)"
    )
    steps: Resumable[int] = option(100, "policy updates to run")
    learning_rate: float = option(1e-4, "AdamW learning rate of the policy")
    max_grad_norm: float = option(1.0, "clip the gradient's norm to this (0: no clipping)")
    update_epochs: int = option(1, "passes over each batch")
    minibatches: int = option(1, "optimizer steps per pass")
    # Not resumable: GRPO and self-play cut their minibatches from the micro-batches.
    micro_batch_size: int = option(
        16, "episodes (self-play: seats) per forward pass (memory, not maths)"
    )
    temperature: float = option(1.0, "sampling temperature (log-probs use the same)")
    top_p: float = option(1.0, "nucleus sampling's mass")
    max_new_tokens: int = option(64, "longest reply, in tokens")
    max_context: int = option(
        0, "end an episode whose next prompt would pass this many tokens (0: the model's limit)"
    )
    system_prompt: bool = option(True, "start each chat with the env's system prompt")
    # Not resumable although a resumed run skips it: the run's config would then
    # describe a warm-up that never ran.
    warmup_steps: int = option(0, "format warm-up: supervised steps on random valid replies first")
    warmup_learning_rate: float = option(1e-3, "learning rate of the format warm-up")
    seed: int = option(
        0, "seed of torch and the tasks (step s plays the seeds from seed + s * tasks per step)"
    )
    device: Resumable[str] = option("", "torch device ('' takes cuda when there is one)")
    torch_threads: Resumable[int] = option(0, "CPU threads torch may use (0: torch's default)")
    # The engine only samples: the update scores its tokens with the trainer's
    # own log-probs, and a vLLM engine is rebuilt from the weights at start.
    backend: Resumable[str] = option(
        "transformers",
        "generation engine ('vllm': a colocated engine on the GPU, pip install 'envgym[vllm]')",
        BACKENDS,
    )
    vllm_gpu_memory_utilization: Resumable[float] = option(
        0.3, "vllm: share of the GPU's memory the engine may take"
    )
    out_dir: Resumable[str] = option("", "run folder ('' makes runs/<trainer>-<env>-<time>)")
    save_every: Resumable[int] = option(0, "checkpoint every N steps (0: only at the end)")
    resume: Resumable[bool] = option(
        False, "continue the run in --out-dir from its last checkpoint"
    )
    # Evaluation plays saved checkpoints apart from the training's episodes.
    eval_every: Resumable[int] = option(
        0, "evaluate every N steps (0: never); self-play plays the built-in opponents"
    )
    eval_episodes: Resumable[int] = option(
        32, "episodes per evaluation (self-play: per opponent level and seat)"
    )
    eval_seed: Resumable[int] = option(1_000_000, "first seed of the held-out evaluation episodes")
    tensorboard: Resumable[bool] = option(True, "write TensorBoard event files too")
    progress: Resumable[bool] = option(True, "show a live progress display")

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ValueError("; ".join(problems))

    def problems(self) -> list[str]:
        """What is wrong with these options, each naming the flag to change
        (a trainer's config adds its own checks to these)."""
        problems = []
        if self.steps < 1:
            problems.append("--steps must be >= 1")
        if min(self.update_epochs, self.minibatches, self.micro_batch_size) < 1:
            problems.append("--update-epochs, --minibatches and --micro-batch-size must be >= 1")
        if self.eval_every and self.seed + self.steps * self.per_step > self.eval_seed:
            problems.append("training seeds would reach --eval-seed; raise --eval-seed")
        return problems

    @property
    def per_step(self) -> int:
        """What a step plays over every rank (the `per_step_option`; 0 when none is named)."""
        return int(getattr(self, self.per_step_option)) if self.per_step_option else 0


@dataclass
class EnvRunOptions(RunOptions):
    """`RunOptions` of a run on one registered env (GRPO, PPO)."""

    env: str = option("envgym/FrozenLake-v0", "env id to train on")
    difficulty: str = option("", "difficulty level ('' for the env's default)")
    env_kwargs: JsonObject = option(
        {}, "more constructor kwargs as JSON, e.g. '{\"max_turns\": 6}'"
    )
    task_id: str = option(
        "", "reset every episode to this task (e.g. a FrozenLake map 'SFF/FHF/FFG')"
    )
    workers: Resumable[str] = option("sync", "vector env workers", ("sync", "subprocess"))

    def env_source(self) -> tuple[str, dict[str, Any]]:
        """The env id and its constructor kwargs, ``difficulty`` included."""
        kwargs = dict(self.env_kwargs)
        if self.difficulty:
            kwargs["difficulty"] = self.difficulty
        return self.env, kwargs

    def reset_options(self) -> dict[str, Any] | None:
        """The options every episode resets with: the ``task_id``, when one is set."""
        return {"task_id": self.task_id} if self.task_id else None


def resumable_options(cls: type[RunOptions]) -> frozenset[str]:
    """The fields of ``cls`` that a resumed run may change (typed `Resumable`)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    return frozenset(
        f.name
        for f in dataclasses.fields(cls)
        if RESUMABLE in getattr(hints[f.name], "__metadata__", ())
    )


def resume_conflicts(options: RunOptions, saved: Mapping[str, Any]) -> list[str]:
    """The options, as flags, that differ from a run's ``saved`` config and
    that a resumed run may not change. A key the saved config lacks (an
    option added since) counts as unchanged."""
    resumable = resumable_options(type(options))
    return [
        "--" + name.replace("_", "-")
        for name, value in sorted(dataclasses.asdict(options).items())
        if name not in resumable and saved.get(name, value) != value
    ]


def options_parser(
    cls: type[RunOptions], prog: str | None = None, description: str | None = None
) -> argparse.ArgumentParser:
    """The command line of the config ``cls``: `transformers.HfArgumentParser`
    on its fields, plus ``--no-flag`` for the booleans that default to False
    (HfArgumentParser adds it only to those that default to True)."""
    from transformers import HfArgumentParser

    parser = HfArgumentParser(
        cls, prog=prog, description=description or (cls.__doc__ or "").split("\n")[0]
    )
    for f in dataclasses.fields(cls):
        if f.default is False:
            parser.add_argument(
                f"--no-{f.name.replace('_', '-')}",
                action="store_false",
                dest=f.name,
                help=argparse.SUPPRESS,
            )
    return parser


def parse_options(
    cls: type[Options],
    argv: Sequence[str] | None,
    prog: str | None = None,
    description: str | None = None,
) -> Options:
    """``cls`` from the command line ``argv``. A malformed option exits
    (status 2, with the usage); options that parse but do not fit together
    raise ValueError from the config."""
    parser = options_parser(cls, prog, description)
    return cls(**vars(parser.parse_args(argv)))
