"""Terminal and repository tasks (issue 31): the shared task type (`task.py`),
the trusted grader (`grade.py`), the task families and RepoFix generator, and
the envs envgym/Terminal-v0 and envgym/RepoFix-v0 (`terminal.py`)."""

from envgym.envs.terminal.terminal import RepoFixEnv, ShellTaskEnv, TerminalEnv

__all__ = ["RepoFixEnv", "ShellTaskEnv", "TerminalEnv"]
