"""The ReasoningGym oracle: answers with the entry's own answer."""

from __future__ import annotations

from typing import Any

from envgym.envs.reasoning_gym.tasks import oracle_answer


class ReasoningGymOracle:
    """Reads the entry the env drew and sends its answer (or the example of a right
    one its metadata keeps): 1 on every generator but those of
    `tasks.NO_GOLD_ANSWER`, whose entries have none."""

    def __init__(self, env: Any) -> None:
        self.env = getattr(env, "unwrapped", env)

    def reset(self) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        answer = oracle_answer(self.env.task, self.env.item)
        return f"<answer>{answer if answer is not None else ''}</answer>"
