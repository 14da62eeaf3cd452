"""envgym/Code-v0: write a Python function or a stdin/stdout program, test it in
a sandbox, submit it."""

from envgym.envs.code.code import CodeEnv
from envgym.envs.code.problems import IOCase, Problem

__all__ = ["CodeEnv", "IOCase", "Problem"]
