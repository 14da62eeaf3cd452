"""The SQL env's generated databases: five domains (``shop``, ``school``,
``hospital``, ``flights``, ``library``), each a fixed schema of 6-8 tables
filled from a seed, no download.

``build_database(domain, seed)`` draws every row from
``numpy.random.default_rng([seed, DOMAINS.index(domain)])``, inserts them into
an in-memory SQLite database with foreign keys enforced (one transaction,
parents before children), indexes every foreign-key column and returns the
database's bytes (``sqlite3.Connection.serialize()``): the same bytes for the
same ``(domain, seed)`` in any process (with the same numpy and SQLite
releases: numpy does not promise a Generator's draws across releases).
``schema_text`` is the schema as the agent reads it. The database holds only
the schema's tables and their indexes, nothing about any question.

The data is realistic on purpose: nullable columns hold real NULLs, categories
are skewed (most orders are delivered, most seats economy), parents differ in
popularity, money is REAL with two decimals and spread out (few ties),
dates are ``YYYY-MM-DD`` text that follow each other (an order ships after it
is placed), and all text is plain ASCII words (no quote, semicolon or newline,
so a value quoted into SQL or shown in a prompt cannot break out).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from envgym.envs.sql import (
    domains_flights,
    domains_hospital,
    domains_library,
    domains_school,
    domains_shop,
)
from envgym.envs.sql.generate import Gen
from envgym.envs.sql.schema import Database, Schema

__all__ = ["DOMAINS", "build_database", "domain_schema", "index_ddl", "schema_text"]

DOMAINS: tuple[str, ...] = ("shop", "school", "hospital", "flights", "library")

_MODULES: dict[str, ModuleType] = {
    "shop": domains_shop,
    "school": domains_school,
    "hospital": domains_hospital,
    "flights": domains_flights,
    "library": domains_library,
}


def _module(domain: str) -> ModuleType:
    if not isinstance(domain, str) or domain not in _MODULES:
        raise ValueError(f"unknown SQL domain {domain!r}: choose one of {', '.join(DOMAINS)}")
    return _MODULES[domain]


def domain_schema(domain: str) -> Schema:
    """The schema of ``domain`` (the same for every seed)."""
    return _module(domain).SCHEMA


def index_ddl(schema: Schema) -> str:
    """``CREATE INDEX`` statements for every foreign-key column of ``schema``
    (SQLite and PostgreSQL alike), one per distinct column."""
    return "\n".join(_index_statements(schema))


def _index_statements(schema: Schema) -> list[str]:
    columns = dict.fromkeys((fk.table, fk.column) for fk in schema.foreign_keys)
    return [f'CREATE INDEX "idx_{t}_{c}" ON "{t}" ("{c}");' for t, c in columns]


def build_database(domain: str, seed: int) -> Database:
    """Generate the ``domain`` database for ``seed`` (a non-negative integer).

    Raises:
        ValueError: for an unknown domain (the message names the domains) or a
            seed that is not a non-negative integer.
    """
    module = _module(domain)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    schema: Schema = module.SCHEMA
    fill: Callable[[Gen], dict[str, dict[str, list[Any]]]] = module.fill
    data = fill(Gen(np.random.default_rng([int(seed), DOMAINS.index(domain)])))
    rows = {
        table.name: _rows(table.name, [c.name for c in table.columns], data)
        for table in schema.tables
    }
    if set(data) != set(rows):
        raise RuntimeError(
            f"{domain}: filled tables {sorted(data)} but the schema has {sorted(rows)}"
        )

    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys=ON")
        conn.executescript(schema.ddl())
        conn.execute("BEGIN")
        for table in schema.tables:
            marks = ", ".join("?" * len(table.columns))
            conn.executemany(f'INSERT INTO "{table.name}" VALUES ({marks})', rows[table.name])
        for statement in _index_statements(schema):
            conn.execute(statement)
        conn.execute("COMMIT")
        return Database(
            db_id=f"{domain}-{int(seed)}",
            schema=schema,
            sqlite_bytes=conn.serialize(),
            row_counts={table.name: len(rows[table.name]) for table in schema.tables},
        )
    finally:
        conn.close()


def _rows(table: str, columns: list[str], data: dict[str, dict[str, list[Any]]]) -> list[tuple]:
    """A table's rows from its filled columns (a bug in a domain, a missing or
    extra column or columns of different lengths, is an error here)."""
    filled = data.get(table, {})
    if list(filled) != columns:
        raise RuntimeError(f"{table}: filled columns {list(filled)}, schema columns {columns}")
    lengths = {name: len(values) for name, values in filled.items()}
    if len(set(lengths.values())) != 1:
        raise RuntimeError(f"{table}: columns of different lengths {lengths}")
    return list(zip(*(filled[c] for c in columns), strict=True))


def schema_text(schema: Schema) -> str:
    """The schema as the agent reads it: each table with what one row is, and
    each column with its type, NOT NULL or NULL, PRIMARY KEY, what it references
    and its description. Compact, ASCII, the same text for the same schema."""
    refs = {(fk.table, fk.column): f"{fk.ref_table}.{fk.ref_column}" for fk in schema.foreign_keys}
    lines = [f"Database {schema.name}: {len(schema.tables)} tables."]
    if any(c.type.upper() == "DATE" for t in schema.tables for c in t.columns):
        lines.append("DATE values are written YYYY-MM-DD.")
    for table in schema.tables:
        lines.append("")
        noun = f" (one row per {table.noun})" if table.noun else ""
        lines.append(f"TABLE {table.name}{noun}")
        for c in table.columns:
            words = [c.name, c.type]
            if c.primary_key:
                words.append("PRIMARY KEY")
            else:
                words.append("NULL" if c.nullable else "NOT NULL")
            if (table.name, c.name) in refs:
                words.append(f"REFERENCES {refs[table.name, c.name]}")
            line = "  " + " ".join(words)
            if c.description:
                line += f" -- {c.description}"
            lines.append(line)
    return "\n".join(lines).encode("ascii", "replace").decode("ascii")
