"""The SQL env's engines (envs/sql/engine.py, envs/sql/postgres.py): results,
the row cap, the observation's table, execution match, and hostile queries
that must each get a clear message and harm nothing.

The PostgreSQL cases run when ENVGYM_TEST_POSTGRES_URL is set
(``export ENVGYM_TEST_POSTGRES_URL="$(bash scripts/postgres.sh)"``)."""

from __future__ import annotations

import os
import sqlite3

import pytest
from postgres_server import postgres_url

from envgym.envs.sql.engine import (
    MAX_SQL_CHARS,
    QueryResult,
    format_result,
    gold_sql_for,
    make_engine,
    same_result,
)
from envgym.envs.sql.schema import Column, Database, ForeignKey, Schema, Table

SCHEMA = Schema(
    name="clinic",
    tables=(
        Table(
            "patient",
            (
                Column("id", "INTEGER", primary_key=True),
                Column("name", "TEXT"),
                Column("age", "INTEGER"),
                Column("weight", "REAL", nullable=True),
                Column("born", "DATE"),
            ),
            noun="a patient",
        ),
        Table(
            "visit",
            (
                Column("id", "INTEGER", primary_key=True),
                Column("patient_id", "INTEGER"),
                Column("day", "DATE"),
                Column("cost", "REAL"),
            ),
            noun="a visit",
        ),
    ),
    foreign_keys=(ForeignKey("visit", "patient_id", "patient", "id"),),
)
PATIENTS = [
    (
        i,
        f"patient {i}",
        20 + i % 60,
        None if i % 7 == 0 else 50.0 + i / 4,
        f"19{50 + i % 50}-0{1 + i % 9}-1{i % 10}",
    )
    for i in range(1, 301)
]
VISITS = [(i, 1 + i % 300, f"2024-0{1 + i % 9}-2{i % 10}", 10.0 * (i % 13)) for i in range(1, 1201)]


def build_database(db_id: str = "clinic-0") -> Database:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA.ddl())
    conn.executemany("INSERT INTO patient VALUES (?,?,?,?,?)", PATIENTS)
    conn.executemany("INSERT INTO visit VALUES (?,?,?,?)", VISITS)
    conn.commit()
    data = conn.serialize()
    conn.close()
    return Database(db_id, SCHEMA, data, {"patient": len(PATIENTS), "visit": len(VISITS)})


DATABASE = build_database()
ENGINES = ["sqlite", "postgres"]


@pytest.fixture(scope="module")
def pg_engine():
    engine = make_engine(postgres_url())
    yield engine
    engine.close()


@pytest.fixture(params=ENGINES)
def engine(request):
    if request.param == "sqlite":
        yield make_engine()
    else:
        yield request.getfixturevalue("pg_engine")


def untouched(engine) -> None:
    """The database still has every row, and a fresh session works."""
    with engine.session(DATABASE) as session:
        result = session.run("SELECT COUNT(*), SUM(age) FROM patient")
        assert result.ok, result.error
        assert same_result(
            result, QueryResult(True, ["n", "s"], [(300, sum(p[2] for p in PATIENTS))]), False
        )
        assert session.run("SELECT COUNT(*) FROM visit").rows == [(1200,)]


# ------------------------------------------------------------------ results
def test_a_query_returns_its_rows_and_columns(engine):
    with engine.session(DATABASE) as session:
        result = session.run("SELECT name, age FROM patient WHERE age > 77 ORDER BY id LIMIT 3")
    assert result.ok and result.error is None
    assert [c.lower() for c in result.columns] == ["name", "age"]
    assert result.rows == [("patient 58", 78), ("patient 59", 79), ("patient 118", 78)]
    assert result.rows_read == 3 and not result.truncated and result.seconds >= 0


def test_the_row_cap_stops_a_cross_join_of_every_table(engine):
    with engine.session(DATABASE) as session:
        result = session.run("SELECT * FROM patient, visit, patient AS p2", row_cap=50)
    assert result.ok and result.truncated
    assert len(result.rows) == 50 == result.rows_read
    assert "more than 50 rows" in format_result(result)


def test_an_error_is_the_engine_message_not_a_traceback(engine):
    with engine.session(DATABASE) as session:
        result = session.run("SELECT nosuchcolumn FROM patient")
        assert not result.ok
        assert "nosuchcolumn" in result.error and "Traceback" not in result.error
        # The session still works after an error.
        assert session.run("SELECT 1").rows == [(1,)]


