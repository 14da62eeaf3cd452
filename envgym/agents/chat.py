"""Chat histories shared by the LLM agents: one conversation per slot.

A slot is one episode in flight. Its conversation starts with the env's
``info["system_prompt"]`` (or the agent's override) as the system message;
every observation is a user turn and every reply an assistant turn. The tools
an env offers (``info["tools"]``, OpenAI function schemas) are kept with the
slot, from the latest info that carried them. `ChatSlots` also holds each
slot's token counts, so ``usage(slot)`` reads the same for every agent.

`SlotChatAgent` is the base of the OpenAI, transformers and vLLM agents: the
plain Agent protocol on slot 0 and the batch protocol's bookkeeping.
`tool_call_text` writes an OpenAI tool call the way envgym envs read one
(`envgym.parsing.parse_tool_calls`): ``<tool_call>{"name": ..., "arguments":
{...}}</tool_call>``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChatSlot", "ChatSlots", "SlotChatAgent", "tool_call_text"]


def tool_call_text(name: str, arguments: Any) -> str:
    """One Hermes/Qwen tool-call block for a call to `name` with `arguments`.

    `arguments` is the JSON text an OpenAI server returns (decoded here) or a
    dict. Text that is not a JSON object is passed on as a string, so the env
    answers it with its own feedback on malformed arguments.
    """
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            decoded = arguments
        arguments = decoded
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


@dataclass
class ChatSlot:
    """One episode's conversation and the tokens it has cost so far."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: tool-call ids of the last assistant message, answered by the next observation
    pending_tool_calls: list[str] = field(default_factory=list)
    #: the system message's text, fixed by the episode's first observation
    system: str | None = None
    #: this episode's own sampling seed (a trial of a seed), instead of the agent's
    seed: int | None = None


class ChatSlots:
    """The conversations of an agent's slots, by slot number.

    Args:
        system_prompt: used instead of ``info["system_prompt"]`` when given
            (an empty string sends no system message).
        history: send the episode's conversation so far with each
            observation; False sends the system message and the current
            observation only (for envs whose observation is the whole state,
            as a policy trained that way saw them).
    """

    def __init__(self, system_prompt: str | None = None, history: bool = True) -> None:
        self.system_prompt = system_prompt
        self.history_kept = bool(history)
        self._slots: dict[int, ChatSlot] = {}

    def reset(self, slot: int, seed: int | None = None) -> None:
        """Start a new episode in `slot`: an empty conversation, zero tokens, and
        `seed` as its own sampling seed (None: the agent's)."""
        _check_slot(slot)
        self._slots[slot] = ChatSlot(seed=seed)

    def seed(self, slot: int) -> int | None:
        """`slot`'s own sampling seed for this episode, or None (use the agent's)."""
        return self.get(slot).seed

    def get(self, slot: int) -> ChatSlot:
        """`slot`'s conversation (a fresh one if the slot was never reset)."""
        _check_slot(slot)
        return self._slots.setdefault(slot, ChatSlot())

    def prompt(self, slot: int, observation: str, info: dict[str, Any]) -> list[dict[str, Any]]:
        """The messages to send for `slot` once `observation` is added (not stored yet).

        The system message comes from the first observation's info. The
        observation is a user turn, or, after a reply made of tool calls, the
        tool results: the whole observation answers the first call (envs reply
        to all of a turn's calls in one text), the others point to it, since
        OpenAI servers want every call answered.
        """
        state = self.get(slot)
        tools = info.get("tools")
        if tools:
            state.tools = list(tools)
        messages = list(state.messages) if self.history_kept else []
        if not messages:
            if state.system is None:
                system = self.system_prompt
                if system is None:
                    system = info.get("system_prompt") or ""
                state.system = str(system)
            if state.system:
                messages.append({"role": "system", "content": state.system})
        if state.pending_tool_calls and self.history_kept:
            first, *rest = state.pending_tool_calls
            messages.append({"role": "tool", "tool_call_id": first, "content": observation})
            note = "The result of this call is in the first tool message of this turn."
            messages.extend({"role": "tool", "tool_call_id": i, "content": note} for i in rest)
        else:
            messages.append({"role": "user", "content": observation})
        return messages

    def record(
        self,
        slot: int,
        messages: list[dict[str, Any]],
        reply: dict[str, Any],
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        """Keep `messages` (from `prompt`) plus the assistant message `reply` as
        `slot`'s conversation, and add the turn's token counts."""
        state = self.get(slot)
        state.messages = [*messages, reply]
        state.pending_tool_calls = [str(call["id"]) for call in reply.get("tool_calls") or []]
        state.prompt_tokens += int(prompt_tokens)
        state.completion_tokens += int(completion_tokens)

    def tools(self, slot: int) -> list[dict[str, Any]] | None:
        """The tools `slot`'s env offers (None if it offers none)."""
        return self.get(slot).tools

    def history(self, slot: int) -> list[dict[str, Any]]:
        """A copy of `slot`'s conversation so far."""
        return copy.deepcopy(self.get(slot).messages)

    def usage(self, slot: int) -> dict[str, int]:
        """Tokens `slot`'s current episode has cost: prompt and completion."""
        state = self.get(slot)
        return {"prompt_tokens": state.prompt_tokens, "completion_tokens": state.completion_tokens}


def _check_slot(slot: int) -> None:
    if isinstance(slot, bool) or not isinstance(slot, int) or slot < 0:
        raise ValueError(f"a slot is a whole number >= 0, got {slot!r}")


class SlotChatAgent:
    """What every LLM agent shares: one `ChatSlots` conversation per slot, the plain
    Agent protocol on slot 0, and the batch protocol's bookkeeping. A subclass sets
    ``self.chats`` and writes `act_batch`, calling `check_batch` first."""

    name = "llm"
    chats: ChatSlots

    # ------------------------------------------------------------ the plain Agent protocol
    def reset(self) -> None:
        """Start a new episode in slot 0 (`act` uses slot 0)."""
        self.reset_slot(0)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        """The reply to `observation` in slot 0."""
        return self.act_batch([0], [observation], [info])[0]

    # ------------------------------------------------------------ the batch protocol
    def reset_slot(self, slot: int, seed: int | None = None) -> None:
        """Start a new episode (an empty conversation) in `slot`; `seed`, when
        given, is its sampling seed instead of the agent's (the evaluation gives
        each trial of a seed its own, so sampled trials differ)."""
        self.chats.reset(slot, seed)

    def act_batch(
        self, slots: list[int], observations: list[str], infos: list[dict[str, Any]]
    ) -> list[str]:
        raise NotImplementedError

    def usage(self, slot: int) -> dict[str, int]:
        """Tokens `slot`'s current episode has cost."""
        return self.chats.usage(slot)

    def history(self, slot: int) -> list[dict[str, Any]]:
        """A copy of `slot`'s conversation (the messages the next request extends)."""
        return self.chats.history(slot)

    @staticmethod
    def check_batch(slots: list[int], observations: list[str], infos: list[dict[str, Any]]) -> None:
        """Refuse a batch whose lists differ in length or that names a slot twice."""
        if not len(slots) == len(observations) == len(infos):
            raise ValueError(
                f"act_batch needs one observation and one info per slot; got {len(slots)} "
                f"slots, {len(observations)} observations, {len(infos)} infos"
            )
        if len(set(slots)) != len(slots):
            raise ValueError(f"each slot may appear once in a batch, got {slots}")
