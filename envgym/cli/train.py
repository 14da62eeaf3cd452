"""``envgym train grpo ...``: the reference trainers from the command line.

    envgym train grpo --env envgym/FrozenLake-v0 --model tiny --steps 50
    envgym train grpo --env envgym/Sokoban-v0 --model ./my-model --estimator gigpo --eval-every 10

The options are the trainer's config fields (`envgym.trainers.grpo.GRPOConfig`),
the same as ``python -m envgym.trainers.grpo``. Training needs torch and
transformers (``pip install 'envgym[train]'``), imported when a run starts.
"""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

from envgym.cli.arguments import EXIT_OK, UserError


def add_commands(sub: Any) -> None:
    """Add ``train`` to the ``envgym`` subparsers `sub`."""
    from envgym.trainers.common.config import config_parser
    from envgym.trainers.grpo import GRPOConfig

    train = sub.add_parser("train", help="train a model on an env (GRPO, RLOO, GiGPO)")
    train_sub = train.add_subparsers(dest="train_command", metavar="TRAINER")
    train.set_defaults(handler=lambda _args: train.print_help() or EXIT_OK)
    p = train_sub.add_parser(
        "grpo",
        help="multi-turn GRPO with grpo, rloo, gigpo or turn-level advantages",
        description="Collect groups of episodes with the model, turn their rewards into "
        "advantages and take clipped policy-gradient steps on the model's own tokens. "
        "The run folder gets metrics.jsonl, TensorBoard events, checkpoints and, with "
        "--eval-every, results files the leaderboard accepts.",
    )
    config_parser(GRPOConfig, p)
    p.set_defaults(handler=_grpo)


def _grpo(args: argparse.Namespace) -> int:
    from envgym.trainers.common.config import config_from_args
    from envgym.trainers.common.progress import print_summary
    from envgym.trainers.grpo import GRPOConfig, train

    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        raise UserError(f"training needs {' and '.join(missing)}: pip install 'envgym[train]'")
    try:
        config = config_from_args(GRPOConfig, args)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    try:
        summary = train(config)
    except KeyError as exc:  # an unknown env id, with the registry's suggestions
        raise UserError(exc.args[0]) from None
    except (FileNotFoundError, FileExistsError) as exc:
        raise UserError(str(exc)) from None
    print_summary("GRPO", summary)
    return EXIT_OK
