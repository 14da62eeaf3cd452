"""What a tool-world task is: the user's hidden goal and the gold dialogue.

A domain's task generator returns a `Task`. The simulated user plays its side
of it (`user.py`); the env grades against it; the oracle plays the gold
dialogue from it (`oracle.py`). Nothing in a task is shown to the agent except
what the user says.

What a generator must keep true, so the gold dialogue works (the domain tests
play it on hundreds of seeds):

- each `Action.summary` names all of that action's `mentions`, and no gold
  action's summary names all of `Task.change_of_mind`;
- the forbidden action's summary names all of its mentions;
- the domain's ``askable`` words for a fact include its name with spaces for
  underscores (the oracle asks for ``zip_code`` as "zip code");
- `Task.inform` states every one of `Task.outputs`, with at most three
  amounts in it (more is read as a hedge).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Action", "Fact", "Task", "canonical_call", "mentions_all", "normalize"]


@dataclass(frozen=True)
class Fact:
    """Something the user knows and tells when asked.

    Args:
        name: the fact's name in the domain's vocabulary (``"email"``).
        value: the fact itself (``"ana.lopez@example.com"``).
        said: how the user says it (``"My email is ana.lopez@example.com."``).
    """

    name: str
    value: str
    said: str


@dataclass(frozen=True)
class Action:
    """One tool call of the gold dialogue.

    Args:
        tool: the tool's name.
        arguments: its arguments.
        summary: the call in plain words, as an agent would put it to the user
            when it asks for confirmation ("cancel order #W123 because it was
            ordered by mistake").
        mentions: what a confirmation request must name for the user to
            recognise this action (ids, item names); compared case-insensitively,
            ignoring ``#``, ``$`` and thousands separators.
    """

    tool: str
    arguments: Mapping[str, Any]
    summary: str = ""
    mentions: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.tool, "arguments": dict(self.arguments)}


@dataclass(frozen=True)
class Task:
    """A user's hidden goal, and the gold dialogue that reaches it.

    Args:
        task_id: the task's id within the env.
        user_id: the account holder the user is.
        opening: the user's first message (with whatever facts it states).
        request: the request in other words, said again when the user is not
            understood.
        facts: what the user can tell when asked (name, value, phrasing).
        stated: names of the facts the opening already states.
        lookups: the read calls of the gold dialogue (authentication first), in order.
        actions: the gold write calls, in order; applied to the task's initial
            store they give the goal store.
        outputs: values the agent must tell the user (amounts, counts), checked
            in the agent's messages.
        inform: the gold dialogue's closing message (it states every output).
        change_of_mind: mentions of the user's first choice; when the agent asks
            to confirm it, the user changes their mind (`change_message`).
        change_message: what the user says then (it names the new choice).
        forbidden: a write the user asks for that the policy forbids; the user
            would confirm it, so only the agent's refusal keeps it out.
        forbidden_reason: the policy's reason, for the gold dialogue's refusal.
        transfer: the policy requires a transfer to a human agent.
        difficulty: the level the task was built for.
    """

    task_id: str
    user_id: str
    opening: str
    request: str
    facts: tuple[Fact, ...]
    stated: tuple[str, ...]
    lookups: tuple[Action, ...]
    actions: tuple[Action, ...]
    outputs: tuple[str, ...] = ()
    inform: str = ""
    change_of_mind: tuple[str, ...] = ()
    change_message: str = ""
    forbidden: Action | None = None
    forbidden_reason: str = ""
    transfer: bool = False
    difficulty: str = "easy"
    notes: Mapping[str, Any] = field(default_factory=dict)

    def fact(self, name: str) -> Fact | None:
        for fact in self.facts:
            if fact.name == name:
                return fact
        return None

    def privileged(self) -> dict[str, Any]:
        """What a trainer may see of the task (never the agent)."""
        return {
            "user_id": self.user_id,
            "gold_actions": [action.as_dict() for action in self.actions],
            "gold_lookups": [action.as_dict() for action in self.lookups],
            "outputs": list(self.outputs),
            "facts": {fact.name: fact.value for fact in self.facts},
            # {} rather than None: a vector env merges infos key by key, and a key
            # that is a dict in one env and None in another breaks Gymnasium's merge.
            "forbidden_action": {} if self.forbidden is None else self.forbidden.as_dict(),
            "transfer": self.transfer,
        }


def canonical_call(name: str, arguments: Mapping[str, Any]) -> str:
    """A call as text that is equal for equal calls (lists of names in any order)."""
    return json.dumps([name, _canonical(dict(arguments))], sort_keys=True, default=str)


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        items = [_canonical(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    if isinstance(value, float) and value.is_integer():
        return int(value)  # 2.0 and 2 name the same call
    return value


_DROP = str.maketrans("", "", "#$,")


def normalize(text: str) -> str:
    """Text as the user and the output check compare it: lower case, no ``#``,
    ``$`` or thousands separators, runs of spaces as one."""
    return " ".join(text.lower().translate(_DROP).split())


def mentions_all(text: str, mentions: Sequence[str]) -> bool:
    """`text` (already normalized) names every one of `mentions`."""
    return bool(mentions) and all(normalize(m) in text for m in mentions)
