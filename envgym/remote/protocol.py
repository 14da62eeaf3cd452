"""The wire format between an envgym env server and its clients.

It is OpenEnv's WebSocket session protocol (one connection = one env
instance), so OpenEnv's ``GenericEnvClient`` and the frameworks built on it
drive envgym envs unchanged. Client to server, one JSON object per text frame::

    {"type": "reset", "data": {"seed": 3, "options": {...}, "episode_id": "..."}}
    {"type": "step",  "data": {"action": "<answer>Up</answer>"}}
    {"type": "state"}
    {"type": "close"}

and envgym's own extension, which OpenEnv clients never send (fork anywhere)::

    {"type": "snapshot"}
    {"type": "restore", "data": {"handle": "<handle>"}}
    {"type": "fork",    "data": {"handle": "<handle>", "n": 2}}   # no handle: fork the
                                                                  # session's current state
    {"type": "release", "data": {"handle": "<handle>"}}           # drop it before its TTL

Server to client::

    {"type": "observation", "data": {"observation": {"text": "...", "info": {...}},
                                     "reward": 0.0, "done": false,
                                     "metadata": {"terminated": false, "truncated": false,
                                                  "episode_id": "...", "turn": 0}}}
    {"type": "state", "data": {"episode_id": "...", "step_count": 2, ...}}
    {"type": "error", "data": {"message": "...", "code": "..."}}
    {"type": "snapshot", "data": {"handle": "...", "turn": 3, "expires_in_s": 600.0}}
    {"type": "fork", "data": {"sessions": ["<token>", ...], "expires_in_s": 600.0}}
    {"type": "release", "data": {"released": true}}

``restore`` is answered with a ``state`` frame. A snapshot handle is an
unguessable token naming a state the server keeps (`envgym.remote.snapshots`);
no state, and no privileged data, leaves the server with it. It restores in any
session of the server that took it, until its time to live runs out or the
session that took it closes. A fork token is attached to by opening
``/ws?fork=<token>`` once: that session is mid-episode, so its first message
may be a step. Past a bound (snapshots per session, their bytes, sessions) the
server refuses with an error that says which flag to raise.

``info`` is the env's info dict made JSON-safe (`to_jsonable`): tuples and
sets arrive as lists, numpy scalars and arrays as numbers and lists. A server
leaves ``info["privileged"]`` (gold answers, solutions, hidden cards) out
unless it was started with ``--send-privileged`` (`public_info`).

A client message may be at most `max_message_bytes` long: the longest action
the env's space holds, JSON-escaped, plus `MESSAGE_ENVELOPE_BYTES` for the
rest (reset options). A longer one closes its session with code 1009.

This module holds what both ends need (codes, limits, spaces as JSON) and
imports nothing beyond the standard library, gymnasium and numpy, so a client
needs no web framework; the server's pydantic models of these messages are in
`envgym.remote.messages`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = [
    "CLOSE_CALL_TIMEOUT",
    "CLOSE_IDLE",
    "CLOSE_MESSAGE_TOO_BIG",
    "CLOSE_NORMAL",
    "CLOSE_SERVER_ERROR",
    "CLOSE_TRY_AGAIN_LATER",
    "CLOSE_UNKNOWN_FORK",
    "ErrorCode",
    "MESSAGE_ENVELOPE_BYTES",
    "PRIVILEGED_KEY",
    "PROTOCOL_VERSION",
    "max_message_bytes",
    "public_info",
    "text_space_from_json",
    "text_space_to_json",
    "to_jsonable",
]

#: Bumped when a message changes shape; served in ``GET /schema``.
PROTOCOL_VERSION = 1

# WebSocket close codes the server uses (RFC 6455 section 7.4; 4000-4999 are
# the application's own).
CLOSE_NORMAL = 1000
#: a client message over `max_message_bytes` (sent by the WebSocket layer).
CLOSE_MESSAGE_TOO_BIG = 1009
CLOSE_SERVER_ERROR = 1011
CLOSE_TRY_AGAIN_LATER = 1013
CLOSE_IDLE = 4408
#: an env call ran past the server's --call-timeout.
CLOSE_CALL_TIMEOUT = 4504
#: ``/ws?fork=TOKEN`` with a token that is unknown, expired or already used.
CLOSE_UNKNOWN_FORK = 4404

#: The info key that holds trainer-only data; servers leave it out by default.
PRIVILEGED_KEY = "privileged"
#: Room in a client message for everything but the action: the JSON around it,
#: a seed, an episode id and reset options.
MESSAGE_ENVELOPE_BYTES = 64 * 1024
#: The longest JSON escape of one character in the BMP (``\u00e9``); clients
#: such as ``json.dumps`` write every non-ASCII character that way.
_MAX_ESCAPED_CHAR_BYTES = 6


class ErrorCode:
    """The ``code`` of an error frame. The first seven are OpenEnv's own codes."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"
    #: step before the first reset, or after the episode ended.
    RESET_NEEDED = "RESET_NEEDED"
    #: the session sat idle past the server's --idle-timeout and was closed.
    IDLE_TIMEOUT = "IDLE_TIMEOUT"
    #: an env call ran past the server's --call-timeout; the session was closed.
    CALL_TIMEOUT = "CALL_TIMEOUT"
    #: a snapshot handle the server does not hold (unknown, expired, or its session closed).
    UNKNOWN_SNAPSHOT = "UNKNOWN_SNAPSHOT"
    #: a snapshot past the server's --max-snapshots or --max-snapshot-bytes.
    SNAPSHOT_LIMIT = "SNAPSHOT_LIMIT"
    #: ``/ws?fork=TOKEN`` with a token that is unknown, expired or already used.
    UNKNOWN_FORK = "UNKNOWN_FORK"


def to_jsonable(value: Any) -> Any:
    """`value` as plain JSON types: dicts with str keys, lists, str, int, float, bool, None.

    Tuples and sets become lists (sets sorted where their items sort), numpy
    scalars and arrays become numbers and lists, and anything else becomes its
    ``str()``, so one odd info value never costs the whole step.
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [to_jsonable(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def public_info(info: Mapping[str, Any]) -> Mapping[str, Any]:
    """`info` without ``info["privileged"]``; every other key stays (a copy only when needed)."""
    if PRIVILEGED_KEY not in info:
        return info
    return {key: value for key, value in info.items() if key != PRIVILEGED_KEY}


def max_message_bytes(action_space: spaces.Text) -> int:
    """The largest client message a server for `action_space` takes, in bytes.

    A step carrying the longest action the space holds, each character at its
    longest JSON escape, fits with `MESSAGE_ENVELOPE_BYTES` to spare.
    """
    return _MAX_ESCAPED_CHAR_BYTES * action_space.max_length + MESSAGE_ENVELOPE_BYTES


def text_space_to_json(space: spaces.Space) -> dict[str, Any]:
    """A `gymnasium.spaces.Text` as JSON, keeping the charset's order (sampling uses it)."""
    if not isinstance(space, spaces.Text):
        raise TypeError(f"expected a gymnasium.spaces.Text space, got {space}")
    return {
        "type": "Text",
        "min_length": space.min_length,
        "max_length": space.max_length,
        "charset": "".join(space.character_list),
    }


def text_space_from_json(data: Mapping[str, Any]) -> spaces.Text:
    """The inverse of `text_space_to_json`."""
    if data.get("type") != "Text":
        raise ValueError(f"expected a Text space description, got {dict(data)!r}")
    return spaces.Text(
        max_length=int(data["max_length"]),
        min_length=int(data["min_length"]),
        charset=str(data["charset"]),
    )