def test_gold_sql_is_transpiled_for_postgres_only():
    sql = "SELECT name FROM patient WHERE born < DATE('now') LIMIT 3"
    assert gold_sql_for("sqlite", sql) == sql
    assert "LIMIT 3" in gold_sql_for("postgresql", sql)
    with pytest.raises(ValueError, match="'sqlite' or 'postgresql'"):
        gold_sql_for("mysql", sql)


@pytest.mark.parametrize("spec", ["mysql://x", "", "SQLite3", "sqlite:///x.db"])
def test_an_unknown_engine_is_a_clear_error(spec):
    with pytest.raises(ValueError, match="use 'sqlite'"):
        make_engine(spec)


# ------------------------------------------------------------------ formatting
def test_format_result_is_bounded_and_says_it_was_cut():
    rows = [(i, "x" * 500, None, 1.0 / 3) for i in range(1000)]
    result = QueryResult(True, ["id", "long", "empty", "third"], rows, rows_read=1000)
    text = format_result(result, max_rows=20, max_chars=4000)
    assert len(text) <= 4000
    assert "1000 rows" in text and "the table was cut" in text
    assert "NULL" in text and "0.333333" in text and "x" * 60 not in text
    small = format_result(QueryResult(True, ["n"], [(1,), (2,)], rows_read=2))
    assert "2 rows" in small and "cut" not in small and small.startswith("+")
    assert format_result(QueryResult(False, error="boom")) == "error: boom"
    tiny = format_result(result, max_rows=5, max_chars=300)
    assert len(tiny) <= 300 and "cut" in tiny


def test_format_result_keeps_control_characters_out_of_the_table():
    text = format_result(QueryResult(True, ["a"], [("line\nbreak\x1b[2J",)], rows_read=1))
    assert "\n".join(text.splitlines()) == text and "\x1b" not in text
    assert "line break" in text


# ------------------------------------------------------------------ matching
def r(rows, columns=None):
    width = len(rows[0]) if rows else 1
    return QueryResult(True, columns or [f"c{i}" for i in range(width)], rows, rows_read=len(rows))


def test_same_result_compares_multisets_unless_ordered():
    gold = r([(1, "a"), (2, "b"), (2, "b")])
    assert same_result(r([(2, "b"), (1, "a"), (2, "b")]), gold, ordered=False)
    assert not same_result(r([(2, "b"), (1, "a"), (2, "b")]), gold, ordered=True)
    assert same_result(r([(1, "a"), (2, "b"), (2, "b")]), gold, ordered=True)
    # Duplicates count: one (2, 'b') too few or too many does not match.
    assert not same_result(r([(1, "a"), (2, "b")]), gold, ordered=False)
    assert not same_result(r([(1, "a"), (1, "a"), (2, "b"), (2, "b")]), gold, ordered=False)


def test_same_result_normalises_numbers_and_null():
    import decimal

    assert same_result(r([(3, 2.5)]), r([(3.0, decimal.Decimal("2.5"))]), False)
    assert same_result(r([(1 / 3,)]), r([(0.3333333333,)]), False)
    assert not same_result(r([(0.333,)]), r([(1 / 3,)]), False)
    assert same_result(r([(True,)]), r([(1,)]), False)
    assert same_result(r([(None,)]), r([(None,)]), False)
    assert not same_result(r([(None,)]), r([(0,)]), False)
    assert not same_result(r([(None,)]), r([("",)]), False)
    assert not same_result(r([("NULL",)]), r([(None,)]), False)
    assert not same_result(r([("3",)]), r([(3,)]), False)
    assert not same_result(r([("Ann",)]), r([("ann",)]), False)
    assert not same_result(r([(12345678901,)]), r([(12345678902,)]), False)


def test_same_result_compares_column_count_and_order_not_names():
    assert same_result(r([(1, "a")], ["x", "y"]), r([(1, "a")], ["id", "name"]), False)
    assert not same_result(r([("a", 1)]), r([(1, "a")]), False)
    assert not same_result(r([(1, "a", None)]), r([(1, "a")]), False)
    empty2 = QueryResult(True, ["a", "b"], [])
    assert same_result(QueryResult(True, ["x", "y"], []), empty2, False)
    assert not same_result(QueryResult(True, ["x"], []), empty2, False)


def test_same_result_refuses_failed_or_capped_results():
    gold = r([(1,)])
    assert not same_result(QueryResult(False, error="x"), gold, False)
    capped = QueryResult(True, ["c0"], [(1,)], truncated=True, rows_read=1)
    assert not same_result(capped, gold, False)


