"""What the code dataset loaders share: a skipped record, and reading a
record's fields with errors that name the file, the line and the field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from envgym.envs.code.problems import DIFFICULTIES, Problem, check_problem, to_printable

__all__ = [
    "PUBLIC_CASES",
    "Skip",
    "case_text",
    "json_field",
    "level_of",
    "need",
    "stdio_problem",
    "string_field",
]

#: Cases shown to the agent from a set with no public/hidden split of its own.
PUBLIC_CASES = 1


@dataclass(frozen=True)
class Skip:
    """A record left out, and why (counted in the load's report)."""

    reason: str


def need(record: dict, where: str, fmt: str, fields: tuple[str, ...]) -> None:
    missing = [f for f in fields if f not in record]
    if missing:
        have = ", ".join(sorted(map(str, record))[:20])
        raise ValueError(f"{where}: a {fmt} record needs {', '.join(missing)}; it has {have}")


def string_field(record: dict, key: str, where: str, *, empty: bool = False) -> str:
    value = record.get(key)
    if value is None and empty:
        return ""
    if not isinstance(value, str) or (not empty and not value.strip()):
        got = type(value).__name__
        raise ValueError(f"{where}: {key!r} must be a non-empty string, got a {got}")
    return value


def json_field(record: dict, key: str, where: str) -> Any:
    """A field that is JSON text in the published files (or already decoded)."""
    value = record.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"{where}: {key!r} is not valid JSON text: {exc}") from None
    return value


def level_of(value: Any, table: dict[Any, str], default: str = "medium") -> str:
    """A dataset's difficulty as one of Code-v0's levels (`DIFFICULTIES`)."""
    if isinstance(value, str):
        value = value.strip().lower()
    level = table.get(value, default)
    assert level in DIFFICULTIES
    return level


def case_text(value: Any) -> str:
    """APPS writes a case's stdin or stdout as a string or a list of lines."""
    if isinstance(value, list):
        return "\n".join(str(line) for line in value)
    if isinstance(value, str):
        return value
    raise ValueError(f"a case's input and output must be text, got a {type(value).__name__}")


def stdio_problem(
    task_id: str, prompt: str, solution: str, public, hidden, difficulty: str, split: str, **extra
) -> Problem:
    return check_problem(
        Problem(
            task_id=task_id,
            difficulty=difficulty,
            entry_point="",
            prompt=to_printable(prompt),
            solution=solution,
            tests=(),
            split=split,
            kind="stdio",
            public_io=tuple(public),
            hidden_io=tuple(hidden),
            **extra,
        )
    )
