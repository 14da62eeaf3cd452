"""envgym/ReasoningGym-v0: reasoning-gym's procedural generators, scored by their own scorers."""

from envgym.envs.reasoning_gym.env import ReasoningGymEnv

__all__ = ["ReasoningGymEnv"]
