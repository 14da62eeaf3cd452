"""Reading what the user typed: argparse value types, the env options several
commands share, env ids, exit statuses, and `UserError` for input a command
cannot use."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from envgym.registry import get_spec

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

ID_HELP = "env id, e.g. envgym/Sokoban-v0 or Sokoban-v0 (see `envgym list`)"


def command_group(sub: Any, name: str, help: str, metavar: str = "SUBCOMMAND") -> Any:
    """Add the command `name` to the subparsers `sub` as a group of subcommands
    (its own subparsers, returned); run without one, it prints its help."""
    group = sub.add_parser(name, help=help)
    group.set_defaults(handler=lambda _args: group.print_help() or EXIT_OK)
    return group.add_subparsers(dest=f"{name}_command", metavar=metavar)


class UserError(Exception):
    """Something the user can fix; printed as one line, exit status 2."""


def parse_kwarg(text: str) -> tuple[str, Any]:
    """``key=value`` -> (key, value); the value is read as JSON when it parses
    (``3``, ``0.5``, ``true``, ``[1, 2]``), else kept as a string."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    if not key.isidentifier():
        raise argparse.ArgumentTypeError(f"{key!r} is not a valid keyword argument name")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


def int_at_least(minimum: int, complaint: str) -> Callable[[str], int]:
    """An argparse type: a whole number no smaller than `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{complaint}, got {value}")
        return value

    return parse


positive_int = int_at_least(1, "must be at least 1")
seed = int_at_least(0, "a seed is >= 0")
port = int_at_least(0, "a port is >= 0")


def non_negative_float(text: str) -> float:
    """An argparse type: a finite number >= 0 (a duration in seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0."""
    value = non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def add_env_options(parser: argparse.ArgumentParser) -> None:
    """``--difficulty`` and ``--kwarg``, read back by `env_kwargs`."""
    parser.add_argument(
        "--difficulty", metavar="LEVEL", help="difficulty level, e.g. easy, medium, hard"
    )
    parser.add_argument(
        "--kwarg",
        action="append",
        type=parse_kwarg,
        metavar="KEY=VALUE",
        help="extra env argument (repeatable); VALUE is read as JSON when it parses",
    )


def env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The env arguments given with `add_env_options`' flags."""
    kwargs = dict(args.kwarg or [])
    if getattr(args, "difficulty", None) is not None:
        kwargs["difficulty"] = args.difficulty
    return kwargs


def resolve_env_id(text: str) -> str:
    """The registered id for `text`; ``Sokoban-v0`` is accepted for ``envgym/Sokoban-v0``."""
    if text in gym.registry:
        return text
    if "/" not in text and f"envgym/{text}" in gym.registry:
        return f"envgym/{text}"
    try:
        return get_spec(text).id
    except KeyError as exc:
        raise UserError(exc.args[0]) from None
