"""The Code oracle: submits the current problem's reference solution."""

from __future__ import annotations

from typing import Any


class CodeOracle:
    """Submits the reference solution of the env's current problem (read from
    the env it was given), so it scores 1 on every problem whose reference
    passes its own tests."""

    def __init__(self, env: Any) -> None:
        self.env = getattr(env, "unwrapped", env)

    def reset(self) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        code = self.env.problem.reference_code
        return f"<answer>\n```python\n{code.rstrip()}\n```\n</answer>"
