"""envgym: Gymnasium-compatible text and tool environments for LLM agents.

Importing envgym registers every ``envgym/*`` id with Gymnasium::

    import gymnasium as gym
    import envgym

    env = gym.make("envgym/Sokoban-v0", difficulty="hard")
"""

from envgym.core import Preset, TextEnv, Turn
from envgym.multiagent import MultiAgentTextEnv
from envgym.registry import EnvSpec, get_spec, list_envs, make_text_env, register_envs
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
    "register_envs",
]

register_envs()
