"""``envgym train grpo|ppo|selfplay ...``: the reference trainers from the command line.

    envgym train grpo --env envgym/FrozenLake-v0 --model tiny --steps 50
    envgym train grpo --env envgym/Sokoban-v0 --model ./my-model --estimator gigpo --eval-every 10
    envgym train ppo --env envgym/Sokoban-v0 --model ./my-model
    envgym train selfplay --game tictactoe --model tiny --eval-every 20

The options are each trainer's config fields (e.g.
`envgym.trainers.grpo.GRPOConfig`), the same as ``python -m
envgym.trainers.grpo``. Training needs torch and transformers (``pip install
'envgym[train]'``), imported when a run starts. Several GPUs: run the module
under torchrun (``torchrun --nproc_per_node 8 -m envgym.trainers.grpo ...``).
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from envgym.cli.arguments import EXIT_OK, UserError
from envgym.extras import MissingExtra, require_all

#: name -> (module under envgym.trainers, config class, title, help, description)
TRAINERS = {
    "grpo": (
        "grpo",
        "GRPOConfig",
        "GRPO",
        "multi-turn GRPO with grpo, rloo, gigpo or turn-level advantages",
        "Collect groups of episodes with the model, turn their rewards into advantages and "
        "take clipped policy-gradient steps on the model's own tokens.",
    ),
    "ppo": (
        "ppo",
        "PPOConfig",
        "PPO",
        "turn-level PPO: a value head on the policy, GAE over turns",
        "Collect episodes with the model, estimate each turn's value with a value head on "
        "the policy, turn per-turn rewards into GAE advantages and take clipped policy and "
        "value steps.",
    ),
    "selfplay": (
        "selfplay",
        "SelfPlayConfig",
        "Self-play",
        "SPIRAL-style self-play on a zero-sum game, against itself and past checkpoints",
        "One policy plays every seat of a game against itself and a pool of its past "
        "checkpoints, with a baseline per role, and is evaluated against the built-in "
        "opponents.",
    ),
}
RUN_FOLDER = (
    " The run folder gets metrics.jsonl, TensorBoard events, checkpoints and, with "
    "--eval-every, results files the leaderboard accepts."
)


def add_commands(sub: Any) -> None:
    """Add ``train`` to the ``envgym`` subparsers `sub`."""
    from envgym.trainers.common.config import config_parser

    train = sub.add_parser("train", help="train a model on an env (GRPO, PPO, self-play)")
    train_sub = train.add_subparsers(dest="train_command", metavar="TRAINER")
    train.set_defaults(handler=lambda _args: train.print_help() or EXIT_OK)
    for name, (module, config_name, _title, help_text, description) in TRAINERS.items():
        config_cls = getattr(importlib.import_module(f"envgym.trainers.{module}"), config_name)
        p = train_sub.add_parser(name, help=help_text, description=description + RUN_FOLDER)
        config_parser(config_cls, p)
        p.set_defaults(handler=_run, trainer=name)


def _run(args: argparse.Namespace) -> int:
    from envgym.trainers.common.config import config_from_args
    from envgym.trainers.common.progress import print_summary

    module, config_name, title, _help, _description = TRAINERS[args.trainer]
    try:
        require_all(["torch", "transformers"], extra="train", purpose="training")
    except MissingExtra as exc:
        raise UserError(str(exc)) from None
    trainer = importlib.import_module(f"envgym.trainers.{module}")
    try:
        config = config_from_args(getattr(trainer, config_name), args)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    try:
        summary = trainer.train(config)
    except KeyError as exc:  # an unknown env id, with the registry's suggestions
        raise UserError(exc.args[0]) from None
    except (ValueError, FileNotFoundError, FileExistsError) as exc:  # options, data, paths
        raise UserError(str(exc)) from None
    print_summary(title, summary)
    return EXIT_OK
