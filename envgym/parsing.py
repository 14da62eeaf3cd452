"""Action parsing shared by every env: answer tags, tool tags, tool calls, \\boxed{}.

A model's reply is free text. Every parser here first drops ``<think>...</think>``
reasoning, never raises, and on failure returns an error message written for
the model: what was wrong and what a correct reply looks like. Every parser is
linear in the reply: tags are found with ``str.find`` moving forward, never with
a lazy regular expression that rescans the rest of the text from each opening
tag (``<think>`` a hundred thousand times over took minutes that way).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from envgym.text import quote_for_feedback

__all__ = [
    "Parsed",
    "ToolCall",
    "first_tag",
    "parse_answer",
    "whole_answer",
    "parse_boxed",
    "parse_tag",
    "parse_tool_calls",
    "GRID_MOVES",
    "split_moves",
    "strip_think",
]

_THINK_TAG = re.compile(r"think>", re.IGNORECASE)
_TAG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
# Lower-case ASCII only: str.lower() can change a string's length ("İ" becomes two
# characters), and positions found in the lowered text must index the original.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


@dataclass(frozen=True)
class Parsed:
    """The result of parsing a reply: a value, or an error the model can act on."""

    value: str | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class ToolCall:
    """One Hermes/Qwen-style tool call."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


def strip_think(text: str) -> str:
    """Remove reasoning: closed ``<think>`` blocks, text before a lone ``</think>``
    (chat templates that open the block in the prompt), and an unclosed ``<think>``
    to the end (a reply cut off mid-thought)."""
    if _THINK_TAG.search(text) is None:
        return text
    lowered = text.translate(_ASCII_LOWER)
    kept, lowered_kept = [], []
    for start, end in _pairs(lowered, "<think>", "</think>", outside=True):
        kept.append(text[start:end])
        lowered_kept.append(lowered[start:end])
    text, lowered = "".join(kept), "".join(lowered_kept)
    close = lowered.rfind("</think>")
    if close != -1:
        text = text[close + len("</think>") :]
        lowered = lowered[close + len("</think>") :]
    open_ = lowered.find("<think>")
    if open_ != -1:
        text = text[:open_]
    return text


def _pairs(lowered: str, open_tag: str, close_tag: str, *, outside: bool = False):
    """Spans of the ``open_tag...close_tag`` pairs in `lowered`, left to right,
    each open tag closed by the first close tag after it (as a lazy ``.*?``
    would), in one forward pass: ``(start, end)`` of each pair's content, or
    with `outside` of the text between pairs."""
    position = 0
    while True:
        start = lowered.find(open_tag, position)
        end = lowered.find(close_tag, start + len(open_tag)) if start != -1 else -1
        if end == -1:  # no further pair: an open tag without a close after it starts none
            if outside:
                yield position, len(lowered)
            return
        if outside:
            yield position, start
        else:
            yield start + len(open_tag), end
        position = end + len(close_tag)


def parse_tag(text: str, tag: str, *, example: str = "...") -> Parsed:
    """Content of the last complete ``<tag>...</tag>`` outside reasoning.

    With nested tags (``<answer><answer>x</answer></answer>``) the innermost
    last pair wins, so stray outer tags do not leak into the value.
    """
    if not _TAG_NAME.match(tag):
        raise ValueError(f"tag name {tag!r} is not a valid XML-style name")
    close_tag, open_tag = f"</{tag.lower()}>", f"<{tag.lower()}>"
    fast = _whole_reply_tag(text, open_tag, close_tag)
    if fast is not None:
        return Parsed(fast)
    return _parse_tag_full(text, tag, open_tag, close_tag, example)


def _parse_tag_full(text: str, tag: str, open_tag: str, close_tag: str, example: str) -> Parsed:
    """`parse_tag` for any reply (its fast path aside)."""
    body = strip_think(text)
    # Most replies spell the tag in lower case: search the text itself first.
    lowered = body if close_tag in body and open_tag in body else body.translate(_ASCII_LOWER)
    end = lowered.rfind(close_tag)
    start = lowered.rfind(open_tag, 0, end) if end != -1 else -1
    if start == -1:
        hint = f"<{tag}>{example}</{tag}>"
        if open_tag in lowered:
            return Parsed(None, f"Your <{tag}> tag is not closed. Write {hint}.")
        return Parsed(None, f"No <{tag}>...</{tag}> found in your reply. Write {hint}.")
    end = lowered.find(close_tag, start)  # the pair's own close, inside any outer pair
    return Parsed(body[start + len(open_tag) : end].strip())


