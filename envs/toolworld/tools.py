"""A tool world's tools: typed functions over the store, as OpenAI function schemas.

A `Tool` is a name, a description, JSON-Schema parameters and a Python
function ``func(store, **arguments)`` that returns plain data (a dict, a list,
text) or raises `ToolError` with a message the agent can act on ("order
#W123 is delivered and cannot be cancelled"). `call_tool` checks the arguments
against the schema first (jsonschema), so a function only ever sees arguments
of the declared types, and turns anything it returns into bounded JSON text.

Each tool also says what it means for the policy: ``writes`` (it changes the
store, so it needs the user's confirmation first), ``account`` (whose account
a call touches, so the env can refuse to count a call made before that user was
authenticated) and ``authenticates`` (its result is the user id the caller has
proven to be).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from envgym.text import to_ascii

__all__ = ["Tool", "ToolError", "call_tool", "tool_schemas", "TOOL_RESULT_LIMIT"]

#: The most characters of a tool's result the agent sees (the rest is cut with a note).
TOOL_RESULT_LIMIT = 6_000
#: The most characters of an argument-check message (it quotes the agent's value).
MESSAGE_QUOTE_LIMIT = 200


class ToolError(Exception):
    """A tool call that cannot be done; its message goes back to the agent."""


@dataclass(frozen=True)
class Tool:
    """One function the agent may call.

    Args:
        name: the function name the agent calls.
        description: what it does, for the model (one or two sentences).
        parameters: JSON Schema ``properties`` of its arguments.
        func: ``func(store, **arguments) -> data``; raises `ToolError` to refuse.
        required: the arguments that must be given (default: all of them).
        writes: it changes the store (the policy asks for confirmation first).
        account: ``account(store, arguments) -> user id | None``: whose account the
            call reads or changes (None: no account, e.g. a flight search).
        authenticates: its result is a user id that the caller has proven to be.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    func: Callable[..., Any]
    required: Sequence[str] | None = None
    writes: bool = False
    account: Callable[[Any, Mapping[str, Any]], str | None] | None = None
    authenticates: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def required_names(self) -> list[str]:
        return list(self.parameters if self.required is None else self.required)

    @cached_property
    def json_schema(self) -> dict[str, Any]:
        """The arguments' JSON Schema (no arguments beyond the declared ones)."""
        return {
            "type": "object",
            "properties": dict(self.parameters),
            "required": self.required_names,
            "additionalProperties": False,
        }

    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema of this tool (``info["tools"]``)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.json_schema,
            },
        }

    @cached_property
    def _validator(self) -> Any:
        import jsonschema

        return jsonschema.Draft202012Validator(self.json_schema)

    def check(self, arguments: Mapping[str, Any]) -> str | None:
        """What is wrong with `arguments` for this tool, or None."""
        errors = sorted(self._validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
        if not errors:
            return None
        error = errors[0]
        # The message quotes the agent's value: keep it ASCII and short.
        message = to_ascii(error.message)
        if len(message) > MESSAGE_QUOTE_LIMIT:
            message = message[:MESSAGE_QUOTE_LIMIT] + "..."
        where = to_ascii(".".join(str(p) for p in error.path))[:MESSAGE_QUOTE_LIMIT]
        if error.validator == "additionalProperties":
            allowed = ", ".join(self.parameters) or "none"
            return f"{message}; {self.name} takes: {allowed}."
        if error.validator == "required":
            return f"{message}; {self.name} needs: {', '.join(self.required_names)}."
        prefix = f"argument {where!r}: " if where else ""
        return f"{prefix}{message}."


def tool_schemas(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The OpenAI function schemas of `tools`."""
    return [tool.schema() for tool in tools]


def call_tool(tool: Tool, store: Any, arguments: Mapping[str, Any]) -> tuple[bool, Any, str]:
    """Check `arguments`, run the tool, and return (ok, data, text for the agent).

    Never raises for what the agent sent: bad arguments and `ToolError` come back
    as ``(False, None, "Error: ...")``.
    """
    problem = tool.check(arguments)
    if problem is not None:
        return False, None, f"Error: {tool.name}: {problem}"
    try:
        data = tool.func(store, **arguments)
    except ToolError as exc:
        return False, None, f"Error: {to_ascii(str(exc))}"
    text = data if isinstance(data, str) else json.dumps(data, sort_keys=True, default=str)
    text = to_ascii(text)
    if len(text) > TOOL_RESULT_LIMIT:
        text = text[:TOOL_RESULT_LIMIT] + f" ... [cut at {TOOL_RESULT_LIMIT} characters]"
    return True, data, text