def test_every_row_of_every_table_or_a_union_of_guesses_does_not_match(engine):
    with engine.session(DATABASE) as session:
        gold = session.run("SELECT name FROM patient WHERE age = 30")
        everything = session.run("SELECT name FROM patient", row_cap=1000)
        guesses = session.run(
            "SELECT name FROM patient WHERE age = 30 UNION ALL SELECT name FROM patient "
            "WHERE age = 31"
        )
    assert gold.ok and len(gold.rows) == 5
    assert not same_result(everything, gold, False)
    assert not same_result(guesses, gold, False)


# ------------------------------------------------------------------ hostile queries
SQLITE_HOSTILE = {
    "insert": "INSERT INTO patient VALUES (999, 'x', 1, 1.0, '2000-01-01')",
    "update": "UPDATE patient SET age = 0",
    "delete": "DELETE FROM visit",
    "drop": "DROP TABLE visit",
    "create": "CREATE TABLE t (a)",
    "cte write": "WITH x AS (SELECT 1) DELETE FROM visit",
    "attach": "ATTACH DATABASE '/tmp/envgym-attack.db' AS a",
    "vacuum into": "VACUUM INTO '/tmp/envgym-attack.db'",
    "pragma": "PRAGMA query_only = OFF",
    "pragma writable_schema": "PRAGMA writable_schema = ON",
    "load_extension": "SELECT load_extension('/tmp/evil.so')",
    "readfile": "SELECT readfile('/etc/passwd')",
    "writefile": "SELECT writefile('/tmp/envgym-attack.db', 'x')",
    "fts3_tokenizer": "SELECT fts3_tokenizer('simple')",
    "begin": "BEGIN",
    "several statements": "SELECT 1; DELETE FROM visit",
    "several selects": "SELECT 1; SELECT 2",
    "temp table": "CREATE TEMP TABLE t AS SELECT * FROM patient",
}


@pytest.mark.parametrize("name", sorted(SQLITE_HOSTILE))
def test_sqlite_refuses_every_write_attach_and_file_function(name, tmp_path):
    engine = make_engine()
    with engine.session(DATABASE) as session:
        result = session.run(SQLITE_HOSTILE[name])
        assert not result.ok, name
        assert result.error and "Traceback" not in result.error
        assert any(
            word in result.error
            for word in ("read-only", "one statement", "refused", "no such function")
        ), result.error
        assert session.run("SELECT COUNT(*) FROM visit").rows == [(1200,)]
    assert not os.path.exists("/tmp/envgym-attack.db")
    untouched(engine)


