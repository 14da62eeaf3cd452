"""The ``envgym`` command: list and read about envs, play one, evaluate agents.

    envgym list                          every env id with tags and difficulties
    envgym info envgym/Sokoban-v0        the env's manual
    envgym play envgym/FrozenLake-v0     play it yourself in the terminal
    envgym eval ID --agent oracle --episodes 20 --out results.json
    envgym baselines                     random and oracle agents on every env
    envgym serve ID --port 8000          serve an env over WebSocket (OpenEnv protocol)
    envgym mcp serve ID                  serve an env's tools as an MCP server (stdio or HTTP)
    envgym sandbox doctor                which code sandboxes work here
    envgym leaderboard serve --db lb.db  a leaderboard that replays what it is sent
    envgym submit results.json --server URL --token T
    envgym train grpo --env envgym/FrozenLake-v0 --model tiny

Each command group has its module here; this one builds the parser and runs
the command. An env's own commands (a retrieval server, a web site) are
declared on its spec (`EnvSpec.commands`) and added after ``eval`` and
``baselines``, so this module names no env; `envgym --help` lists them.

User errors (unknown id, bad arguments, an output path that cannot be written)
print one line to stderr and exit with status 2; they never show a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from envgym.cli import envs, evaluate, leaderboard, mcp, sandbox, serve, train
from envgym.cli.arguments import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UserError
from envgym.evaluation import EvaluationError, ResultsFileError
from envgym.registry import (
    EnvCreationError,
    EnvPluginWarning,
    list_envs,
    load_entry_point,
    register_envs,
)
from envgym.version import __version__

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``envgym`` argument parser; each command's ``handler`` runs it."""
    parser = argparse.ArgumentParser(
        prog="envgym",
        description="Gymnasium-compatible text environments for LLM agents.",
        epilog="Run `envgym COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"envgym {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    envs.add_commands(sub)
    evaluate.add_commands(sub)
    add_env_commands(sub)
    serve.add_commands(sub)
    mcp.add_commands(sub)
    sandbox.add_commands(sub)
    leaderboard.add_commands(sub)
    train.add_commands(sub)
    return parser


def add_env_commands(sub: Any) -> None:
    """Add the commands every registered env declares (`EnvSpec.commands`), each once.

    One that does not import or clashes with a command already there is left
    out with an `EnvPluginWarning`, so a broken plugin never breaks ``envgym``.
    """
    register_envs()
    targets = dict.fromkeys(c for spec in list_envs() for c in spec.commands)
    for target in targets:
        owners = ", ".join(s.id for s in list_envs() if target in s.commands)
        try:
            load_entry_point(target)(sub)
        except Exception as exc:  # an env's own bug must not break the other commands
            warnings.warn(
                f"envgym: left out the command {target} of {owners}: {type(exc).__name__}: {exc}",
                EnvPluginWarning,
                stacklevel=2,
            )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``envgym`` with `argv` (default: ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    register_envs()  # the commands look ids up in Gymnasium's registry
    try:
        return args.handler(args)
    except (UserError, EnvCreationError, EvaluationError, ResultsFileError) as exc:
        print(f"envgym: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\nenvgym: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`envgym list | head`); stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
