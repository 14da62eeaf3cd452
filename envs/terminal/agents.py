"""Terminal-v0's and RepoFix-v0's oracle and random agents.

The oracle reads the current task's reference solution from the env it was
given, runs it as one command and ends the episode. The random agent runs a
few commands drawn from the task's ``vocabulary`` (what a user new to the task
might type), then ends the episode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ShellOracle", "RandomShellAgent"]


class ShellOracle:
    """Runs the task's reference solution, then ``<done/>``."""

    name = "oracle"

    def __init__(self, env: Any) -> None:
        self.env = getattr(env, "unwrapped", env)

    def reset(self) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info.get("turn", 0) == 0:
            return f"<bash>{self.env.task.solution}</bash>"
        return "<done/>"


class RandomShellAgent:
    """One to three commands of the task's vocabulary, then ``<done/>``."""

    name = "random"

    def __init__(self, env: Any, seed: int | None = None) -> None:
        self.env = getattr(env, "unwrapped", env)
        self._rng = np.random.default_rng(seed)
        self._left = -1

    def reset(self) -> None:
        self._left = -1

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info.get("turn", 0) == 0 or self._left < 0:
            self._left = int(self._rng.integers(1, 4))
        if self._left == 0:
            return "<done/>"
        self._left -= 1
        vocabulary = self.env.task.vocabulary
        return f"<bash>{vocabulary[int(self._rng.integers(len(vocabulary)))]}</bash>"
