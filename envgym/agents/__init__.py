"""Agents: anything with ``act(observation, info) -> str`` and ``reset()``.

Shipped here: ``random`` (a legal move at random where the env lists them) and
``oracle`` (each env's own solver or planner, named in its registry spec). An
env may declare agents of its own on its spec (`EnvSpec.agents`, name ->
"module:Class"); ``--agent NAME`` then builds one for that env, and the names
join `agent_names()` and every help text.

LLM agents, made from a spec string by `make_agent`: ``openai:URL#MODEL``
(`OpenAIChatAgent`, any OpenAI-compatible server such as ``vllm serve``),
``hf:PATH`` (`TransformersAgent`, a local transformers model) and
``vllm:PATH`` (`VLLMAgent`, vLLM's offline engine). They are batch agents
(`is_batch_agent`): ``reset_slot(slot)``, ``act_batch(slots, observations,
infos)`` answering many episodes at once, and ``usage(slot)`` with the
episode's token counts; ``reset``/``act`` are slot 0. Their dependencies
(httpx, transformers, vllm) are imported only when one is made.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from envgym.envspec import GENERIC_AGENTS, LLM_KINDS
from envgym.registry import get_spec, list_envs, load_entry_point

__all__ = [
    "AGENT_NAMES",
    "AGENT_SPECS",
    "LLM_KINDS",
    "Agent",
    "AgentSpec",
    "BatchAgent",
    "RandomAgent",
    "agent_forms",
    "agent_names",
    "check_agent_for",
    "is_batch_agent",
    "make_agent",
    "parse_agent_spec",
]


def agent_names() -> tuple[str, ...]:
    """The agents named by a plain word: random, oracle, then each env's own (its spec's)."""
    own = dict.fromkeys(name for spec in list_envs() for name in spec.agents)
    return (*GENERIC_AGENTS, *own)


def agent_forms() -> tuple[str, ...]:
    """Every form `make_agent` accepts, for help texts and errors."""
    return (*agent_names(), "openai:URL#MODEL", "hf:PATH", "vllm:PATH")


def __getattr__(name: str) -> tuple[str, ...]:
    # AGENT_NAMES and AGENT_SPECS read the registry when asked, so envs
    # registered after this module was imported are in them.
    if name == "AGENT_NAMES":
        return agent_names()
    if name == "AGENT_SPECS":
        return agent_forms()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@runtime_checkable
class Agent(Protocol):
    """The interface every agent implements."""

    name: str

    def reset(self) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> str: ...


@runtime_checkable
class BatchAgent(Protocol):
    """An agent that answers many episodes (slots) at once: the LLM agents."""

    name: str

    def reset_slot(self, slot: int, seed: int | None = None) -> None: ...

    def act_batch(
        self, slots: list[int], observations: list[str], infos: list[dict[str, Any]]
    ) -> list[str]: ...

    def usage(self, slot: int) -> dict[str, int]: ...


def is_batch_agent(agent: Any) -> bool:
    """True when `agent` has ``reset_slot``, ``act_batch`` and ``usage`` (a `BatchAgent`)."""
    return all(
        callable(getattr(agent, name, None)) for name in ("reset_slot", "act_batch", "usage")
    )


@dataclass(frozen=True)
class AgentSpec:
    """A parsed ``--agent`` value.

    `kind` is one of `agent_names()` or ``openai``/``hf``/``vllm``; `target` the
    server URL or model path (None for the named agents); `model` the model
    name for ``openai`` (the path for ``hf``/``vllm``, None otherwise).
    """

    kind: str
    target: str | None = None
    model: str | None = None

    def record(self) -> dict[str, str]:
        """The results header's ``agent`` object: its name, and its model for LLM agents."""
        return (
            {"name": self.kind} if self.model is None else {"name": self.kind, "model": self.model}
        )


