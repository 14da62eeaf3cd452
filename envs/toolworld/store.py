"""A tool world's relational store: one SQLite database in memory.

`Store` wraps an in-memory ``sqlite3`` connection. Copying it (``copy.deepcopy``,
``pickle``) copies the database itself through SQLite's own
``serialize``/``deserialize``, so `TextEnv.snapshot()` and ``restore()`` work on
a tool world unchanged: a snapshot holds the store's bytes, and a restored env
gets a fresh connection on them. A copy is a page copy (about 0.1 ms for a few
thousand rows), which is also how a reset starts each task from the world's
pristine store instead of generating it again.

`content()` is the store by value (every table's rows, sorted), the thing a
task's goal is compared with: two stores are equal when their rows are, however
the agent got there.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["Store"]

Params = Iterable[Any] | Mapping[str, Any]


class Store:
    """An in-memory SQLite database that copies and pickles by value.

    Args:
        schema: SQL that creates the tables (``executescript``), for a new store.
        data: the bytes of a serialized store (``Store.to_bytes()``) to open instead.
    """

    def __init__(self, schema: str | None = None, *, data: bytes | None = None) -> None:
        self._conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._conn.row_factory = sqlite3.Row
        #: The tables a statement of this store may have written since it was
        #: opened (a copy starts with its original's): SQLite's authorizer names
        #: them when a statement is prepared, so grading compares only these.
        self.written: set[str] = set()
        written = self.written

        def authorize(action: int, table: str | None, *_: Any) -> int:
            if action in _WRITES and table and not table.startswith("sqlite_"):
                written.add(table)
            return sqlite3.SQLITE_OK

        self._authorize = authorize
        if data is not None:
            self._conn.deserialize(data)
        elif schema:
            self._conn.executescript(schema)
        self._conn.execute("PRAGMA foreign_keys = ON")
        self._conn.set_authorizer(authorize)

    def forget_writes(self) -> None:
        """Start `written` afresh (a task's set-up is not the agent's doing).

        Setting the authorizer again makes SQLite expire every prepared
        statement, so a statement cached before (the same SQL a tool runs
        later) is prepared, and its tables recorded, again."""
        self.written.clear()
        self._conn.set_authorizer(self._authorize)

    # ------------------------------------------------------------------ queries
    def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement that writes; return the number of rows it changed."""
        return self._conn.execute(sql, params).rowcount

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> None:
        """Run one statement for each of `rows` (bulk inserts while a world is built)."""
        self._conn.executemany(sql, rows)

    def rows(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """The rows a query returns, as dicts."""
        return [dict(row) for row in self._conn.execute(sql, params)]

    def row(self, sql: str, params: Params = ()) -> dict[str, Any] | None:
        """The first row a query returns, or None."""
        found = self._conn.execute(sql, params).fetchone()
        return None if found is None else dict(found)

    def value(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row a query returns, or None."""
        found = self._conn.execute(sql, params).fetchone()
        return None if found is None else found[0]

    def tables(self) -> list[str]:
        """The store's table names, sorted."""
        return [
            row[0]
            for row in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]

    def count(self) -> int:
        """Rows in all tables together."""
        return sum(self.value(f'SELECT COUNT(*) FROM "{name}"') for name in self.tables())

    # ------------------------------------------------------------------ by value
    def same_rows(self, other: Store, tables: Iterable[str] | None = None) -> bool:
        """Whether `other` has the same rows as this store (in `tables`, by
        default all): row counts first, then each table's sorted rows."""
        names = sorted(self.tables() if tables is None else tables)
        count = 'SELECT COUNT(*) FROM "{}"'
        if any(self.value(count.format(n)) != other.value(count.format(n)) for n in names):
            return False
        return all(self.content([n]) == other.content([n]) for n in names)

    def content(self, tables: Iterable[str] | None = None) -> dict[str, list[tuple[Any, ...]]]:
        """Every table's rows (or those of `tables`) as sorted tuples: the store by value.

        SQLite sorts them (``ORDER BY`` every column: NULL, then numbers, then
        text), which is several times faster than sorting in Python for a
        store of thousands of rows, and the same order for equal contents.
        """
        cursor = self._conn.cursor()
        cursor.row_factory = None
        content = {}
        for name in self.tables() if tables is None else tables:
            width = len(cursor.execute(f'SELECT * FROM "{name}" LIMIT 0').description)
            order = ", ".join(str(i) for i in range(1, width + 1))
            content[name] = cursor.execute(f'SELECT * FROM "{name}" ORDER BY {order}').fetchall()
        return content

    def digest(self) -> str:
        """A hash of `content()`: equal for stores with equal rows."""
        text = json.dumps(self.content(), separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def changes_from(self, before: Store) -> dict[str, dict[str, list[tuple[Any, ...]]]]:
        """Per table, the rows only in `before` (``removed``) and only here (``added``);
        an updated row shows as one of each. Tables with no change are left out."""
        old, new = before.content(), self.content()
        diff = {}
        for name in sorted(set(old) | set(new)):
            was, now = set(old.get(name, ())), set(new.get(name, ()))
            if was != now:
                diff[name] = {
                    "removed": sorted(was - now, key=_sort_key),
                    "added": sorted(now - was, key=_sort_key),
                }
        return diff

    # ------------------------------------------------------------------ copying
    def to_bytes(self) -> bytes:
        """The whole database as bytes (``Store(data=...)`` opens them)."""
        return self._conn.serialize()

    def copy(self) -> Store:
        """An independent copy of the database."""
        copy = Store(data=self.to_bytes())
        copy.written.update(self.written)
        return copy

    def __deepcopy__(self, memo: dict[int, Any]) -> Store:
        return self.copy()

    def __getstate__(self) -> dict[str, Any]:
        return {"data": self.to_bytes(), "written": sorted(self.written)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(data=state["data"])  # type: ignore[misc]
        self.written.update(state.get("written", ()))

    def close(self) -> None:
        self._conn.close()

    def __repr__(self) -> str:
        return f"Store({len(self.tables())} tables)"


_WRITES = frozenset((sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE))


def _sort_key(row: tuple[Any, ...]) -> tuple[tuple[int, str], ...]:
    # Rows mix None, numbers and text: sort by type first, then by text.
    return tuple((0, "") if v is None else (1, f"{v!r}") for v in row)
