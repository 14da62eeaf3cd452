"""envgym/Code-v0: write a Python function, test it in a sandbox, submit it."""

from envgym.envs.code.code import CodeEnv
from envgym.envs.code.problems import Problem

__all__ = ["CodeEnv", "Problem"]
