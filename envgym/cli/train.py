"""``envgym train grpo|ppo|selfplay ...``: the reference trainers from the command line.

    envgym train grpo --env envgym/FrozenLake-v0 --model tiny --steps 50
    envgym train grpo --env envgym/Sokoban-v0 --model ./my-model --estimator gigpo --eval-every 10
    envgym train ppo --env envgym/Sokoban-v0 --model ./my-model
    envgym train selfplay --game tictactoe --model tiny --eval-every 20

The options are each trainer's config fields (e.g.
`envgym.trainers.grpo.GRPOConfig`, a `RunOptions`), parsed by
`envgym.trainers.common.options.parse_options` as ``python -m
envgym.trainers.grpo`` parses them. Training needs torch and transformers (``pip install
'envgym[train]'``), imported when a run starts. Several GPUs: run the module
under torchrun (``torchrun --nproc_per_node 8 -m envgym.trainers.grpo ...``).
"""

from __future__ import annotations

import argparse
import importlib
import textwrap
from typing import Any

from envgym.cli.arguments import EXIT_OK, EXIT_USAGE, UserError
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
    """Add ``train`` to the ``envgym`` subparsers `sub`. A trainer's options are
    parsed when it runs (`_run`): building their parser imports transformers,
    which the other commands need not wait for."""
    listing = "\n".join(f"  {name:<10}{entry[3]}" for name, entry in TRAINERS.items())
    train = sub.add_parser(
        "train",
        help="train a model on an env (GRPO, PPO, self-play)",
        description=textwrap.fill("Train a model on an env with a reference trainer." + RUN_FOLDER),
        epilog=f"trainers:\n{listing}\n\nRun `envgym train TRAINER --help` for its options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    train.add_argument(
        "trainer", nargs="?", choices=tuple(TRAINERS), metavar="TRAINER", help=", ".join(TRAINERS)
    )
    train.add_argument(
        "options", nargs=argparse.REMAINDER, metavar="OPTIONS", help="the trainer's options"
    )
    train.set_defaults(handler=_run, train=train)


def _run(args: argparse.Namespace) -> int:
    from envgym.trainers.common.progress import print_summary

    if args.trainer is None:
        args.train.print_help()
        return EXIT_OK
    module, config_name, title, _help, description = TRAINERS[args.trainer]
    try:
        require_all(["torch", "transformers"], extra="train", purpose="training")
    except MissingExtra as exc:
        raise UserError(str(exc)) from None
    from envgym.trainers.common.options import parse_options

    trainer = importlib.import_module(f"envgym.trainers.{module}")
    prog = f"envgym train {args.trainer}"
    try:
        config = parse_options(
            getattr(trainer, config_name), args.options, prog, description + RUN_FOLDER
        )
    except SystemExit as exc:  # --help, or options argparse cannot read
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except ValueError as exc:  # options that do not fit together
        raise UserError(str(exc)) from None
    try:
        summary = trainer.train(config)
    except KeyError as exc:  # an unknown env id, with the registry's suggestions
        raise UserError(exc.args[0]) from None
    except (ValueError, FileNotFoundError, FileExistsError) as exc:  # options, data, paths
        raise UserError(str(exc)) from None
    print_summary(title, summary)
    return EXIT_OK
