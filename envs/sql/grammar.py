"""The question grammar's vocabulary: what a schema offers (labels, numbers, dates,
categories, foreign-key paths), conditions drawn from the data with their phrasing,
and the checks that keep a gold query unambiguous.

`shapes.py` and `nested.py` build the shapes from these parts, `questions.py`
checks them. Every literal a condition puts
in SQL is written into its phrase as the same characters, so a question names
what its gold query filters on.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import date, timedelta

import numpy as np

from envgym.envs.sql.schema import Column, Database, ForeignKey, Table

__all__ = [
    "day_number_sql",
    "kind",
    "Candidate",
    "Cond",
    "Context",
    "Link",
    "bare",
    "describe",
    "pick",
    "q",
    "sql_literal",
]

NUMERIC = ("INTEGER", "REAL")


def kind(column: Column) -> str:
    """``INTEGER``, ``REAL``, ``DATE`` or ``TEXT``: the column's type as the grammar
    treats it (a loaded database's ``number``, ``FLOAT`` or ``DATETIME`` included;
    a number of unknown kind is REAL, so never compared for equality)."""
    declared = column.type.upper()
    if "INT" in declared:
        return "INTEGER"
    if any(word in declared for word in ("REAL", "FLOA", "DOUB", "DEC", "NUM")):
        return "REAL"
    if "DATE" in declared or "TIME" in declared:
        return "DATE"
    return "TEXT"


def q(name: str) -> str:
    """A quoted identifier (the same in SQLite and PostgreSQL)."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: object) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, float):
        return repr(round(value, 2))
    return str(value)


def shown(value: object) -> str:
    """A value as a question shows it: text in plain quotes (``'O'Brien'``)."""
    return f"'{value}'" if isinstance(value, str) else sql_literal(value)


def pick(rng: np.random.Generator, options):
    """One of ``options`` (a sequence), drawn by ``rng``."""
    return options[int(rng.integers(len(options)))]


def _noun(table: Table) -> str:
    noun = table.noun.strip() or table.name.replace("_", " ")
    for article in ("a ", "an ", "the "):
        if noun.lower().startswith(article):
            return noun[len(article) :]
    return noun


def plural(noun: str) -> str:
    head, _, tail = noun.partition(" of ")
    if head.endswith(("s", "x", "ch", "sh")):
        head += "es"
    elif head.endswith("y") and head[-2:-1] not in "aeiou":
        head = head[:-1] + "ies"
    else:
        head += "s"
    return head + (" of " + tail if tail else "")


def bare(what: str) -> str:
    """A description without its leading article, to follow an adjective."""
    return what[4:] if what.lower().startswith("the ") else what


def describe(column: Column) -> str:
    """What a column holds, as a noun phrase (``"the patient's date of birth"``)."""
    text = column.description.strip().rstrip(".")
    return text or "the " + column.name.replace("_", " ")


@dataclass
class Cond:
    """A condition on one alias: its SQL and its phrase (``where ... is above 5``)."""

    sql: str
    text: str


# The most rows a question's answer may have.
MAX_ROWS = 50
# The most rows a join path may produce, estimated from the tables' row counts.
MAX_JOIN_ROWS = 60_000


@dataclass
class Link:
    """One join step: ``alias`` of ``table`` joined on the foreign key ``fk``."""

    table: str
    alias: str
    on: str


@dataclass
class Candidate:
    """A gold query before its checks.

    Args:
        sql: the gold query.
        text: the question.
        ordered: the answer's order is the gold query's ORDER BY.
        probe: the gold query with LIMIT k+1, whose column ``key`` must hold
            k+1 distinct values (no tie inside the top k or at its boundary).
        same_as: queries that must give the same rows (equivalent rewritings).
        count_as: a query that must give as many rows (names distinct exactly
            when the rows they stand for are).
        unrounded: a query whose float values must not sit on a rounding boundary.
        zero: queries whose single value must be 0 (no row on a float boundary).
        differs_from: queries that must give other rows: the gold query less one
            of its conditions (each condition the question states matters).
    """

    sql: str
    text: str
    ordered: bool = False
    probe: str = ""
    key: int = -1
    limit: int = 0
    same_as: list[str] = field(default_factory=list)
    count_as: str = ""
    unrounded: str = ""
    zero: list[str] = field(default_factory=list)
    differs_from: list[str] = field(default_factory=list)


