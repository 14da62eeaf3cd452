"""The SQL env's generated databases (envs/sql/domains.py): every domain builds
from a seed, the same in any process, into data a question can be asked about
(keys that hold, real NULLs, spread-out numbers, ASCII text, dates in order),
and its schema text names everything. The DDL is checked on PostgreSQL too when
``ENVGYM_TEST_POSTGRES_URL`` is set (``bash scripts/postgres.sh`` prints one)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from postgres_server import postgres_url

from envgym.envs.sql.domains import (
    DOMAINS,
    build_database,
    domain_schema,
    index_ddl,
    schema_text,
)
from envgym.envs.sql.schema import Database

SEEDS = (0, 1, 7)
SAFE_TEXT = re.compile(r"[A-Za-z0-9 +.@-]+")


@pytest.fixture(scope="module")
def built() -> dict[tuple[str, int], Database]:
    return {(d, s): build_database(d, s) for d in DOMAINS for s in SEEDS}


def _open(db: Database) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(db.sqlite_bytes)
    return conn


def _cases(built: dict[tuple[str, int], Database]) -> Iterator[tuple[Database, sqlite3.Connection]]:
    for db in built.values():
        conn = _open(db)
        try:
            yield db, conn
        finally:
            conn.close()


def _digests(seed: int) -> dict[str, str]:
    return {d: hashlib.sha256(build_database(d, seed).sqlite_bytes).hexdigest() for d in DOMAINS}


def test_the_five_domains_are_listed() -> None:
    assert DOMAINS == ("shop", "school", "hospital", "flights", "library")


def test_every_domain_builds_with_its_id_schema_and_row_counts(built) -> None:
    for (domain, seed), db in built.items():
        assert db.db_id == f"{domain}-{seed}"
        assert db.schema is domain_schema(domain) and db.schema.name == domain
        assert 4 <= len(db.schema.tables) <= 12
        conn = _open(db)
        names = [t.name for t in db.schema.tables]
        assert list(db.row_counts) == names
        for name in names:
            (count,) = conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()
            assert count == db.row_counts[name]
            assert 5 <= count <= 20_000, f"{db.db_id}.{name} has {count} rows"
        total = sum(db.row_counts.values())
        assert 5_000 <= total <= 60_000, f"{db.db_id} has {total} rows"
        # Only the schema's tables and the foreign-key indexes: no answer hidden in it.
        extra = conn.execute(
            "SELECT name FROM sqlite_master WHERE type NOT IN ('table', 'index')"
        ).fetchall()
        assert extra == []
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert tables == set(names)
        conn.close()


def test_same_seed_same_bytes_in_another_process_and_seeds_differ() -> None:
    script = (
        "import hashlib, json\n"
        "from envgym.envs.sql.domains import DOMAINS, build_database\n"
        "print(json.dumps({d: hashlib.sha256(build_database(d, 3).sqlite_bytes).hexdigest()"
        " for d in DOMAINS}))\n"
    )
    child_env = {**os.environ, "PYTHONHASHSEED": "4242"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=child_env, check=True
    )
    theirs = json.loads(out.stdout)
    ours = _digests(3)
    assert ours == theirs
    other = _digests(4)
    assert all(ours[d] != other[d] for d in DOMAINS)


def test_domains_of_one_seed_differ_and_row_counts_vary_with_the_seed(built) -> None:
    assert len({built[d, 0].sqlite_bytes for d in DOMAINS}) == len(DOMAINS)
    for domain in DOMAINS:
        counts = {tuple(built[domain, s].row_counts.values()) for s in SEEDS}
        assert len(counts) == len(SEEDS)


def test_foreign_keys_hold_are_declared_and_indexed(built) -> None:
    for db, conn in _cases(built):
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        declared = set()
        for table in db.schema.tables:
            for row in conn.execute(f'PRAGMA foreign_key_list("{table.name}")'):
                declared.add((table.name, row[3], row[2], row[4]))
        wanted = {(f.table, f.column, f.ref_table, f.ref_column) for f in db.schema.foreign_keys}
        assert declared == wanted and wanted
        indexed = set()
        for table in db.schema.tables:
            for (index,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name=?", (table.name,)
            ):
                cols = [r[2] for r in conn.execute(f'PRAGMA index_info("{index}")')]
                indexed.add((table.name, cols[0]))
        assert {(f.table, f.column) for f in db.schema.foreign_keys} <= indexed
        # Every referenced row exists (the check above, by hand, for one join per key).
        for fk in db.schema.foreign_keys:
            (orphans,) = conn.execute(
                f'SELECT COUNT(*) FROM "{fk.table}" c LEFT JOIN "{fk.ref_table}" p '
                f'ON c."{fk.column}" = p."{fk.ref_column}" '
                f'WHERE c."{fk.column}" IS NOT NULL AND p."{fk.ref_column}" IS NULL'
            ).fetchone()
            assert orphans == 0, fk


def test_nullable_columns_hold_nulls_and_values_and_others_none(built) -> None:
    for db, conn in _cases(built):
        for table in db.schema.tables:
            for c in table.columns:
                nulls, values = conn.execute(
                    f'SELECT SUM("{c.name}" IS NULL), SUM("{c.name}" IS NOT NULL) '
                    f'FROM "{table.name}"'
                ).fetchone()
                where = f"{db.db_id}.{table.name}.{c.name}"
                assert values > 0, where
                if c.nullable:
                    assert nulls > 0, f"{where} is nullable but has no NULL"
                else:
                    assert nulls == 0, where


def test_every_column_described_and_every_table_a_noun() -> None:
    for domain in DOMAINS:
        schema = domain_schema(domain)
        for table in schema.tables:
            assert table.noun and table.noun.isascii(), table.name
            assert re.fullmatch(r"[a-z][a-z_]*", table.name)
            assert sum(c.primary_key for c in table.columns) == 1, table.name
            for c in table.columns:
                assert c.description and c.description.isascii(), (table.name, c.name)
                assert len(c.description) <= 60, (table.name, c.name)
                assert re.fullmatch(r"[a-z][a-z_]*", c.name)
                assert c.type in {"INTEGER", "REAL", "TEXT", "DATE"}
        kinds = {c.type for t in schema.tables for c in t.columns}
        assert kinds == {"INTEGER", "REAL", "TEXT", "DATE"}, domain
        assert any(c.nullable for t in schema.tables for c in t.columns)


def test_values_are_ascii_typed_and_spread_out(built) -> None:
    for db, conn in _cases(built):
        for table in db.schema.tables:
            n = db.row_counts[table.name]
            for c in table.columns:
                where = f"{db.db_id}.{table.name}.{c.name}"
                kinds = {
                    k
                    for (k,) in conn.execute(
                        f'SELECT DISTINCT typeof("{c.name}") FROM "{table.name}"'
                    )
                } - {"null"}
                expected = {"INTEGER": "integer", "REAL": "real", "TEXT": "text", "DATE": "text"}
                assert kinds == {expected[c.type]}, (where, kinds)
                values = [
                    v
                    for (v,) in conn.execute(
                        f'SELECT "{c.name}" FROM "{table.name}" ORDER BY rowid'
                    )
                ]
                present = [v for v in values if v is not None]
                distinct = set(present)
                assert len(distinct) >= 2, f"{where} holds one value"
                if c.type in ("TEXT", "DATE"):
                    for v in distinct:
                        # Plain words: no quote, semicolon, comment or newline that a
                        # value quoted into SQL or shown in a prompt could break out with.
                        assert SAFE_TEXT.fullmatch(v) and v == v.strip(), (where, v)
                if c.type == "DATE":
                    for v in distinct:
                        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", v), (where, v)
                        assert 1900 <= dt.date.fromisoformat(v).year <= 2025, (where, v)
                if c.type == "REAL":
                    assert all(abs(round(v, 2) - v) < 1e-9 for v in present), where
                    # Spread: many values, and no one value in most rows.
                    assert len(distinct) >= min(20, len(present) // 2), (where, len(distinct))
                    top = Counter(present).most_common(1)[0][1]
                    assert top <= max(0.35 * len(present), 2), (where, top)
                if c.primary_key:
                    assert values == list(range(1, n + 1)), where


def _pairs(conn: sqlite3.Connection, sql: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql).fetchall()


def test_dates_follow_each_other(built) -> None:
    """What a reader of the data would check first: nothing ends before it begins."""
    later = {
        "shop": [
            "SELECT COUNT(*) FROM orders WHERE ship_date < order_date",
            "SELECT COUNT(*) FROM orders o JOIN customers c USING (customer_id) "
            "WHERE o.order_date < c.signup_date",
            "SELECT COUNT(*) FROM orders WHERE status IN ('processing', 'cancelled') "
            "AND ship_date IS NOT NULL",
        ],
        "school": [
            "SELECT COUNT(*) FROM enrollments e JOIN sections s USING (section_id) "
            "WHERE e.enrolled_date >= s.start_date",
            "SELECT COUNT(*) FROM enrollments e JOIN sections s USING (section_id) "
            "JOIN students t USING (student_id) "
            "WHERE CAST(substr(s.term, -4) AS INTEGER) < t.enrollment_year",
            "SELECT COUNT(*) FROM enrollments WHERE (score IS NULL) <> (grade IS NULL)",
        ],
        "hospital": [
            "SELECT COUNT(*) FROM admissions WHERE discharge_date < admit_date",
            "SELECT COUNT(*) FROM admissions WHERE discharge_date IS NULL "
            "AND total_cost IS NOT NULL",
            "SELECT COUNT(*) FROM prescriptions p JOIN appointments a USING (appointment_id) "
            "WHERE a.status <> 'completed'",
        ],
        "flights": [
            "SELECT COUNT(*) FROM bookings b JOIN flights f USING (flight_id) "
            "WHERE b.booking_date >= f.departure_date",
            "SELECT COUNT(*) FROM flights WHERE origin_id = destination_id",
            "SELECT COUNT(*) FROM flights WHERE (status = 'delayed') <> "
            "(delay_minutes IS NOT NULL)",
            "SELECT COUNT(*) FROM flights f JOIN aircraft a USING (aircraft_id) "
            "WHERE a.airline_id <> f.airline_id",
            "SELECT COUNT(*) FROM (SELECT 1 FROM flights GROUP BY flight_number, departure_date "
            "HAVING COUNT(*) > 1)",
            "SELECT COUNT(*) FROM (SELECT 1 FROM flights GROUP BY flight_number "
            "HAVING COUNT(DISTINCT duration_minutes) > 1 OR COUNT(DISTINCT origin_id) > 1)",
            "SELECT COUNT(*) FROM flights a JOIN flights b ON b.flight_id = a.flight_id + 1 "
            "WHERE b.departure_date < a.departure_date",
        ],
        "library": [
            "SELECT COUNT(*) FROM loans WHERE return_date < loan_date OR due_date <= loan_date",
            "SELECT COUNT(*) FROM loans l JOIN copies c USING (copy_id) "
            "WHERE l.loan_date < c.acquired_date",
            "SELECT COUNT(*) FROM loans l JOIN members m USING (member_id) "
            "WHERE l.loan_date < m.join_date",
            "SELECT COUNT(*) FROM loans WHERE fine IS NOT NULL AND return_date <= due_date",
        ],
    }
    for db, conn in _cases(built):
        domain = db.schema.name
        for sql in later[domain]:
            assert _pairs(conn, sql) == [(0,)], (db.db_id, sql)


def test_categories_are_skewed(built) -> None:
    """The most common value of a category is well ahead of the rarest."""
    skewed = {
        "shop": ("orders", "status"),
        "school": ("courses", "credits"),
        "hospital": ("appointments", "status"),
        "flights": ("bookings", "cabin"),
        "library": ("members", "membership_type"),
    }
    for db, conn in _cases(built):
        table, column = skewed[db.schema.name]
        counts = [
            n
            for (n,) in conn.execute(
                f"SELECT COUNT(*) FROM {table} GROUP BY {column} ORDER BY COUNT(*) DESC"
            )
        ]
        assert len(counts) >= 3 and counts[0] >= 4 * counts[-1], (db.db_id, counts)


def test_identifiers_work_unquoted(built) -> None:
    """The question grammar and the agent write names bare: none is a keyword."""
    for db, conn in _cases(built):
        for table in db.schema.tables:
            for c in table.columns:
                conn.execute(f"SELECT {c.name} FROM {table.name} LIMIT 1").fetchall()


def test_the_ddl_and_indexes_load_in_a_fresh_sqlite() -> None:
    for domain in DOMAINS:
        schema = domain_schema(domain)
        conn = sqlite3.connect(":memory:")
        conn.executescript(schema.ddl() + "\n" + index_ddl(schema))
        (n,) = conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type='table'").fetchone()
        assert n == len(schema.tables)
        conn.close()


def test_schema_text_names_every_table_column_and_reference() -> None:
    for domain in DOMAINS:
        schema = domain_schema(domain)
        text = schema_text(schema)
        assert text == schema_text(domain_schema(domain))
        assert text.isascii()
        blocks = {b.splitlines()[0]: b.splitlines()[1:] for b in text.split("\n\n")[1:]}
        assert len(blocks) == len(schema.tables)
        for table in schema.tables:
            lines = blocks[f"TABLE {table.name} (one row per {table.noun})"]
            assert len(lines) == len(table.columns)
            for c, line in zip(table.columns, lines, strict=True):
                assert line.startswith(f"  {c.name} {c.type} ")
                assert c.description in line
                assert ("NOT NULL" in line) == (not c.nullable and not c.primary_key)
                assert ("PRIMARY KEY" in line) == c.primary_key
        for fk in schema.foreign_keys:
            assert f"REFERENCES {fk.ref_table}.{fk.ref_column}" in text
        assert len(text) < 6000, len(text)  # compact: it goes into every prompt


def test_bad_domain_or_seed_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="shop, school, hospital, flights, library"):
        build_database("bank", 0)
    with pytest.raises(ValueError, match="shop, school"):
        domain_schema("SHOP")
    for seed in (-1, 1.5, "3", True):
        with pytest.raises(ValueError, match="non-negative integer"):
            build_database("shop", seed)  # type: ignore[arg-type]


def test_a_huge_seed_builds() -> None:
    db = build_database("library", 2**63 + 5)
    assert db.db_id == f"library-{2**63 + 5}"


def test_postgresql_accepts_the_ddl_and_the_rows() -> None:
    """Each domain's DDL and indexes load into a schema of its own, a seed's rows
    insert with every foreign key enforced, and every name works unquoted."""
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine(postgres_url())
    try:
        with engine.connect() as conn:
            for domain in DOMAINS:
                db = build_database(domain, 0)
                name = f"envgym_sqldomains_test_{domain}_{os.getpid()}"
                raw = conn.connection.driver_connection
                try:
                    with raw.cursor() as cur:
                        cur.execute(f'CREATE SCHEMA "{name}"')
                        cur.execute(f'SET search_path TO "{name}"')
                        cur.execute(db.schema.ddl())
                        cur.execute(index_ddl(db.schema))
                        lite = _open(db)
                        for table in db.schema.tables:
                            rows = lite.execute(f'SELECT * FROM "{table.name}"').fetchall()
                            marks = ", ".join(["%s"] * len(table.columns))
                            cur.executemany(f'INSERT INTO "{table.name}" VALUES ({marks})', rows)
                            cur.execute(f'SELECT COUNT(*) FROM "{table.name}"')
                            assert cur.fetchone()[0] == db.row_counts[table.name]
                            for c in table.columns:
                                cur.execute(f"SELECT {c.name} FROM {table.name} LIMIT 1")
                        lite.close()
                finally:
                    raw.rollback()
                    with raw.cursor() as cur:
                        cur.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
                    raw.commit()
    finally:
        engine.dispose()
