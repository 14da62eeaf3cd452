"""The engines the SQL env runs queries on: SQLite in-process (the default) and
PostgreSQL by URL (``postgres.py``).

Everything the agent sends is hostile, so a session only reads. On SQLite a
session is a fresh in-memory copy of the database (``Database.sqlite_bytes``
deserialized; nothing a session could change is shared), with
``PRAGMA query_only``, an authorizer that allows reading and nothing else
(no write, DDL, ATTACH, PRAGMA or transaction; no ``load_extension``,
``readfile``, ``writefile``, ``edit``, ``fts3_tokenizer``), extension loading
off, a 1 MB bound on any value (so a ``group_concat`` of a cross join or a
``randomblob`` cannot fill memory), a progress handler that stops a query at
its time limit (recursive CTE bombs, cross joins), and the row cap applied
while fetching.

    engine = make_engine()               # or make_engine("postgresql://user:pw@host/db")
    session = engine.session(database)   # one per episode
    result = session.run("SELECT name FROM patient WHERE age > 60")
    text = format_result(result)          # for the observation
"""

from __future__ import annotations

import sqlite3
import time

from envgym.envs.sql.base import (
    MAX_SQL_CHARS,
    READ_ONLY_MESSAGE,
    Engine,
    QueryResult,
    Session,
    check_query,
    format_result,
    same_result,
)
from envgym.envs.sql.schema import Database
from envgym.extras import require

#: The largest string or blob a SQLite value may be.
MAX_VALUE_BYTES = 1_000_000

__all__ = [
    "MAX_SQL_CHARS",
    "Engine",
    "QueryResult",
    "Session",
    "SqliteEngine",
    "check_query",
    "format_result",
    "gold_sql_for",
    "make_engine",
    "same_result",
]

# ------------------------------------------------------------------ SQLite
_SQLITE_DENIED_FUNCTIONS = frozenset(
    {
        "load_extension",
        "readfile",
        "writefile",
        "edit",
        "fts3_tokenizer",
        "zipfile",
        "sqlar_compress",
        "sqlar_uncompress",
        "lsmode",
    }
)
_SQLITE_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
_SQLITE_ACTIONS = {
    getattr(sqlite3, name): name.removeprefix("SQLITE_").replace("_", " ")
    for name in dir(sqlite3)
    if name.startswith("SQLITE_")
    and name not in {"SQLITE_OK", "SQLITE_DENY", "SQLITE_IGNORE", "SQLITE_DONE", "SQLITE_ROW"}
    and not name.startswith("SQLITE_LIMIT")
    and isinstance(getattr(sqlite3, name), int)
    and getattr(sqlite3, name) < 40
}