def test_hostile_queries_get_clear_messages(engine):
    with engine.session(DATABASE) as session:
        several = session.run("SELECT 1; SELECT 2")
        assert not several.ok and "one statement" in several.error
        huge = session.run("SELECT " + " + ".join(["1"] * (MAX_SQL_CHARS // 3)))
        assert not huge.ok and "characters" in huge.error and "shorter" in huge.error
        empty = session.run("  -- nothing\n ")
        assert not empty.ok and "empty" in empty.error
        assert not session.run(None).ok  # type: ignore[arg-type]
        assert "1" in format_result(session.run("SELECT 1"))
    untouched(engine)


def test_a_recursive_cte_bomb_ends_at_the_time_limit(engine):
    bomb = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r"
    with engine.session(DATABASE) as session:
        result = session.run(bomb, time_limit_s=0.3)
        assert not result.ok and "time limit" in result.error, result.error
        assert session.run("SELECT COUNT(*) FROM patient").rows == [(300,)]
    untouched(engine)


def test_a_huge_cross_join_ends_at_the_time_limit(engine):
    cross = "SELECT COUNT(*) FROM visit a, visit b, visit c"
    with engine.session(DATABASE) as session:
        result = session.run(cross, time_limit_s=0.3)
        assert not result.ok and "time limit" in result.error, result.error
    untouched(engine)


def test_sqlite_values_cannot_fill_memory():
    with make_engine().session(DATABASE) as session:
        blob = session.run("SELECT randomblob(2000000000)")
        assert not blob.ok and "bytes" in blob.error
        concat = session.run("SELECT group_concat(a.name || b.name) FROM patient a, patient b")
        assert not concat.ok and "bytes" in concat.error


def test_a_session_is_a_private_copy():
    engine = make_engine()
    one, two = engine.session(DATABASE), engine.session(DATABASE)
    assert one.run("SELECT COUNT(*) FROM patient").rows == [(300,)]
    one.close()
    assert not one.run("SELECT 1").ok
    assert two.run("SELECT COUNT(*) FROM patient").rows == [(300,)]
    two.close()


# ------------------------------------------------------------------ PostgreSQL
PG_HOSTILE = {
    "pg_read_file": "SELECT pg_read_file('/etc/passwd')",
    "quoted pg_read_file": "SELECT \"pg_read_file\"('/etc/passwd')",
    "pg_ls_dir": "SELECT * FROM pg_ls_dir('.')",
    "copy to program": "COPY patient TO PROGRAM 'touch /tmp/envgym-attack'",
    "copy from file": "COPY patient FROM '/etc/passwd'",
    "create": "CREATE TABLE t (a int)",
    "insert": "INSERT INTO patient (id) VALUES (999)",
    "cte write": "WITH d AS (DELETE FROM visit RETURNING *) SELECT COUNT(*) FROM d",
    "set role back": "SET ROLE envgym",
    "reset role": "RESET ROLE",
    "set_config role": "SELECT set_config('role', current_user, false)",
    "unicode-escaped set_config": "SELECT U&\"\\0073et_config\"('role', 'envgym', false)",
    "query_to_xml": "SELECT query_to_xml('select 1', true, false, '')",
    "lo_import": "SELECT lo_import('/etc/passwd')",
    "dblink": "SELECT * FROM dblink('host=127.0.0.1', 'select 1') AS t(a int)",
    "advisory lock": "SELECT pg_advisory_lock(1)",
    "terminate": "SELECT pg_terminate_backend(pid) FROM pg_stat_activity",
    "select into": "SELECT * INTO stolen FROM patient",
    "for update": "SELECT * FROM patient FOR UPDATE",
    "several statements": "SELECT 1; RESET ROLE; SELECT 2",
    "begin": "BEGIN",
    "commit": "COMMIT",
}


@pytest.mark.parametrize("name", sorted(PG_HOSTILE))
def test_postgres_refuses_hostile_queries(name, pg_engine):
    with pg_engine.session(DATABASE) as session:
        result = session.run(PG_HOSTILE[name])
        assert not result.ok, name
        assert result.error and "Traceback" not in result.error
        assert any(
            w in result.error
            for w in (
                "read-only",
                "one statement",
                "refused",
                "permission denied",
                "does not exist",
            )
        ), result.error
        # The session goes on, still as the read-only role, still in its schema.
        assert session.run("SELECT COUNT(*) FROM visit").rows == [(1200,)]
        assert session.run("SELECT current_user").rows[0][0].endswith("_ro")
    assert not os.path.exists("/tmp/envgym-attack")
    untouched(pg_engine)


def test_postgres_an_engine_dropped_without_close_closes_its_connections():
    """A user who drops an env without ``close()`` leaves no connection open on
    the server and gets no ResourceWarning from psycopg at garbage collection."""
    import gc
    import warnings

    engine = make_engine(postgres_url())
    with engine.session(DATABASE) as session:
        assert session.run("SELECT COUNT(*) FROM patient").rows == [(300,)]
    conns = list(engine._idle)
    assert conns and not any(c.closed for c in conns)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del engine, session
        gc.collect()
    assert all(c.closed for c in conns)
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_postgres_sessions_see_only_their_own_schema(pg_engine):
    import psycopg

    with psycopg.connect(
        "postgresql://" + postgres_url().split("://", 1)[1], autocommit=True
    ) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS public.envgym_sql_secret (answer text)")
        conn.execute("INSERT INTO public.envgym_sql_secret VALUES ('gold')")
    other = build_database("clinic-other")
    try:
        with pg_engine.session(DATABASE) as session:
            secret = session.run("SELECT * FROM public.envgym_sql_secret")
            assert not secret.ok and "permission denied" in secret.error
            from envgym.envs.sql.postgres import schema_name

            theirs = session.run(f"SELECT COUNT(*) FROM {schema_name(other)}.patient")
            # The other database's schema may not exist yet, or exists and is not ours.
            assert not theirs.ok
            with pg_engine.session(other) as second:
                assert second.run("SELECT COUNT(*) FROM patient").rows == [(300,)]
            theirs = session.run(f"SELECT COUNT(*) FROM {schema_name(other)}.patient")
            assert not theirs.ok and "permission denied" in theirs.error
            # The catalogue tells names, not rows.
            names = session.run("SELECT relname FROM pg_catalog.pg_class LIMIT 5")
            assert names.ok
    finally:
        with psycopg.connect(
            "postgresql://" + postgres_url().split("://", 1)[1], autocommit=True
        ) as c:
            c.execute("DROP TABLE IF EXISTS public.envgym_sql_secret")


def test_postgres_pg_sleep_ends_at_the_time_limit_and_settings_do_not_last(pg_engine):
    with pg_engine.session(DATABASE) as session:
        slept = session.run("SELECT pg_sleep(30)", time_limit_s=0.3)
        assert not slept.ok and "time limit" in slept.error
        # A query cannot lift the next query's time limit.
        session.run("SELECT current_setting('statement_timeout')")
        again = session.run("SELECT pg_sleep(30)", time_limit_s=0.3)
        assert not again.ok and "time limit" in again.error
        shown = session.run("SHOW statement_timeout")
        assert not shown.ok
    untouched(pg_engine)


def test_postgres_and_sqlite_agree_on_the_gold_queries(pg_engine):
    golds = [
        ("SELECT name, weight FROM patient WHERE weight IS NULL OR weight > 120", False),
        ("SELECT age, COUNT(*), AVG(weight) FROM patient GROUP BY age HAVING COUNT(*) > 4", False),
        (
            "SELECT p.name, SUM(v.cost) FROM patient p JOIN visit v ON v.patient_id = p.id "
            "GROUP BY p.id, p.name ORDER BY SUM(v.cost) DESC, p.name LIMIT 5",
            True,
        ),
        (
            "SELECT day FROM visit WHERE day BETWEEN '2024-03-01' AND '2024-03-31' "
            "ORDER BY day, id LIMIT 7",
            True,
        ),
        (
            "SELECT p.name, COUNT(*) FROM patient p JOIN visit v ON v.patient_id = p.id "
            "GROUP BY p.id",
            False,
        ),
        ("SELECT SUBSTR(born, 1, 4) AS y, COUNT(*) FROM patient GROUP BY y", False),
        (
            "SELECT name FROM patient WHERE age > (SELECT AVG(age) FROM patient) "
            "EXCEPT SELECT name FROM patient WHERE id > 100",
            False,
        ),
    ]
    sqlite_session = make_engine().session(DATABASE)
    with pg_engine.session(DATABASE) as session:
        for sql, ordered in golds:
            a = sqlite_session.run(sql)
            b = session.run(gold_sql_for("postgresql", sql))
            assert a.ok and b.ok, (sql, a.error, b.error)
            assert a.rows and same_result(b, a, ordered), sql
    sqlite_session.close()


def test_postgres_a_query_cannot_see_another_sessions_gold_query(pg_engine):
    gold = "SELECT name FROM patient WHERE age = 42 /* gold-marker */"
    with pg_engine.session(DATABASE) as env_side:
        for _ in range(8):  # often enough for a driver to prepare it server-side
            assert env_side.run(gold).ok
    with pg_engine.session(DATABASE) as agent, pg_engine.session(DATABASE) as env_side:
        assert env_side.run(gold).ok
        for probe in (
            "SELECT string_agg(COALESCE(query, ''), ' ') FROM pg_stat_activity",
            "SELECT string_agg(statement, ' ') FROM pg_prepared_statements",
            "SELECT string_agg(statement, ' ') FROM pg_cursors",
        ):
            seen = agent.run(probe)
            assert seen.ok or "permission denied" in seen.error, seen.error
            assert "gold-marker" not in repr(seen.rows), probe


def test_postgres_loads_loose_sqlite_data(pg_engine):
    """Spider's databases put text in INTEGER columns and NULL in primary keys."""
    schema = Schema(
        "loose",
        (
            Table(
                "t",
                (
                    Column("code", "TEXT", primary_key=True),
                    Column("n", "INTEGER"),
                    Column("x", "REAL"),
                    Column("d", "DATE"),
                ),
            ),
        ),
    )
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (code TEXT PRIMARY KEY, n INTEGER, x REAL, d DATE)")
    conn.executemany(
        "INSERT INTO t VALUES (?,?,?,?)",
        [("a", 1, 1.5, "2024-01-02"), (None, "n/a", 2, "2024-02-03"), ("c", 3, None, None)],
    )
    database = Database("loose-0", schema, conn.serialize())
    with pg_engine.session(database) as session:
        result = session.run("SELECT code, n, x, d FROM t ORDER BY d")
        assert result.ok, result.error
        assert result.rows == [
            ("a", "1", 1.5, "2024-01-02"),
            (None, "n/a", 2.0, "2024-02-03"),
            ("c", "3", None, None),
        ]
