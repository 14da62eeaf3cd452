"""The tool-world oracle: plays each task's gold dialogue.

It reads the task from the env it was given (the user's hidden goal: this is
the ceiling, not a fair agent) and says what a careful agent says: it asks for
the facts the opening left out, authenticates and looks up, refuses a request
the policy forbids, asks the user to confirm each write in words that name it,
makes the write, and closes by telling the user every value the task needs.
Every step goes through the env like any agent's reply.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from envgym.envs.toolworld.task import Action, Task

__all__ = ["ToolWorldOracle", "gold_dialogue"]


def _call(action: Action) -> str:
    return "<tool_call>" + json.dumps(action.as_dict()) + "</tool_call>"


def gold_dialogue(task: Task) -> Iterator[str]:
    """The oracle's replies for `task`, in order."""
    wanted = [f.name.replace("_", " ") for f in task.facts if f.name not in task.stated]
    if wanted:
        yield f"I can help with that. Could you please tell me your {' and '.join(wanted)}?"
    for lookup in task.lookups:
        yield _call(lookup)
    if task.forbidden is not None:
        yield (
            f"I'm sorry, I cannot {task.forbidden.summary}: {task.forbidden_reason} "
            "I can help with the rest of your request."
        )
    if task.change_of_mind:
        yield f"Just to confirm: you want {' and '.join(task.change_of_mind)}. Shall I proceed?"
    for action in task.actions:
        yield f"I will {action.summary}. Shall I proceed? (yes/no)"
        yield _call(action)
    if task.transfer:
        yield _call(Action("transfer_to_human", {"summary": task.request}))
    yield task.inform or "All done. Is there anything else I can help you with?"


class ToolWorldOracle:
    """Plays `gold_dialogue` of the env's current task."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self._replies: Iterator[str] | None = None
        self._task_id: str | None = None

    def reset(self) -> None:
        self._replies = None

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self._replies is None or info.get("task_id") != self._task_id:
            self._task_id = info.get("task_id")
            self._replies = gold_dialogue(self.env.unwrapped.task)
        return next(self._replies, "Is there anything else I can help you with?")
