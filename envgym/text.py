"""Text helpers shared by the env base classes and the action parsers: the
charset, turning any action into text, quoting it back, and rendering."""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Callable
from typing import Any

import gymnasium as gym

__all__ = [
    "ACTION_MAX_LENGTH",
    "CHARSET",
    "OBSERVATION_MAX_LENGTH",
    "coerce_action",
    "quote_for_feedback",
    "render_text",
    "reply_too_long",
    "to_ascii",
]

#: Every character an envgym observation may contain, and every character the
#: action space samples. Envs accept any text as an action; what they echo back
#: is escaped into this set by `quote_for_feedback`.
CHARSET = string.printable
_CHARSET_SET = frozenset(CHARSET)


def coerce_action(action: Any) -> str:
    """Turn whatever a caller passed as an action into text, never raising.

    A model's reply is normally a `str`; bytes are decoded leniently and any
    other object is formatted, so a buggy caller gets feedback, not a crash.
    """
    if isinstance(action, str):
        return action
    if isinstance(action, bytes | bytearray):
        return bytes(action).decode("utf-8", errors="replace")
    if action is None:
        return ""
    try:
        return str(action)
    except Exception:  # a broken __str__ is still only a malformed action
        return f"<unprintable {type(action).__name__}>"


def quote_for_feedback(text: str, limit: int = 60) -> str:
    """Quote model text for echoing in an observation: shortened and ASCII-safe."""
    if len(text) > limit:
        text = text[:limit] + "..."
    if not all(c in _CHARSET_SET for c in text) or "\n" in text:
        text = text.encode("ascii", errors="backslashreplace").decode("ascii")
        text = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        text = "".join(c if c in _CHARSET_SET else "?" for c in text)
    return repr(text) if "'" not in text else '"' + text.replace('"', "'") + '"'


def to_ascii(text: str) -> str:
    """Printable ASCII for an observation: accents dropped, other characters as '?'."""
    if all(c in _CHARSET_SET for c in text):
        return text
    text = unicodedata.normalize("NFKD", text)
    return "".join(
        c if c in _CHARSET_SET else ("" if unicodedata.combining(c) else "?") for c in text
    )


#: The longest observation a Text space allows.
OBSERVATION_MAX_LENGTH = 16_384
#: The reply bound: the longest action (in characters) any envgym env reads.
#: Long enough for a long-reasoning model's reply (512 Ki characters, about
#: 128k tokens); a longer reply is not parsed at all (`reply_too_long`), and
#: every parser is linear in the reply, so one at the bound costs milliseconds.
ACTION_MAX_LENGTH = 524_288


def reply_too_long(text: str) -> str | None:
    """The feedback for a reply over `ACTION_MAX_LENGTH`, or None when it fits.
    Envs check this before any parsing: an over-long reply is read as an
    empty one."""
    if len(text) <= ACTION_MAX_LENGTH:
        return None
    return (
        f"Your reply is {len(text):,} characters long; replies longer than "
        f"{ACTION_MAX_LENGTH:,} characters are not read, so it counts as an empty reply."
    )


def render_text(render_mode: str | None, text: Callable[[], str]) -> str | None:
    """``render()`` for text envs: "ansi" returns the text, "human" prints it."""
    if render_mode is None:
        gym.logger.warn(
            "render() called without a render_mode; create the env with "
            "render_mode='ansi' or 'human' to see it as text"
        )
        return None
    out = text()
    if render_mode == "human":
        print(out)
        return None
    return out
