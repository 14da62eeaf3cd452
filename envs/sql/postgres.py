"""The PostgreSQL engine: ``make_engine("postgresql://user:pw@host/db")``.

psycopg 3 (the ``leaderboard`` extra) drives it; the gold queries (SQLite
dialect) go through ``gold_sql_for`` (sqlglot, the ``sql`` extra).

- **A schema per database**, created once and reused (by this engine and by
  later ones: its name is the sanitised ``db_id`` and a hash of the rows, so
  a changed database gets a new schema). Its rows come from
  ``Database.sqlite_bytes`` by ``COPY``. Types by SQLite's affinity rules:
  INTEGER -> ``bigint``, REAL -> ``double precision``, NUMERIC/DECIMAL ->
  ``numeric``, BLOB -> ``bytea``, and TEXT, DATE and everything else ->
  ``text``: dates stay ISO text as SQLite stores them, so comparing,
  ordering and grouping them agree with SQLite (cast with ``day::date`` for
  date arithmetic). A table's primary key is created where its rows keep it
  (so ``GROUP BY`` a key may select the row's other columns, as SQLite
  allows); no other constraint (loaded data may break them); the tables are
  ANALYZEd.
- **A read-only role per schema** (``NOLOGIN``, ``USAGE`` on that schema and
  ``SELECT`` on its tables, nothing else), which the connecting user must be
  able to create (``CREATEROLE``; ``scripts/postgres.sh`` grants it).
- **A session is one transaction** (``READ ONLY``) rolled back on close. Before
  each query: ``SET LOCAL ROLE`` to the read-only role, ``search_path`` to the
  schema and ``statement_timeout`` to the time limit, so nothing a query set
  lasts to the next. The query runs as a server-side cursor
  (``DECLARE ... CURSOR FOR``): a query only, one statement, fetched up to the
  row cap. Functions that change settings or run SQL given as text
  (``set_config``, ``query_to_xml``, ...), read files, take advisory locks or
  signal other sessions are refused by name before the query is sent.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
import time

from envgym.envs.sql.base import (
    READ_ONLY_MESSAGE,
    Engine,
    QueryResult,
    Session,
    check_query,
)
from envgym.envs.sql.schema import Database
from envgym.extras import require

__all__ = ["PostgresEngine", "PostgresSession", "schema_name"]

#: Part of a schema's name: a change to how rows are loaded makes new schemas.
LOAD_VERSION = 2

_DENIED_FUNCTIONS = re.compile(
    r"\b(set_config|query_to_xml\w*|query_to_xmlschema|cursor_to_xml\w*|table_to_xml\w*"
    r"|schema_to_xml\w*|database_to_xml\w*|pg_advisory\w*|pg_try_advisory\w*"
    r"|pg_cancel_backend|pg_terminate_backend|pg_reload_conf|pg_rotate_logfile"
    r"|pg_read_file|pg_read_binary_file|pg_ls_\w+|pg_stat_file|pg_file_\w+|lo_\w+"
    r"|dblink\w*|pg_notify|pg_logical_\w+|pg_replication_\w+|pg_promote"
    r"|pg_create_\w+|pg_drop_\w+|pg_switch_wal|pg_backup_\w+)\s*\(",
)


def schema_name(database: Database) -> str:
    """``sql_<db_id sanitised>_<10 hex digits of the rows' hash>`` (at most 63 characters)."""
    base = re.sub(r"[^a-z0-9_]+", "_", database.db_id.lower()).strip("_")[:40] or "db"
    digest = hashlib.sha256(f"{LOAD_VERSION}\0{database.db_id}\0".encode() + database.sqlite_bytes)
    return f"sql_{base}_{digest.hexdigest()[:10]}"


