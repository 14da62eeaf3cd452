"""Command lines from a trainer's config dataclass.

A trainer's config is a dataclass whose fields are declared with `option`
(a default and a help text). `config_parser` turns it into an argparse
parser (``--field-name``, types from the defaults, ``--flag/--no-flag`` for
booleans, JSON for dicts), so ``python -m envgym.trainers.grpo`` and
``envgym train grpo`` take the same options and the dataclass stays the one
place they are written.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Sequence
from typing import Any, TypeVar

from envgym.evaluation.inputs import json_object

__all__ = ["config_from_args", "config_parser", "option"]

C = TypeVar("C")


def option(default: Any, help: str, choices: Sequence[Any] | None = None) -> Any:
    """A config field with its default, its help text and (optionally) the
    values it may take."""
    metadata = {"help": help, "choices": tuple(choices) if choices else None}
    if isinstance(default, dict | list):
        return dataclasses.field(
            default_factory=lambda: json.loads(json.dumps(default)), metadata=metadata
        )
    return dataclasses.field(default=default, metadata=metadata)


def config_parser(
    cls: type, parser: argparse.ArgumentParser | None = None
) -> argparse.ArgumentParser:
    """Add one option per field of the dataclass ``cls`` to ``parser`` (a new
    one if None) and return it."""
    parser = parser or argparse.ArgumentParser(description=(cls.__doc__ or "").split("\n")[0])
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        help_text = f.metadata.get("help", "")
        kwargs: dict[str, Any] = {"dest": f.name, "default": default}
        if isinstance(default, bool):
            parser.add_argument(
                flag, action=argparse.BooleanOptionalAction, help=help_text, **kwargs
            )
            continue
        if isinstance(default, dict):
            kwargs["type"] = json_object
            kwargs["metavar"] = "JSON"
        elif isinstance(default, int | float | str):
            kwargs["type"] = type(default)
        else:  # None: a string, or a number where the help says so
            kwargs["type"] = str
        if f.metadata.get("choices"):
            kwargs["choices"] = f.metadata["choices"]
        parser.add_argument(flag, help=f"{help_text} (default: {default})", **kwargs)
    return parser


def config_from_args(cls: type[C], args: argparse.Namespace) -> C:
    """The config ``cls`` holding the parsed ``args``."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in vars(args).items() if k in names})
