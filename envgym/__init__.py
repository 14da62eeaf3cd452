"""envgym: Gymnasium-compatible text and tool environments for LLM agents.

Importing envgym registers every ``envgym/*`` id with Gymnasium, and the ids of
every installed env plugin (the ``envgym.envs`` entry-point group)::

    import gymnasium as gym
    import envgym

    env = gym.make("envgym/Sokoban-v0", difficulty="hard")

`register` adds an env spec from anywhere; `list_envs` and `get_spec` read the
one registry every envgym tool reads.
"""

from envgym.core import Preset, TextEnv, Turn
from envgym.multiagent import MultiAgentTextEnv
from envgym.registry import (
    EnvSpec,
    get_spec,
    list_envs,
    make_text_env,
    register,
    register_envs,
    unregister,
)
from envgym.vector import make_vec
from envgym.version import __version__

__all__ = [
    "EnvSpec",
    "MultiAgentTextEnv",
    "Preset",
    "TextEnv",
    "Turn",
    "__version__",
    "get_spec",
    "list_envs",
    "make_text_env",
    "make_vec",
    "register",
    "register_envs",
    "unregister",
]

register_envs()
