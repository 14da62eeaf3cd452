"""envgym: Gymnasium-compatible text and tool environments for LLM agents.

Importing envgym registers every ``envgym/*`` id with Gymnasium::

    import gymnasium as gym
    import envgym

    env = gym.make("envgym/Sokoban-v0", difficulty="hard")
"""

from envgym.core import TextEnv, Turn
from envgym.registry import EnvSpec, get_spec, list_envs, register_envs
from envgym.vector import make_vec

__version__ = "0.1.0"
__all__ = [
    "EnvSpec",
    "TextEnv",
    "Turn",
    "__version__",
    "get_spec",
    "list_envs",
    "make_vec",
    "register_envs",
]

register_envs()