def _pg_type(declared: str) -> str:
    t = (declared or "").upper()
    if "INT" in t:
        return "bigint"
    if any(k in t for k in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if "BLOB" in t:
        return "bytea"
    if any(k in t for k in ("REAL", "FLOA", "DOUB")):
        return "double precision"
    if any(k in t for k in ("NUMERIC", "DECIMAL", "NUMBER")):
        return "numeric"
    return "text"


def _fitted_type(source: sqlite3.Connection, table: str, column: str, declared: str) -> str:
    """``declared``, widened where the rows hold other types (SQLite lets an
    INTEGER column hold 2.5 or 'n/a', as Spider's databases sometimes do)."""
    quoted = '"' + column.replace('"', '""') + '"'
    kinds = {r[0] for r in source.execute(f'SELECT DISTINCT typeof({quoted}) FROM "{table}"')} - {
        "null"
    }
    if not kinds:
        return declared
    numeric = ("bigint", "double precision", "numeric")
    if declared in numeric and kinds <= {"integer"}:
        return declared
    if declared in numeric and kinds <= {"integer", "real"}:
        return "numeric" if declared == "numeric" else "double precision"
    if kinds == {"blob"}:
        return "bytea"
    if "blob" in kinds:
        raise ValueError(f"{table}.{column} mixes blobs with other values; PostgreSQL cannot")
    return "text"


def denied_function(sql: str) -> str | None:
    """The refused function a query calls, or None."""
    text = sql.replace('"', "").lower()
    if re.search(r"\bu&['\"]", sql, re.I):
        return "a U& escape"
    m = _DENIED_FUNCTIONS.search(text)
    return f"the function {m.group(1)}()" if m else None


class PostgresSession(Session):
    def __init__(self, engine: PostgresEngine, conn, schema: str, role: str):
        self._engine = engine
        self._conn = conn
        self._schema = schema
        self._role = role
        conn.execute("BEGIN READ ONLY")

    def run(self, sql: str, *, row_cap: int = 1000, time_limit_s: float = 2.0) -> QueryResult:
        import psycopg

        if self._conn is None:
            return QueryResult(ok=False, error="the session is closed")
        problem = check_query(sql)
        if problem:
            return QueryResult(ok=False, error=problem)
        refused = denied_function(sql)
        if refused:
            return QueryResult(ok=False, error=f"{refused} is refused: {READ_ONLY_MESSAGE}")
        row_cap = max(0, int(row_cap))
        ms = max(1, int(time_limit_s * 1000))
        conn = self._conn
        start = time.perf_counter()
        try:
            return self._run(conn, sql, row_cap, ms, time_limit_s, start)
        except psycopg.OperationalError as e:  # the server went away, not the query's doing
            self._broken()
            return QueryResult(
                ok=False,
                error=f"the database connection failed ({self._message(e, time_limit_s)}); "
                "try again",
                seconds=time.perf_counter() - start,
            )

    def _run(self, conn, sql: str, row_cap: int, ms: int, time_limit_s: float, start: float):
        import psycopg
        from psycopg import sql as pgsql

        conn.execute(
            pgsql.SQL(
                "SAVEPOINT envgym_q; SET LOCAL ROLE {}; SET LOCAL search_path TO {}; "
                "SET LOCAL statement_timeout = {}"
            ).format(
                pgsql.Identifier(self._role), pgsql.Identifier(self._schema), pgsql.Literal(ms)
            )
        )
        cursor = conn.cursor(name="envgym_agent_query")
        try:
            cursor.execute(sql)
            columns = [d.name for d in cursor.description or ()]
            rows = cursor.fetchmany(row_cap + 1) if columns else []
            cursor.close()
            conn.execute("RELEASE SAVEPOINT envgym_q")
        except psycopg.Error as e:
            message = self._message(e, time_limit_s)
            try:
                cursor.close()  # the transaction is in error: closed here only
                conn.execute("ROLLBACK TO SAVEPOINT envgym_q")
                conn.execute("RELEASE SAVEPOINT envgym_q")
            except psycopg.Error:
                self._broken()
            return QueryResult(ok=False, error=message, seconds=time.perf_counter() - start)
        except (ValueError, OverflowError, UnicodeError) as e:  # a value psycopg cannot load
            try:
                cursor.close()
            except psycopg.Error:
                pass
            self._broken()
            return QueryResult(
                ok=False,
                error=f"the result could not be read: {e}",
                seconds=time.perf_counter() - start,
            )
        return QueryResult.fetched(columns, rows, row_cap, start)

    def _broken(self) -> None:
        """Start a fresh transaction after an error the savepoint could not undo."""
        if self._conn is None:
            return
        try:
            self._conn.execute("ROLLBACK")
            self._conn.execute("BEGIN READ ONLY")
        except Exception:
            self._conn.close()
            self._conn = None

    @staticmethod
    def _message(error, time_limit_s: float) -> str:
        import psycopg.errors as pe

        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if isinstance(error, pe.QueryCanceled):
            return (
                f"the query ran past its time limit of {time_limit_s:g} s and was stopped "
                "(an unbounded recursive CTE, a cross join of large tables, pg_sleep?); "
                "narrow it with join conditions, WHERE or LIMIT"
            )
        if "multiple commands" in text:
            return "send one statement at a time (nothing after the first ';')"
        if isinstance(error, (pe.InsufficientPrivilege, pe.ReadOnlySqlTransaction)):
            return f"{text}: {READ_ONLY_MESSAGE}"
        if "data-modifying" in text or "FOR UPDATE" in text.upper() or "INTO is not" in text:
            return f"{text}: {READ_ONLY_MESSAGE}"
        return f"PostgreSQL error: {text}"

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._engine._give_back(conn)


class PostgresEngine(Engine):
    """PostgreSQL by URL; see the module's text for what a session may do."""

    name = "postgresql"

    def __init__(self, url: str):
        psycopg = require("psycopg", extra="leaderboard", purpose="the SQL env's PostgreSQL engine")
        self._psycopg = psycopg
        self.url = "postgresql://" + url.split("://", 1)[1]
        self._idle: list = []
        self._ready: dict[str, tuple[bytes, str, str]] = {}
        self._lock = threading.Lock()
        try:
            conn = self._connect()
        except psycopg.Error as e:
            raise ValueError(f"cannot connect to PostgreSQL at {_redact(url)}: {e}") from e
        self._idle.append(conn)

    def _connect(self):
        return self._psycopg.connect(
            self.url, autocommit=True, connect_timeout=10, prepare_threshold=None
        )

    def _take(self):
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed:
                    return conn
        return self._connect()

    def _give_back(self, conn) -> None:
        try:
            conn.execute("ROLLBACK")
            conn.execute("DISCARD ALL")  # settings, prepared statements, locks
        except self._psycopg.Error:
            conn.close()
            return
        with self._lock:
            self._idle.append(conn)

    def session(self, database: Database) -> PostgresSession:
        schema, role = self._prepare(database)
        return PostgresSession(self, self._take(), schema, role)

    def _prepare(self, database: Database) -> tuple[str, str]:
        with self._lock:
            ready = self._ready.get(database.db_id)
        if ready and ready[0] is database.sqlite_bytes:  # no hashing per session
            return ready[1], ready[2]
        schema = schema_name(database)
        role = (schema + "_ro")[:63]
        conn = self._take()
        try:
            with conn.transaction():
                key = int(hashlib.sha256(schema.encode()).hexdigest()[:15], 16)
                conn.execute("SELECT pg_advisory_xact_lock(%s)", [key])
                found = conn.execute(
                    "SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema]
                ).fetchone()
                if not found:
                    self._load(conn, database, schema)
                self._grant(conn, schema, role)
        except self._psycopg.errors.InsufficientPrivilege as e:
            conn.close()
            raise PermissionError(
                f"the PostgreSQL user cannot create the SQL env's read-only role or schema "
                f"({e}); give it CREATEROLE and CREATE on the database, e.g. "
                "ALTER ROLE <user> CREATEROLE (scripts/postgres.sh does)"
            ) from e
        self._give_back(conn)
        with self._lock:
            self._ready[database.db_id] = (database.sqlite_bytes, schema, role)
        return schema, role

    def _load(self, conn, database: Database, schema: str) -> None:
        from psycopg import sql as pgsql

        source = sqlite3.connect(":memory:")
        try:
            source.deserialize(database.sqlite_bytes)
            tables = [
                r[0]
                for r in source.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%' ORDER BY name"
                )
            ]
            conn.execute(pgsql.SQL("CREATE SCHEMA {}").format(pgsql.Identifier(schema)))
            for table in tables:
                info = source.execute(f'PRAGMA table_info("{table}")').fetchall()
                names = [c[1] for c in info]
                target = pgsql.Identifier(schema, table)
                types = [_fitted_type(source, table, c[1], _pg_type(c[2])) for c in info]
                columns = pgsql.SQL(", ").join(
                    pgsql.SQL("{} {}").format(pgsql.Identifier(c[1]), pgsql.SQL(t))
                    for c, t in zip(info, types, strict=True)
                )
                conn.execute(pgsql.SQL("CREATE TABLE {} ({})").format(target, columns))
                listed = pgsql.SQL(", ").join(pgsql.Identifier(n) for n in names)
                copy_sql = pgsql.SQL("COPY {} ({}) FROM STDIN").format(target, listed)
                quoted = ", ".join('"' + n.replace('"', '""') + '"' for n in names)
                with conn.cursor() as cur, cur.copy(copy_sql) as copy:
                    for row in source.execute(f'SELECT {quoted} FROM "{table}"'):
                        copy.write_row(row)
                keys = [c[1] for c in sorted(info, key=lambda c: c[5]) if c[5]]
                if keys:  # so GROUP BY a key may select the row's other columns, as in SQLite
                    try:
                        with conn.transaction():  # a savepoint: loaded data may break its key
                            conn.execute(
                                pgsql.SQL("ALTER TABLE {} ADD PRIMARY KEY ({})").format(
                                    target, pgsql.SQL(", ").join(map(pgsql.Identifier, keys))
                                )
                            )
                    except self._psycopg.errors.IntegrityError:
                        pass
                conn.execute(pgsql.SQL("ANALYZE {}").format(target))
        finally:
            source.close()

    def _grant(self, conn, schema: str, role: str) -> None:
        from psycopg import sql as pgsql

        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
        r, s = pgsql.Identifier(role), pgsql.Identifier(schema)
        if not exists:
            conn.execute(pgsql.SQL("CREATE ROLE {} NOLOGIN").format(r))
        member = conn.execute("SELECT pg_has_role(current_user, %s, 'MEMBER')", [role]).fetchone()
        if not member[0]:
            conn.execute(pgsql.SQL("GRANT {} TO CURRENT_USER").format(r))
        conn.execute(pgsql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(s, r))
        conn.execute(pgsql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(s, r))

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def __del__(self) -> None:
        # An env dropped without close(): its idle connections close with it,
        # rather than lingering on the server and warning at garbage collection.
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown, a half-built engine
            pass


def _redact(url: str) -> str:
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)
