"""The PythonMath oracle: answers with the generator's exact answer or the data set's gold."""

from __future__ import annotations

from typing import Any


class PythonMathOracle:
    """Reads the problem the env drew (as the Sokoban oracle reads the board) and
    boxes its answer (a loaded problem's gold LaTeX answer as the data set gives
    it), so it scores 1 on every problem: the env's ceiling."""

    def __init__(self, env: Any) -> None:
        self.env = getattr(env, "unwrapped", env)

    def reset(self) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return f"\\boxed{{{self.env.problem.answer}}}"
