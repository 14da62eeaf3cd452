"""What the SQL env's parts share: a database's schema, a generated database,
and a question with its gold query.

The databases (`domains.py`, generated from seeds), the Spider/BIRD loaders
(`loaders.py`), the question grammar (`questions.py`), the engines
(`engine.py`) and the env (`sql.py`) all speak these types, so a database
loaded from Spider's files is used exactly as a generated one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Column", "Database", "ForeignKey", "Question", "Schema", "Table"]


@dataclass(frozen=True)
class Column:
    """One column: its name, SQL type (``INTEGER``, ``REAL``, ``TEXT``, ``DATE``),
    whether it may be NULL, and a short description for the question grammar
    (``"the patient's date of birth"``)."""

    name: str
    type: str
    nullable: bool = False
    primary_key: bool = False
    description: str = ""


@dataclass(frozen=True)
class ForeignKey:
    """``table.column`` references ``ref_table.ref_column``."""

    table: str
    column: str
    ref_table: str
    ref_column: str


@dataclass(frozen=True)
class Table:
    """One table: its name, columns, and what one row is (``"a patient"``)."""

    name: str
    columns: tuple[Column, ...]
    noun: str = ""

    def column(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"{self.name} has no column {name!r}")


@dataclass(frozen=True)
class Schema:
    """A database's tables and foreign keys."""

    name: str
    tables: tuple[Table, ...]
    foreign_keys: tuple[ForeignKey, ...] = ()

    def table(self, name: str) -> Table:
        for table in self.tables:
            if table.name == name:
                return table
        raise KeyError(f"{self.name} has no table {name!r}")

    def ddl(self) -> str:
        """CREATE TABLE statements (SQLite and PostgreSQL alike) for the whole schema."""
        statements = []
        for table in self.tables:
            parts = []
            for c in table.columns:
                parts.append(
                    f'"{c.name}" {c.type}'
                    + (" PRIMARY KEY" if c.primary_key else "")
                    + ("" if c.nullable or c.primary_key else " NOT NULL")
                )
            for fk in self.foreign_keys:
                if fk.table == table.name:
                    ref = f'"{fk.ref_table}"("{fk.ref_column}")'
                    parts.append(f'FOREIGN KEY ("{fk.column}") REFERENCES {ref}')
            statements.append(f'CREATE TABLE "{table.name}" (\n  ' + ",\n  ".join(parts) + "\n);")
        return "\n".join(statements)


@dataclass(frozen=True)
class Database:
    """A database the env can open: its schema and its rows as SQLite bytes
    (``sqlite3.Connection.serialize()``), with its id (``"hospital-0"`` for a
    generated one, Spider's ``db_id`` for a loaded one)."""

    db_id: str
    schema: Schema
    sqlite_bytes: bytes
    row_counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Question:
    """A question about one database and its gold query.

    Args:
        db_id: the database it is about.
        text: the question in natural language.
        gold_sql: the gold query (SQLite dialect; the PostgreSQL engine
            translates it with sqlglot).
        difficulty: ``easy``, ``medium`` or ``hard`` (by the gold query's structure).
        shape: the grammar rule that made it (``"filter"``, ``"join2-group-having"``,
            ...), or ``"spider"``/``"bird"`` for a loaded question.
        ordered: the gold query's ORDER BY decides the answer's row order (so a
            submitted answer's order is compared too).
        evidence: BIRD's external-knowledge hint, shown with the question.
    """

    db_id: str
    text: str
    gold_sql: str
    difficulty: str = "easy"
    shape: str = ""
    ordered: bool = False
    evidence: str = ""
