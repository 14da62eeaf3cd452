"""FrozenLake: cross generated ice maps to the goal (``envgym/FrozenLake-v0``)."""

from envgym.envs.frozenlake.frozenlake import FrozenLakeEnv, LakePreset

__all__ = ["FrozenLakeEnv", "LakePreset"]