class SqliteSession(Session):
    def __init__(self, database: Database):
        self.database = database
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            ":memory:", check_same_thread=False, isolation_level=None
        )
        conn = self._conn
        conn.deserialize(database.sqlite_bytes)
        conn.execute("PRAGMA query_only = ON")
        conn.execute("PRAGMA trusted_schema = OFF")
        if hasattr(conn, "enable_load_extension"):  # absent where Python was built without it
            conn.enable_load_extension(False)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_CHARS * 4)
        self._denied: str | None = None
        self._deadline = 0.0
        conn.set_authorizer(self._authorize)
        conn.set_progress_handler(self._progress, 2000)

    def _authorize(self, action: int, arg1, arg2, db_name, trigger) -> int:
        if action in _SQLITE_ALLOWED:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION:
            if (arg2 or "").lower() not in _SQLITE_DENIED_FUNCTIONS:
                return sqlite3.SQLITE_OK
            self._denied = f"the function {arg2}()"
            return sqlite3.SQLITE_DENY
        what = _SQLITE_ACTIONS.get(action, f"action {action}")
        self._denied = what + (f" {arg1}" if arg1 and action != sqlite3.SQLITE_PRAGMA else "")
        if action == sqlite3.SQLITE_PRAGMA:
            self._denied = f"PRAGMA {arg1}"
        return sqlite3.SQLITE_DENY

    def _progress(self) -> int:
        return 1 if time.perf_counter() > self._deadline else 0

    def run(self, sql: str, *, row_cap: int = 1000, time_limit_s: float = 2.0) -> QueryResult:
        if self._conn is None:
            return QueryResult(ok=False, error="the session is closed")
        problem = check_query(sql)
        if problem:
            return QueryResult(ok=False, error=problem)
        row_cap = max(0, int(row_cap))
        self._denied = None
        start = time.perf_counter()
        self._deadline = start + time_limit_s
        cursor = self._conn.cursor()
        try:
            cursor.execute(sql)
            columns = [d[0] for d in cursor.description or ()]
            rows = cursor.fetchmany(row_cap + 1) if columns else []
        except sqlite3.Warning as e:  # several statements
            return self._failed(f"{e}: send one statement (no second after ';')", start)
        except sqlite3.Error as e:
            return self._failed(self._message(e, time_limit_s), start)
        except (OverflowError, MemoryError, ValueError) as e:
            return self._failed(f"the query failed: {e}", start)
        finally:
            cursor.close()
        return QueryResult.fetched(columns, rows, row_cap, start)

    def _failed(self, message: str, start: float) -> QueryResult:
        return QueryResult(ok=False, error=message, seconds=time.perf_counter() - start)

    def _message(self, error: sqlite3.Error, time_limit_s: float) -> str:
        text = str(error)
        if self._denied or "not authorized" in text or "readonly" in text:
            what = f"{self._denied} is refused: " if self._denied else ""
            return what + READ_ONLY_MESSAGE
        if "interrupted" in text:
            return (
                f"the query ran past its time limit of {time_limit_s:g} s and was stopped "
                "(an unbounded recursive CTE or a cross join of large tables?); "
                "narrow it with join conditions, WHERE or LIMIT"
            )
        if "one statement at a time" in text:
            return "send one statement at a time (nothing after the first ';')"
        if "too big" in text:
            return (
                f"a value of the result would exceed {MAX_VALUE_BYTES:,} bytes; "
                "aggregate or select less"
            )
        return f"SQLite error: {text}"

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class SqliteEngine(Engine):
    """SQLite in-process: each session a fresh read-only in-memory copy."""

    name = "sqlite"

    def session(self, database: Database) -> SqliteSession:
        return SqliteSession(database)


# ------------------------------------------------------------------ choosing
def make_engine(spec: str = "sqlite") -> Engine:
    """``"sqlite"`` (the default) or a PostgreSQL URL (``postgresql://user:pw@host/db``;
    ``postgresql+psycopg://`` and ``postgres://`` too; needs the leaderboard extra)."""
    if not isinstance(spec, str):
        raise ValueError(f"engine must be 'sqlite' or a postgresql:// URL, not {spec!r}")
    if spec.strip().lower() == "sqlite":
        return SqliteEngine()
    if spec.startswith(("postgresql://", "postgresql+psycopg://", "postgres://")):
        from envgym.envs.sql.postgres import PostgresEngine

        return PostgresEngine(spec)
    raise ValueError(
        f"unknown engine {spec!r}: use 'sqlite' (the default) or a PostgreSQL URL "
        "such as 'postgresql://user:password@host:5432/dbname'"
    )


def gold_sql_for(engine_name: str, sql: str) -> str:
    """The gold query (SQLite dialect) for ``engine_name``: as written on SQLite,
    transpiled with sqlglot on PostgreSQL (the ``sql`` extra)."""
    if engine_name == "sqlite":
        return sql
    if engine_name == "postgresql":
        sqlglot = require(
            "sqlglot", extra="sql", purpose="the SQL env's gold queries on PostgreSQL"
        )
        return sqlglot.transpile(sql, read="sqlite", write="postgres")[0]
    raise ValueError(f"unknown engine name {engine_name!r}: 'sqlite' or 'postgresql'")
