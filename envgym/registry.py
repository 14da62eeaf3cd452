"""The list of envgym environments, registered with Gymnasium at import time.

Gymnasium 1.x no longer loads entry-point plugins, so `import envgym` calls
`register_envs()` which registers every id below. `list_envs()` gives the same
list with tags and difficulty levels for tools (the CLI, the leaderboard).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

__all__ = ["EnvSpec", "ENV_SPECS", "env_id_of", "get_spec", "list_envs", "register_envs"]


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
    kwargs: dict[str, Any] = field(default_factory=dict)


ENV_SPECS: tuple[EnvSpec, ...] = (
    EnvSpec(
        id="envgym/Sokoban-v0",
        entry_point="envgym.envs.sokoban:SokobanEnv",
        description="Push every box onto a target; procedural, always-solvable levels",
        tags=("puzzle", "planning", "multi-turn", "grid"),
        oracle="envgym.envs.sokoban.oracle:SokobanOracle",
    ),
    EnvSpec(
        id="envgym/FrozenLake-v0",
        entry_point="envgym.envs.frozenlake:FrozenLakeEnv",
        description="Cross a frozen lake to the goal without falling into a hole",
        tags=("puzzle", "navigation", "multi-turn", "grid", "stochastic-option"),
        oracle="envgym.envs.frozenlake.oracle:FrozenLakeOracle",
    ),
    EnvSpec(
        id="envgym/Household-v0",
        entry_point="envgym.envs.household:HouseholdEnv",
        description="ALFWorld-style household tasks in procedural homes, no downloads",
        tags=("embodied", "planning", "multi-turn", "alfworld-like"),
        oracle="envgym.envs.household.oracle:HouseholdOracle",
    ),
    EnvSpec(
        id="envgym/Search-v0",
        entry_point="envgym.envs.search:SearchEnv",
        description="Multi-hop questions over a generated 100k-document encyclopedia (Search-R1)",
        tags=("search", "tool-use", "multi-turn", "question-answering", "search-r1-like"),
        oracle="envgym.envs.search.oracle:SearchOracle",
    ),
    EnvSpec(
        id="envgym/TicTacToe-v0",
        entry_point="envgym.envs.games.tictactoe:TicTacToeEnv",
        description="TicTacToe against a built-in opponent (perfect minimax play on hard)",
        tags=("game", "two-player", "zero-sum", "self-play", "multi-turn"),
        default_difficulty="hard",
    ),
    EnvSpec(
        id="envgym/ConnectFour-v0",
        entry_point="envgym.envs.games.connect_four:ConnectFourEnv",
        description="Connect Four against a built-in opponent (depth-limited search on hard)",
        tags=("game", "two-player", "zero-sum", "self-play", "multi-turn"),
        default_difficulty="hard",
    ),
    EnvSpec(
        id="envgym/KuhnPoker-v0",
        entry_point="envgym.envs.games.kuhn_poker:KuhnPokerEnv",
        description="Kuhn poker against a built-in opponent (Nash equilibrium on hard)",
        tags=("game", "two-player", "zero-sum", "self-play", "imperfect-information"),
        default_difficulty="hard",
    ),
    EnvSpec(
        id="envgym/SimpleNegotiation-v0",
        entry_point="envgym.envs.games.simple_negotiation:SimpleNegotiationEnv",
        description="Trade resources toward private valuations against a built-in negotiator",
        tags=("game", "two-player", "negotiation", "self-play", "imperfect-information"),
        default_difficulty="hard",
    ),
    EnvSpec(
        id="envgym/LiarsDice-v0",
        entry_point="envgym.envs.games.liars_dice:LiarsDiceEnv",
        description="Liar's Dice (2-4 players) against built-in bidders",
        tags=("game", "multi-player", "zero-sum", "self-play", "imperfect-information"),
        default_difficulty="hard",
    ),
)


def register_envs() -> None:
    """Register every envgym id with Gymnasium (idempotent)."""
    for spec in ENV_SPECS:
        if spec.id in gym.registry:
            continue
        gym.register(
            id=spec.id,
            entry_point=spec.entry_point,
            kwargs=dict(spec.kwargs),
            nondeterministic=False,
        )


def env_id_of(env_cls: type) -> str:
    """The registered id whose entry point is ``env_cls``."""
    for spec in ENV_SPECS:
        module, _, name = spec.entry_point.partition(":")
        if name == env_cls.__name__ and env_cls.__module__.startswith(module):
            return spec.id
    raise ValueError(
        f"{env_cls.__name__} is not a registered envgym env; only registered ids can run in "
        "another backend"
    )


def list_envs(tag: str | None = None) -> list[EnvSpec]:
    """Every envgym env spec, optionally only those carrying `tag`."""
    return [s for s in ENV_SPECS if tag is None or tag in s.tags]


def get_spec(env_id: str) -> EnvSpec:
    """The spec for `env_id`; a clear error with close matches if there is none."""
    for spec in ENV_SPECS:
        if spec.id == env_id:
            return spec
    known = [s.id for s in ENV_SPECS]
    close = difflib.get_close_matches(env_id, known, n=3, cutoff=0.4)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise KeyError(f"no envgym environment {env_id!r}.{hint} Run `envgym list` to see all ids.")
