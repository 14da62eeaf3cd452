"""What both engines share: a query's result, the session and engine interfaces,
the query-text check, the result's text for the observation, and execution match.

Shared by both engines (``engine.py`` for SQLite, ``postgres.py`` for
PostgreSQL); import them from ``envgym.envs.sql.engine``.

How results are compared (``same_result``): rows as multisets (as lists when
the gold query orders), column names ignored, column count compared; numbers
by value (``3`` equals ``3.0``; a float rounded to 7 significant digits, i.e.
1e-6 relative; PostgreSQL's ``Decimal`` is a number too); NULL equals only
NULL; text exactly (case and spaces count); a boolean is the number 0 or 1;
a date or time (PostgreSQL) is its ISO text, as SQLite stores it.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from envgym.envs.sql.schema import Database

__all__ = [
    "MAX_SQL_CHARS",
    "Engine",
    "QueryResult",
    "Session",
    "check_query",
    "format_result",
    "same_result",
]


@dataclass
class QueryResult:
    """What one query gave.

    Attributes:
        ok: the query ran to the end (a capped result is still ``ok``).
        columns: the result's column names.
        rows: at most the row cap.
        error: a clear message for the agent (never a traceback) when not ``ok``.
        truncated: the query had more rows than the cap.
        seconds: engine time.
        rows_read: rows returned before the cap (``len(rows)``).
    """

    ok: bool
    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    error: str | None = None
    truncated: bool = False
    seconds: float = 0.0
    rows_read: int = 0

    @classmethod
    def fetched(
        cls, columns: list[str], rows: list[Any], row_cap: int, start: float
    ) -> QueryResult:
        """The result of a query that ran: `rows` fetched up to ``row_cap + 1`` (one
        more says it was cut), timed from `start` (``time.perf_counter()``)."""
        kept = [tuple(r) for r in rows[:row_cap]]
        return cls(
            ok=True,
            columns=columns,
            rows=kept,
            truncated=len(rows) > row_cap,
            seconds=time.perf_counter() - start,
            rows_read=len(kept),
        )


#: The longest query text a session runs.
MAX_SQL_CHARS = 20_000

READ_ONLY_MESSAGE = (
    "only read-only queries run here (SELECT, WITH ... SELECT, VALUES): "
    "writes, schema changes, ATTACH, PRAGMA, transactions and file or extension "
    "functions are refused"
)
_LEADING = re.compile(r"\s+|--[^\n]*(\n|$)|/\*.*?(\*/|$)|\(", re.S)
_FIRST_WORD = re.compile(r"[A-Za-z]+")
_READ_WORDS = {"select", "with", "values"}


def check_query(sql: object) -> str | None:
    """Why the query text cannot run (not a string, empty, too long, or not a
    read-only statement by its first word), or None when it may run."""
    if not isinstance(sql, str):
        return f"the query must be text, not {type(sql).__name__}"
    if len(sql) > MAX_SQL_CHARS:
        return (
            f"the query is {len(sql):,} characters; at most {MAX_SQL_CHARS:,} run: "
            "send a shorter query"
        )
    if "\x00" in sql:
        return "the query contains a NUL character; remove it"
    pos = 0
    while (m := _LEADING.match(sql, pos)) and m.end() > pos:
        pos = m.end()
    if pos >= len(sql):
        return "the query is empty: send one SELECT statement"
    word = _FIRST_WORD.match(sql, pos)
    if word is None or word.group().lower() not in _READ_WORDS:
        first = word.group() if word else sql[pos : pos + 10]
        return f"{first!r} is not a query: {READ_ONLY_MESSAGE}"
    return None


class Session:
    """One episode's connection to one database; ``run`` never raises for
    anything the agent sends."""

    def run(self, sql: str, *, row_cap: int = 1000, time_limit_s: float = 2.0) -> QueryResult:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Engine:
    """Opens sessions on databases; ``name`` is ``"sqlite"`` or ``"postgresql"``."""

    name: str = ""

    def session(self, database: Database) -> Session:
        raise NotImplementedError

    def close(self) -> None:
        pass


# ------------------------------------------------------------------ comparing
def _number(value: float) -> tuple:
    if math.isnan(value):
        return ("nan",)
    if math.isinf(value):
        return ("num", value)
    if value.is_integer() and abs(value) < 2**53:
        return ("num", int(value))
    rounded = float(f"{value:.6e}")
    if rounded.is_integer() and abs(rounded) < 2**53:
        return ("num", int(rounded))
    return ("num", rounded)


def _key(value: object) -> tuple:
    """A hashable, type-normalised form of one value."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("num", int(value))
    if isinstance(value, int):
        return ("num", value)
    if isinstance(value, (float, decimal.Decimal)):
        return _number(float(value))
    if isinstance(value, str):
        return ("text", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ("bytes", bytes(value))
    if isinstance(value, (datetime.date, datetime.time)):
        # datetime.datetime is a date: "2024-01-02 10:00:00" as SQLite writes it.
        return (
            "text",
            value.isoformat(sep=" ") if isinstance(value, datetime.datetime) else value.isoformat(),
        )
    return ("text", str(value))


def _rows(result: QueryResult) -> list[tuple]:
    return [tuple(_key(v) for v in row) for row in result.rows]


def same_result(got: QueryResult, gold: QueryResult, ordered: bool) -> bool:
    """Whether ``got`` answers as ``gold`` does: both ran, neither was cut at the
    row cap, the same number of columns, and the same rows as multisets (in
    order when ``ordered``) with values normalised as the module says."""
    if not (got.ok and gold.ok) or got.truncated or gold.truncated:
        return False
    if len(got.columns) != len(gold.columns):
        return False
    a, b = _rows(got), _rows(gold)
    if len(a) != len(b):
        return False
    if ordered:
        return a == b
    return Counter(a) == Counter(b)


# ------------------------------------------------------------------ formatting
_CELL = 60


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        text = repr(round(value, 6)) if math.isfinite(value) else repr(value)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        text = f"<{len(bytes(value))} bytes>"
    else:
        text = str(value)
    text = "".join(c if c.isprintable() else " " for c in text)
    return text if len(text) <= _CELL else text[: _CELL - 3] + "..."


def format_result(result: QueryResult, max_rows: int = 20, max_chars: int = 4000) -> str:
    """The result as a bounded text table for the observation: ASCII borders, at
    most ``max_rows`` rows and ``max_chars`` characters (a cell at most 60),
    saying how many rows there were and when the table was cut; an error as
    ``error: <message>``."""
    if not result.ok:
        text = f"error: {result.error or 'the query failed'}"
        return text if len(text) <= max_chars else text[: max_chars - 3] + "..."
    n = len(result.rows)
    count = (
        f"more than {n} rows (stopped at the row cap of {n})"
        if result.truncated
        else (f"{n} row" + ("" if n == 1 else "s"))
    )
    if not result.columns:
        return f"({count}, no columns)"
    shown = [[_cell(v) for v in row] for row in result.rows[:max_rows]]
    header = [_cell(c) for c in result.columns]
    widths = [
        max([len(header[i])] + [len(r[i]) for r in shown if i < len(r)]) for i in range(len(header))
    ]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)) + " |"

    lines = [rule, line(header), rule] + [line(r) for r in shown] + [rule]
    footer = f"({count}"
    listed = len(shown)
    body: list[str] = []
    size = 0
    for text in lines:
        # Room for the last rule and the footer.
        if size + len(text) + 1 > max_chars - 200:
            break
        body.append(text)
        size += len(text) + 1
    if len(body) < len(lines):
        listed = max(0, len(body) - 3)
        body = body[: 3 + listed]
        body.append(rule if len(rule) < max_chars - 200 else "+...")
    if listed < n:
        footer += f"; the first {listed} shown, the table was cut"
    footer += ")"
    out = "\n".join(body + [footer])
    if len(out) > max_chars:  # a single row wider than the whole budget
        out = out[: max_chars - len(footer) - 5] + "...\n" + footer
    return out
