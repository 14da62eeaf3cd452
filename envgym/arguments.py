"""Bounds on what a caller may ask of an env, and the errors that name them.

Every size, count, weight and task-id part an env accepts is checked with
`check_int` / `check_number` (or declared with `setting` in a difficulty
preset), so nothing a caller or a remote client sends can ask for unbounded
work, and a bad value is a ValueError that says what is allowed.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import re
import reprlib
from collections.abc import Iterator
from dataclasses import field
from typing import Any

__all__ = [
    "MAX_EPISODE_LENGTH",
    "MAX_TASK_SEED",
    "check_int",
    "check_number",
    "check_render_mode",
    "check_setting",
    "match_task_id",
    "setting",
    "short_repr",
    "task_id_parts",
]

#: The largest seed a task id may carry (task ids name a level by its own seed).
MAX_TASK_SEED = 2**63 - 1
#: The most turns (single-agent envs) or moves (games) one episode may be given.
MAX_EPISODE_LENGTH = 100_000

_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = 80


def short_repr(value: Any, limit: int = 100) -> str:
    """``repr(value)`` cut to at most `limit` characters, for error messages that
    echo what a caller sent (a megabyte task id comes back as its first words)."""
    text = _SHORT_REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_int(value: Any, name: str, low: int, high: int, meaning: str = "") -> int:
    """`value` as an int when it is a whole number (not a bool) from `low` to
    `high`; else a ValueError that names the allowed range."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok or not low <= value <= high:
        what = f" ({meaning})" if meaning else ""
        raise ValueError(
            f"{name} must be an integer from {low} to {high}{what}, got {short_repr(value)}"
        )
    return int(value)


def check_number(value: Any, name: str, low: float, high: float, meaning: str = "") -> float:
    """`value` as a float when it is a finite number (not a bool) from `low` to
    `high`; else a ValueError that names the allowed range."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not low <= value <= high:
        what = f" ({meaning})" if meaning else ""
        raise ValueError(
            f"{name} must be a number from {low:g} to {high:g}{what}, got {short_repr(value)}"
        )
    return float(value)


def check_render_mode(env: Any, render_mode: Any) -> str | None:
    """`render_mode` when it is None or one of ``env.metadata["render_modes"]``;
    else a ValueError that names the modes `env`'s class supports."""
    modes = env.metadata["render_modes"]
    if render_mode is not None and render_mode not in modes:
        raise ValueError(
            f"render_mode={render_mode!r} is not supported by {type(env).__name__}; "
            f"use one of {modes} or None"
        )
    return render_mode


def setting(default: Any, low: float | None = None, high: float | None = None, meaning: str = ""):
    """A field of a difficulty preset (a frozen dataclass) that a constructor
    argument may override, with the range a caller's value must lie in.

    Integer bounds make it an integer setting (`check_int`), float bounds a
    number (`check_number`); without bounds the env checks the value itself.
    """
    bounds = None if low is None or high is None else (low, high, meaning)
    return field(default=default, metadata={"bounds": bounds})


def check_setting(preset_field: Any, value: Any) -> Any:
    """`value` checked against the bounds a `setting` declared (if any)."""
    bounds = preset_field.metadata.get("bounds")
    if bounds is None:
        return value
    low, high, meaning = bounds
    if isinstance(low, int) and isinstance(high, int):
        return check_int(value, preset_field.name, low, high, meaning)
    return check_number(value, preset_field.name, low, high, meaning)


def match_task_id(task_id: Any, pattern: re.Pattern[str], what: str, example: str) -> re.Match[str]:
    """`pattern`'s match of `task_id`; else a ValueError that says `task_id` is
    not `what` (e.g. "a Sokoban task id") and shows an `example` of one."""
    match = pattern.match(task_id) if isinstance(task_id, str) else None
    if match is None:
        raise ValueError(
            f"task_id {short_repr(task_id)} is not {what}; use an id from info['task_id'], "
            + example
        )
    return match


@contextlib.contextmanager
def task_id_parts(task_id: Any, refusal: str) -> Iterator[None]:
    """Check a task id's parts inside: a ValueError there becomes one that
    names the whole task id, says why (`refusal`, e.g. "names no level this env
    makes") and where good ids come from."""
    try:
        yield
    except ValueError as exc:
        raise ValueError(
            f"task_id {short_repr(task_id)} {refusal}: {exc}; use an id from info['task_id']"
        ) from None