class Context:
    """One database opened for the grammar: its tables' roles and distinct values."""

    def __init__(self, database: Database):
        self.database = database
        self.schema = database.schema
        self.conn = sqlite3.connect(":memory:", check_same_thread=False)
        self.conn.deserialize(database.sqlite_bytes)
        self.conn.execute("PRAGMA query_only = 1")
        self._values: dict[tuple[str, str], list] = {}
        fk_columns = {(fk.table, fk.column) for fk in self.schema.foreign_keys}
        self.tables = [t for t in self.schema.tables if self.rows(t.name) > 0]
        self.attrs: dict[str, list[Column]] = {
            t.name: [
                c for c in t.columns if not c.primary_key and (t.name, c.name) not in fk_columns
            ]
            for t in self.tables
        }

    def close(self) -> None:
        self.conn.close()

    def run(self, sql: str, limit: int = 0) -> list[tuple]:
        """The query's rows; with ``limit``, at most that many (SQLite stops there)."""
        cursor = self.conn.execute(sql)
        rows = cursor.fetchmany(limit) if limit else cursor.fetchall()
        cursor.close()
        return rows

    def rows(self, table: str) -> int:
        count = self.database.row_counts.get(table)
        if count is None:
            count = self.run(f"SELECT COUNT(*) FROM {q(table)}")[0][0]
        return count

    def table(self, name: str) -> Table:
        return self.schema.table(name)

    def noun(self, table: str) -> str:
        return _noun(self.table(table))

    def nouns(self, table: str) -> str:
        return plural(self.noun(table))

    def pk(self, table: str) -> Column | None:
        for column in self.table(table).columns:
            if column.primary_key:
                return column
        return None

    def label(self, table: str) -> Column:
        """The column that names a row: a non-null text column, ``name``-like first,
        that tells nine rows in ten apart; else the primary key. (A first name or an
        order's status names no row: a question listing them is ambiguous, and the
        checks would refuse nearly every one at the cost of running it.)"""
        columns = self.table(table).columns
        texts = [c for c in self.attrs[table] if kind(c) == "TEXT" and not c.nullable]
        named = [c for w in ("name", "title") for c in texts if w in c.name.lower()]
        rows = self.rows(table)
        for column in dict.fromkeys(named + texts):
            if len(self.values(table, column.name)) >= 0.9 * rows:
                return column
        return self.pk(table) or (texts or columns)[0]

    def values(self, table: str, column: str) -> list:
        """The column's distinct non-NULL values, sorted."""
        key = (table, column)
        if key not in self._values:
            col = q(column)
            sql = f"SELECT DISTINCT {col} FROM {q(table)} WHERE {col} IS NOT NULL ORDER BY {col}"
            self._values[key] = [row[0] for row in self.run(sql)]
        return self._values[key]

    def numbers(self, table: str) -> list[Column]:
        return [c for c in self.attrs[table] if kind(c) in NUMERIC and self.values(table, c.name)]

    def dates(self, table: str) -> list[Column]:
        return [c for c in self.attrs[table] if kind(c) == "DATE" and self.values(table, c.name)]

    def categories(self, table: str) -> list[Column]:
        """Columns worth grouping by: 2 to 20 distinct values, each shared by two
        rows on average or more, not REAL."""
        rows = self.rows(table)
        return [
            c
            for c in self.attrs[table]
            if kind(c) in ("TEXT", "INTEGER")
            and 2 <= len(self.values(table, c.name)) <= min(20, rows // 2)
        ]

    def links(self, table: str) -> list[tuple[str, ForeignKey]]:
        """The tables one foreign key away from ``table``, either way."""
        names = {t.name for t in self.tables}
        out = []
        for fk in self.schema.foreign_keys:
            if fk.table == table and fk.ref_table in names and fk.ref_table != table:
                out.append((fk.ref_table, fk))
            elif fk.ref_table == table and fk.table in names and fk.table != table:
                out.append((fk.table, fk))
        return out

    def path(self, rng: np.random.Generator, start: str, joins: int) -> list[Link] | None:
        """A random walk of ``joins`` foreign keys from ``start`` (T1), no table twice,
        whose join stays under `MAX_JOIN_ROWS` rows by the row counts (a walk up to a
        parent and down to its other children multiplies rows: copies of a branch
        times the branch's members times their loans). The bound keeps questions
        that a reset checks, and an agent runs, in milliseconds."""
        seen, here, out = {start}, start, []
        estimate = float(self.rows(start))
        for step in range(joins):
            options = []
            for t, fk in self.links(here):
                if t in seen:
                    continue
                # To a parent: at most one row each; to children: their rows per parent.
                grow = 1.0 if fk.table == here else self.rows(t) / max(1, self.rows(here))
                if estimate * grow <= MAX_JOIN_ROWS:
                    options.append((t, fk, grow))
            if not options:
                return None
            there, fk, grow = pick(rng, options)
            estimate *= max(grow, 1.0)
            alias, prev = f"T{step + 2}", f"T{step + 1}"
            if fk.table == here:
                on = f"{prev}.{q(fk.column)} = {alias}.{q(fk.ref_column)}"
            else:
                on = f"{alias}.{q(fk.column)} = {prev}.{q(fk.ref_column)}"
            out.append(Link(there, alias, on))
            seen.add(there)
            here = there
        return out

    def cond(self, rng: np.random.Generator, table: str, alias: str) -> Cond | None:
        """A condition on one of ``table``'s attributes, its value from the data."""
        columns = [c for c in self.attrs[table] if self.values(table, c.name)]
        if not columns:
            return None
        column = pick(rng, columns)
        values = self.values(table, column.name)
        ref, what = f"{alias}.{q(column.name)}", describe(column)
        if column.nullable and rng.random() < 0.25:
            return _null_cond(rng, ref, what)
        if kind(column) == "DATE":
            return _date_cond(rng, ref, what, values)
        if kind(column) in NUMERIC:
            return _number_cond(rng, ref, what, values, kind(column) == "REAL")
        return self._text_cond(rng, table, column, ref, what, values)

    def _text_cond(self, rng, table, column, ref, what, values) -> Cond | None:
        form = int(rng.integers(3))
        if form == 1 and len(values) >= 3:
            chosen = [values[i] for i in sorted(rng.choice(len(values), 3, replace=False))]
            items = ", ".join(sql_literal(v) for v in chosen)
            text = pick(rng, ["is one of {0}, {1} or {2}", "is {0}, {1} or {2}"])
            text = text.format(*(shown(v) for v in chosen))
            return Cond(f"{ref} IN ({items})", where(what, text, rng))
        if form == 2:
            value = str(pick(rng, values))
            prefix = value[: int(rng.integers(1, 4))]
            if len(value) > len(prefix) and prefix.replace(" ", "").isalnum():
                col, tbl = q(column.name), q(table)
                # SQLite's LIKE ignores ASCII case, PostgreSQL's does not: keep a
                # prefix only where both select the same rows.
                lit = sql_literal(prefix + "%")
                sql = f"SELECT COUNT(*) FROM {tbl} WHERE {col} LIKE {lit}"
                exact = f"SELECT COUNT(*) FROM {tbl} WHERE substr({col}, 1, {len(prefix)}) = ?"
                if self.run(sql)[0][0] == self.conn.execute(exact, (prefix,)).fetchone()[0]:
                    text = pick(rng, ["starts with {0}", "begins with {0}"]).format(shown(prefix))
                    return Cond(f"{ref} LIKE {lit}", where(what, text, rng))
        value = pick(rng, values)
        text = pick(rng, ["is {0}", "equals {0}"]).format(shown(value))
        return Cond(f"{ref} = {sql_literal(value)}", where(what, text, rng))


def where(what: str, phrase: str, rng: np.random.Generator) -> str:
    """``where <what> <phrase>`` in one of a few wordings."""
    return pick(rng, ["where {0} {1}", "for which {0} {1}", "such that {0} {1}"]).format(
        what, phrase
    )


def _null_cond(rng, ref, what) -> Cond:
    if rng.random() < 0.5:
        text = pick(rng, ["is missing", "is not recorded", "is unknown (NULL)"])
        return Cond(f"{ref} IS NULL", where(what, text, rng))
    text = pick(rng, ["is recorded", "is known (not NULL)"])
    return Cond(f"{ref} IS NOT NULL", where(what, text, rng))


def _threshold(rng, values: list, real: bool, low: float, high: float):
    """A value from the data's [low, high) quantiles; for a REAL column a number
    strictly between two neighbouring values (no float equality across engines)."""
    n = len(values)
    i = min(n - 1, int(low * n + rng.random() * (high - low) * n))
    if not real:
        return values[i]
    if i + 1 >= n:
        return None
    mid = round((values[i] + values[i + 1]) / 2, 2)
    return mid if values[i] < mid < values[i + 1] else None


def _number_cond(rng, ref, what, values, real) -> Cond | None:
    ops = [">", "<", "between"] + ([] if real else [">=", "<=", "=", "in"])
    op = pick(rng, ops)
    if op in (">", ">="):
        v = _threshold(rng, values, real, 0.6, 1.0)
        words = ["is greater than {0}", "is above {0}", "exceeds {0}"]
        if op == ">=":
            words = ["is at least {0}", "is {0} or more"]
    elif op in ("<", "<="):
        v = _threshold(rng, values, real, 0.0, 0.4)
        words = ["is less than {0}", "is below {0}", "is under {0}"]
        if op == "<=":
            words = ["is at most {0}", "is {0} or less"]
    elif op == "=":
        v, words = pick(rng, values), ["is {0}", "equals {0}", "is exactly {0}"]
    elif op == "in" and len(values) >= 3:
        chosen = sorted(rng.choice(len(values), size=3, replace=False).tolist())
        items = [sql_literal(values[i]) for i in chosen]
        text = pick(rng, ["is one of {0}, {1} or {2}", "is {0}, {1} or {2}"]).format(*items)
        return Cond(f"{ref} IN ({', '.join(items)})", where(what, text, rng))
    else:
        lo = _threshold(rng, values, real, 0.2, 0.6)
        hi = _threshold(rng, values, real, 0.6, 0.9)
        if lo is None or hi is None or not lo < hi:
            return None
        a, b = sql_literal(lo), sql_literal(hi)
        text = pick(rng, ["is between {0} and {1}", "lies between {0} and {1} (inclusive)"])
        return Cond(f"{ref} BETWEEN {a} AND {b}", where(what, text.format(a, b), rng))
    if v is None:
        return None
    lit = sql_literal(v)
    return Cond(f"{ref} {op} {lit}", where(what, pick(rng, words).format(lit), rng))


def year_sql(ref: str) -> str:
    """The year of a date, as SQLite writes it and sqlglot translates it."""
    return f"CAST(STRFTIME('%Y', {ref}) AS INTEGER)"


def day_number_sql(ref: str) -> str:
    """A date's day number (days since a fixed origin) in integer arithmetic on its
    year and day of the year: the days of the years before it, leap days included,
    plus its day of the year.

    sqlglot leaves SQLite's ``JULIANDAY`` untranslated but translates
    ``STRFTIME('%Y'|'%j', ...)``, and integer division of non-negative numbers means
    the same on both engines, so the difference of two of these is the days between
    two dates (``JULIANDAY(b) - JULIANDAY(a)`` for dates without a time)."""
    before = f"(CAST(STRFTIME('%Y', {ref}) AS INTEGER) - 1)"
    day = f"CAST(STRFTIME('%j', {ref}) AS INTEGER)"
    return f"(365 * {before} + {before} / 4 - {before} / 100 + {before} / 400 + {day})"


def _date_cond(rng, ref, what, values) -> Cond | None:
    kind = int(rng.integers(5))
    if kind == 0:
        v = sql_literal(_threshold(rng, values, False, 0.6, 1.0))
        text = pick(rng, ["is after {0}", "is later than {0}"]).format(v)
        return Cond(f"{ref} > {v}", where(what, text, rng))
    if kind == 1:
        v = sql_literal(_threshold(rng, values, False, 0.0, 0.4))
        text = pick(rng, ["is before {0}", "is earlier than {0}"]).format(v)
        return Cond(f"{ref} < {v}", where(what, text, rng))
    if kind == 2:
        year = int(str(pick(rng, values))[:4])
        text = pick(rng, ["falls in the year {0}", "is in {0}"]).format(year)
        return Cond(f"{year_sql(ref)} = {year}", where(what, text, rng))
    if kind == 3:
        a = _threshold(rng, values, False, 0.2, 0.6)
        b = _threshold(rng, values, False, 0.6, 0.9)
        if not a < b:
            return None
        a, b = sql_literal(a), sql_literal(b)
        text = pick(rng, ["is between {0} and {1}", "falls between {0} and {1} (inclusive)"])
        return Cond(f"{ref} BETWEEN {a} AND {b}", where(what, text.format(a, b), rng))
    return window_cond(rng, ref, what, values)


def window_cond(rng, ref, what, values) -> Cond | None:
    """Date arithmetic: within ``n`` days up to a day from the data (the start is
    computed here, so the gold query needs no engine-specific date function)."""
    try:
        end = date.fromisoformat(str(pick(rng, values))[:10])
    except ValueError:
        return None
    days = int(pick(rng, [7, 14, 30, 60, 90, 180, 365]))
    start = sql_literal((end - timedelta(days=days)).isoformat())
    stop = sql_literal(end.isoformat())
    text = pick(
        rng,
        [
            "is at most {0} days before {1} (and not after it)",
            "is no more than {0} days before {1}, and not after {1}",
        ],
    ).format(days, stop)
    return Cond(f"{ref} >= {start} AND {ref} <= {stop}", where(what, text, rng))