def _whole_reply_tag(text: str, open_tag: str, close_tag: str) -> str | None:
    """The fast path of `parse_tag` for the commonest reply, ``<answer>5</answer>``:
    the whole reply is one lower-case pair with no ``<`` inside. Then the only
    ``<`` are the two tags', so `strip_think` finds no ``<think>`` pair (unless
    the tag is ``think``), the last close is the reply's end and the last open
    before it its start: `parse_tag` returns the content stripped, as this does.
    None when the reply has another shape (tests/test_games_fast_paths.py checks the
    two agree on a fuzz corpus)."""
    if (
        len(text) >= len(open_tag) + len(close_tag)
        and text.startswith(open_tag)
        and text.endswith(close_tag)
        and open_tag != "<think>"
    ):
        inner = text[len(open_tag) : len(text) - len(close_tag)]
        if "<" not in inner:
            return inner.strip()
    return None


def first_tag(
    text: str,
    tags: Sequence[str],
    *,
    tool_calls: bool = False,
    boxed_as: str | None = None,
    hint: str = "",
) -> tuple[str | None, str]:
    """The action a reply takes first, when it may take one of several (Search-R1
    reads a turn this way): the earliest complete ``<tag>...</tag>`` among `tags`,
    or ``<tool_call>...</tool_call>`` when `tool_calls`, outside reasoning.

    Returns ``(tag, content)``: the content stripped and its runs of whitespace
    made single spaces (for ``"tool_call"``, read the calls with
    `parse_tool_calls`). With no complete tag, a ``\\boxed{...}`` counts as the
    tag `boxed_as` when that is given, its content stripped. Otherwise
    ``(None, feedback)``: the feedback names the tag left unclosed, or says that
    no action was found, followed by `hint` (how to write a valid reply). Tag
    names match without regard to ASCII case. Raises only for a tag name that is
    not a valid XML-style name (a mistake in the caller, as in `parse_tag`).
    """
    pairs = _tag_pairs(tuple(tags), tool_calls)
    body = strip_think(text)
    lowered = body.translate(_ASCII_LOWER)
    first: tuple[int, str, int] | None = None  # (start, tag, end) of the earliest pair
    for tag, open_tag, close_tag in pairs:
        start = lowered.find(open_tag)
        if start == -1 or (first is not None and start > first[0]):
            continue
        end = lowered.find(close_tag, start)
        if end != -1:
            first = (start, tag, end + len(close_tag))
    if first is None:
        if boxed_as is not None and "\\boxed{" in body:
            boxed = parse_boxed(body)
            if boxed.ok:
                return boxed_as, boxed.value
        for tag, open_tag, _ in pairs[: len(tags)]:
            if open_tag in lowered:
                feedback = f"Your <{tag}> tag is not closed."
                break
        else:
            feedback = _nothing_found(tuple(tags), tool_calls)
        return None, f"{feedback} {hint}" if hint else feedback
    start, tag, end = first
    parsed = parse_tag(body[start:end], tag)
    return tag, " ".join((parsed.value or "").split())


@lru_cache(maxsize=64)
def _tag_pairs(tags: tuple[str, ...], tool_calls: bool) -> tuple[tuple[str, str, str], ...]:
    """(tag, its opening, its closing, both lower case) per tag, ``tool_call`` last;
    each name checked once."""
    names = (*tags, "tool_call") if tool_calls else tags
    for name in names:
        if not _TAG_NAME.match(name):
            raise ValueError(f"tag name {name!r} is not a valid XML-style name")
    return tuple((name, f"<{name.lower()}>", f"</{name.lower()}>") for name in names)


@lru_cache(maxsize=64)
def _nothing_found(tags: tuple[str, ...], tool_calls: bool) -> str:
    options = [f"<{tag}>" for tag in tags] + (["tool call"] if tool_calls else [])
    if len(options) < 2:
        listed = options[0] if options else "action"
    else:
        listed = f"{', '.join(options[:-1])} or {options[-1]}"
    return f"No {listed} found in your reply."