def parse_agent_spec(spec: str) -> AgentSpec:
    """Parse an agent spec (one of `agent_forms()`); ValueError saying the forms otherwise."""
    forms = ", ".join(agent_forms())
    if not isinstance(spec, str):
        raise ValueError(f"an agent spec is a string, one of {forms}; got {spec!r}")
    if spec in agent_names():
        return AgentSpec(spec)
    kind, colon, rest = spec.partition(":")
    if not colon or kind not in LLM_KINDS:
        raise ValueError(
            f"unknown agent {spec!r}; choose one of {forms} (e.g. "
            "openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B or hf:/models/qwen)"
        )
    if kind == "openai":
        url, hash_, model = rest.rpartition("#")
        if not hash_ or not model or not url.startswith(("http://", "https://")):
            raise ValueError(
                f"an openai agent is openai:URL#MODEL, e.g. "
                f"openai:http://127.0.0.1:8000/v1#Qwen/Qwen3-8B (the server's API root, then "
                f"# and the model name it serves); got {spec!r}"
            )
        return AgentSpec(kind, url, model)
    if not rest.strip():
        raise ValueError(f"a {kind} agent is {kind}:PATH (a model folder); got {spec!r}")
    return AgentSpec(kind, rest, rest)


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


def make_agent(name: str, env: gym.Env | None, seed: int | None = None, **options: Any) -> Agent:
    """Build the agent `name` names (one of `agent_forms()`) for `env` (made with `gym.make`).

    The oracle and an env's own agents (its spec's `agents`) are built with
    the unwrapped env; the oracle gets it only to read its configuration (e.g. how many
    moves a turn may hold); it plans from the observations it is given. LLM
    agents need no env; `options` go to their constructors (``temperature``,
    ``max_tokens``...), and `seed` seeds their sampling.
    """
    spec = parse_agent_spec(name)
    if spec.kind == "openai":
        from envgym.agents.openai_chat import OpenAIChatAgent

        return OpenAIChatAgent(spec.target, spec.model, seed=seed, **options)
    if spec.kind == "hf":
        from envgym.agents.transformers_agent import TransformersAgent

        return TransformersAgent(spec.target, seed=seed, **options)
    if spec.kind == "vllm":
        from envgym.agents.vllm_agent import VLLMAgent

        return VLLMAgent(spec.target, seed=seed, **options)
    if options:
        raise ValueError(f"the {name} agent takes no options, got {sorted(options)}")
    if name == "random":
        own = _own_random(env)
        return RandomAgent(seed) if own is None else load_entry_point(own)(env.unwrapped, seed)
    if env is None:
        raise ValueError(f"the {name} agent needs the env it plays")
    env_id = env.spec.id if env.spec is not None else None
    if name == "oracle" and env_id is None:
        raise ValueError("the oracle agent needs an env made with gym.make('envgym/...')")
    check_agent_for(name, env_id)
    env_spec = get_spec(env_id)
    target = env_spec.oracle if name == "oracle" else env_spec.agents[name]
    return load_entry_point(target)(env.unwrapped)


def _own_random(env: gym.Env | None) -> str | None:
    """The entry point of `env`'s own random agent (its spec's ``random_agent``,
    e.g. random queries of SQL-v0's grammar), or None for the generic one."""
    spec = getattr(env, "spec", None) if env is not None else None
    if spec is None:
        return None
    try:
        return get_spec(spec.id).random_agent
    except KeyError:  # an id envgym did not register
        return None


def check_agent_for(name: str, env_id: str | None) -> None:
    """ValueError when the plain-word agent `name` cannot play `env_id`: the
    oracle of an env without one, or another env's own agent. LLM agents
    (``openai:...``) and random play every env."""
    if name == "random" or parse_agent_spec(name).kind in LLM_KINDS:
        return
    if name == "oracle":
        if get_spec(env_id).oracle is None:
            raise ValueError(f"{env_id} has no oracle agent; use --agent random")
        return
    env_spec = next((s for s in list_envs() if s.id == env_id), None)
    if env_spec is None or name not in env_spec.agents:
        owners = ", ".join(s.id for s in list_envs() if name in s.agents)
        raise ValueError(
            f"the {name} agent is {owners}'s own; for {env_id or 'this env'} use random or oracle"
        )
