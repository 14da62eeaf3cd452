"""`EnvSpec`, what tools need to know about one env id, and `check_spec`, the
checks `envgym.register` runs on a spec before it joins the registry."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gymnasium.envs.registration import parse_env_id

__all__ = [
    "GENERIC_AGENTS",
    "LLM_KINDS",
    "RESERVED_AGENT_NAMES",
    "EnvSpec",
    "EnvSpecError",
    "check_spec",
]

#: The ``--agent`` words every env has (`envgym.agents` builds them).
GENERIC_AGENTS = ("random", "oracle")
#: The LLM agents' kinds, ``KIND:...`` (``openai:URL#MODEL``, ``hf:PATH``, ``vllm:PATH``).
LLM_KINDS = ("openai", "hf", "vllm")
#: Names an env's own agents cannot take.
RESERVED_AGENT_NAMES = (*GENERIC_AGENTS, *LLM_KINDS)
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_AGENT_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


class EnvSpecError(ValueError):
    """A spec `envgym.register` refuses: malformed, or an id that is already taken."""


@dataclass(frozen=True)
class EnvSpec:
    """One envgym environment id and what tools need to know about it."""

    id: str
    entry_point: str
    description: str
    tags: tuple[str, ...]
    difficulties: tuple[str, ...] = ("easy", "medium", "hard")
    default_difficulty: str = "easy"
    #: "module:Class" of the env's oracle agent (a solver or planner), if any.
    oracle: str | None = None
    #: "module:Class" of what ``--agent random`` plays on this env, where random
    #: text would not mean random play (SQL-v0: random queries of its grammar);
    #: built with the unwrapped env and the agent's seed. None: `RandomAgent`.
    random_agent: str | None = None
    #: "module:function" that raises FileNotFoundError, saying what to download,
    #: when the data the env needs (files envgym cannot ship) is not on this machine.
    data_check: str | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: Constructor arguments a scored (leaderboard) run may set besides
    #: "difficulty" and the preset settings: ones that pick the task, never a
    #: backend, service, path or a change to how rewards are counted.
    scoring_kwargs: tuple[str, ...] = ()
    #: Agents only this env has, by the name ``--agent`` takes: name ->
    #: "module:Class", built with the unwrapped env as the oracle is.
    agents: dict[str, str] = field(default_factory=dict)
    #: This env's own ``envgym`` commands: "module:function"s, each called with
    #: the ``envgym`` parser's subparsers (what ``add_subparsers()`` returned).
    commands: tuple[str, ...] = ()


def _words(value: Any, what: str, *, empty: bool = True) -> None:
    if not isinstance(value, tuple | list) or not all(isinstance(v, str) and v for v in value):
        raise EnvSpecError(f"{what} must be a tuple of non-empty strings, got {value!r}")
    if not empty and not value:
        raise EnvSpecError(f"{what} must name at least one, got {value!r}")


def _target(value: Any, what: str, example: str) -> None:
    if not isinstance(value, str) or not _TARGET.match(value):
        raise EnvSpecError(
            f'{what} must be a "module:attribute" string like {example!r}, got {value!r}'
        )


def check_spec(spec: Any) -> None:
    """Raise `EnvSpecError` saying what to fix if `spec` is not a well-formed `EnvSpec`."""
    if not isinstance(spec, EnvSpec):
        raise EnvSpecError(f"envgym.register takes an envgym.EnvSpec, got {type(spec).__name__}")
    try:
        namespace, _, version = parse_env_id(spec.id) if isinstance(spec.id, str) else (0, 0, 0)
    except Exception:  # gymnasium.error.Error: "Malformed environment ID"
        namespace = version = None
    if not isinstance(spec.id, str) or namespace is None or version is None:
        raise EnvSpecError(
            f"an env id is NAMESPACE/Name-vN, like 'mypkg/Coin-v0' (a namespace of "
            f"your own, a version to bump when behaviour changes); got {spec.id!r}"
        )
    where = f"{spec.id}: "
    _target(spec.entry_point, where + "entry_point", "mypkg.env:CoinEnv")
    if not isinstance(spec.description, str):
        raise EnvSpecError(f"{where}description must be a string, got {spec.description!r}")
    _words(spec.tags, where + "tags")
    _words(spec.difficulties, where + "difficulties", empty=False)
    if spec.default_difficulty not in spec.difficulties:
        raise EnvSpecError(
            f"{where}default_difficulty {spec.default_difficulty!r} is not one of "
            f"difficulties {tuple(spec.difficulties)}"
        )
    for name in ("oracle", "random_agent", "data_check"):
        if getattr(spec, name) is not None:
            _target(getattr(spec, name), f"{where}{name}", "mypkg.oracle:CoinOracle")
    if not isinstance(spec.kwargs, Mapping) or not all(isinstance(k, str) for k in spec.kwargs):
        raise EnvSpecError(f"{where}kwargs must be a dict of argument names, got {spec.kwargs!r}")
    _words(spec.scoring_kwargs, where + "scoring_kwargs")
    if not isinstance(spec.agents, Mapping):
        raise EnvSpecError(f"{where}agents must be a dict name -> 'module:Class'")
    for name, target in spec.agents.items():
        if not isinstance(name, str) or not _AGENT_NAME.match(name):
            raise EnvSpecError(
                f"{where}agent names are lowercase words like 'greedy', got {name!r}"
            )
        if name in RESERVED_AGENT_NAMES:
            raise EnvSpecError(
                f"{where}the agent name {name!r} is taken by envgym "
                f"({', '.join(RESERVED_AGENT_NAMES)}); pick another"
            )
        _target(target, f"{where}agent {name!r}", "mypkg.agents:GreedyAgent")
    _words(spec.commands, where + "commands")
    for command in spec.commands:
        _target(command, where + "commands", "mypkg.cli:add_commands")