def parse_answer(text: str, *, example: str = "...") -> Parsed:
    """The final answer: ``<answer>...</answer>``, else the last ``\\boxed{...}``."""
    tagged = parse_tag(text, "answer", example=example)
    if tagged.ok:
        return tagged
    boxed = parse_boxed(text)
    if boxed.ok:
        return boxed
    return tagged


def whole_answer(text: str) -> str | None:
    """``parse_answer(text).value`` when the reply is exactly one lower-case
    ``<answer>...</answer>`` with no ``<`` inside (the commonest reply), without
    building a `Parsed`; None for any other reply (then call `parse_answer`).
    `_whole_reply_tag` for the answer tag, written out: it runs on every move."""
    if text.startswith("<answer>") and text.endswith("</answer>") and len(text) >= 17:
        inner = text[8:-9]
        if "<" not in inner:
            return inner.strip()
    return None


def parse_boxed(text: str) -> Parsed:
    """Content of the last ``\\boxed{...}``, with balanced inner braces."""
    body = strip_think(text)
    start = body.rfind("\\boxed{")
    if start == -1:
        return Parsed(None, "No \\boxed{...} found in your reply. Put the answer in \\boxed{...}.")
    depth, i = 0, start + len("\\boxed")
    for j in range(i, len(body)):
        ch = body[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return Parsed(body[i + 1 : j].strip())
    return Parsed(None, "Your \\boxed{ has no closing brace. Write \\boxed{answer}.")


def parse_tool_calls(text: str) -> tuple[list[ToolCall], str | None]:
    """Every ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` in order.

    Returns the calls that parsed and an error message for the first one that
    did not (or None). ``arguments`` may also be a JSON-encoded string, as some
    chat templates emit.
    """
    body = strip_think(text)
    calls: list[ToolCall] = []
    error: str | None = None
    lowered = body.translate(_ASCII_LOWER)
    for start, end in _pairs(lowered, "<tool_call>", "</tool_call>"):
        call, problem = _tool_call_from_json(body[start:end])
        if call is not None:
            calls.append(call)
        elif error is None:
            error = problem
    if not calls and error is None:
        if "<tool_call>" in lowered:
            error = "Your <tool_call> tag is not closed. End it with </tool_call>."
        else:
            error = (
                'No <tool_call>...</tool_call> found. Write <tool_call>{"name": "TOOL", '
                '"arguments": {...}}</tool_call>.'
            )
    return calls, error


def _tool_call_from_json(raw: str) -> tuple[ToolCall | None, str | None]:
    shape = 'Use {"name": "TOOL", "arguments": {...}}.'
    try:
        payload = json.loads(raw.strip())
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        return None, f"The tool call is not valid JSON ({_json_problem(exc)}). {shape}"
    if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
        return None, f'The tool call needs a string "name". {shape}'
    arguments = payload.get("arguments", payload.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return None, f'The tool call\'s "arguments" string is not JSON. {shape}'
    if not isinstance(arguments, dict):
        return None, f'The tool call\'s "arguments" must be a JSON object. {shape}'
    return ToolCall(payload["name"], arguments), None


def _json_problem(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    # json raises a plain ValueError for an integer past Python's digit limit.
    return "a number is too long"


#: Spellings of the four grid moves (lower case) -> canonical names.
GRID_MOVES = {
    **{name.lower(): name for name in ("Up", "Down", "Left", "Right")},
    **{"u": "Up", "d": "Down", "l": "Left", "r": "Right"},
}


def split_moves(answer: str, vocabulary: dict[str, str]) -> tuple[list[str], str | None]:
    """Split ``"Up || Left"`` (or commas/newlines) into canonical move names.

    `vocabulary` maps lower-case spellings to canonical names. Returns the moves
    and None, or an empty list and an error naming the first unknown move.
    """
    if "," in answer or ";" in answer or "\n" in answer:
        parts = [p.strip() for p in re.split(r"\|\||,|\n|;", answer)]
    else:  # the common case, without the regex engine
        parts = [p.strip() for p in answer.split("||")]
    parts = [p for p in parts if p]
    if not parts:
        return [], "Your answer is empty."
    moves = []
    for part in parts:
        canonical = vocabulary.get(part.lower())
        if canonical is None:
            return [], f"Unknown move {quote_for_feedback(part, limit=30)}."
        moves.append(canonical)
    return moves, None
