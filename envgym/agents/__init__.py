"""Agents: anything with ``act(observation, info) -> str`` and ``reset()``.

Shipped here: ``random`` (a legal move at random where the env lists them),
``oracle`` (each env's own solver or planner, named in its registry spec) and
``nosearch`` (the search env's no-retrieval baseline: it answers at once).
"""

from __future__ import annotations

import importlib
import string
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from envgym.registry import get_spec

__all__ = ["AGENT_NAMES", "Agent", "RandomAgent", "make_agent"]

AGENT_NAMES = ("random", "oracle", "nosearch")


@runtime_checkable
class Agent(Protocol):
    """The interface every agent implements."""

    name: str

    def reset(self) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> str: ...


class RandomAgent:
    """Picks a uniformly random admissible action, wrapped in answer tags.

    Where an env lists no admissible actions it replies with random printable
    text, which exercises the env's invalid-action path.
    """

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def reset(self) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        actions = info.get("admissible_actions")
        if actions:
            return f"<answer>{actions[int(self._rng.integers(len(actions)))]}</answer>"
        length = int(self._rng.integers(1, 40))
        chars = self._rng.choice(list(string.printable), size=length)
        return "".join(chars)


def make_agent(name: str, env: gym.Env, seed: int | None = None) -> Agent:
    """Build the agent called `name` for `env` (made with `gym.make`).

    The oracle gets the env only to read its configuration (e.g. how many
    moves a turn may hold); it plans from the observations it is given.
    """
    if name == "random":
        return RandomAgent(seed)
    if name == "oracle":
        env_id = env.spec.id if env.spec is not None else None
        if env_id is None:
            raise ValueError("the oracle agent needs an env made with gym.make('envgym/...')")
        spec = get_spec(env_id)
        if spec.oracle is None:
            raise ValueError(f"{env_id} has no oracle agent; use --agent random")
        module_name, class_name = spec.oracle.split(":")
        oracle_cls = getattr(importlib.import_module(module_name), class_name)
        return oracle_cls(env.unwrapped)
    if name == "nosearch":
        env_id = env.spec.id if env.spec is not None else None
        if env_id != "envgym/Search-v0":
            raise ValueError(
                "the nosearch agent is envgym/Search-v0's no-retrieval baseline; "
                f"for {env_id or 'this env'} use random or oracle"
            )
        from envgym.envs.search.oracle import NoSearchAgent

        return NoSearchAgent(env.unwrapped)
    raise ValueError(f"unknown agent {name!r}; choose one of {list(AGENT_NAMES)}")
