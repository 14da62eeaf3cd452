"""One entry of Spider's and BIRD's ``tables.json``, checked (pydantic), and the
`Schema` it becomes with what the database's SQLite file declares.

An entry lists the tables (``table_names_original``, and readable
``table_names``), the columns as ``[table index, name]`` pairs (``[-1, "*"]``
first), a type per column, the primary keys (column indices; a list for a
composite key) and the foreign keys (``[column, referenced column]``).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from envgym.envs.sql.schema import Column, ForeignKey, Schema, Table

__all__ = ["TablesEntry", "ValidationError", "explain", "schema_of"]

_JSON_TYPES = {"number": "REAL", "real": "REAL", "integer": "INTEGER", "boolean": "INTEGER"}


class TablesEntry(BaseModel):
    """A tables.json entry; the indices in it are checked to point at its tables
    and columns, so a broken file fails here, naming the field."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    db_id: str
    table_names_original: list[str]
    table_names: list[str] | None = None
    column_names_original: list[tuple[int, str]]
    column_names: list[tuple[int, str]] | None = None
    column_types: list[str]
    primary_keys: list[int | list[int]] = []
    foreign_keys: list[tuple[int, int]] = []

    @model_validator(mode="after")
    def _indices_point_inside(self) -> TablesEntry:
        tables, columns = len(self.table_names_original), len(self.column_names_original)
        for name, values in (
            ("table_names", self.table_names),
            ("column_names", self.column_names),
            ("column_types", self.column_types),
        ):
            want = tables if name == "table_names" else columns
            if values is not None and len(values) != want:
                raise ValueError(f"{name} has {len(values)} items, its *_original {want}")
        for t, name in self.column_names_original:
            if not (t == -1 or 0 <= t < tables):
                raise ValueError(f"column {name!r} is in table {t}; there are {tables} tables")
        used = [i for k in self.primary_keys for i in (k if isinstance(k, list) else [k])]
        used += [i for pair in self.foreign_keys for i in pair]
        for i in used:
            if not 0 <= i < columns or self.column_names_original[i][0] < 0:
                raise ValueError(f"a key names column {i}, which is not a table's column")
        return self


def explain(exc: ValidationError) -> str:
    """The first few problems pydantic found, one ``field: problem`` each."""
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}" for e in exc.errors()[:3]
    )


def _affinity(declared: str, json_type: str) -> str:
    """SQLite's affinity rules on the declared type; the JSON type where they say NUMERIC."""
    d = declared.upper()
    if "INT" in d:
        return "INTEGER"
    if any(k in d for k in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if any(k in d for k in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return _JSON_TYPES.get(json_type.lower(), "TEXT")


def _readable(name: str, original: str) -> str:
    return "" if name.replace(" ", "_").lower() == original.lower() else name


def schema_of(
    entry: TablesEntry,
    declared: dict[str, dict[str, tuple[str, bool]]],
    unique: Callable[[str, str], bool],
) -> Schema:
    """The `Schema` of `entry`. `declared` maps lower-case table and column names to
    the SQLite file's (declared type, NOT NULL); `unique(table, column)` says whether
    a column's values are distinct and never NULL, so that a key the annotators
    listed but the rows break is not declared (`Schema.ddl` must hold the rows)."""
    tables = entry.table_names_original
    names = entry.table_names or tables
    columns = entry.column_names_original
    readable = entry.column_names or columns
    singles: dict[int, list[int]] = {}  # table -> its single-column keys
    composite: set[int] = set()  # tables with a composite key
    for key in entry.primary_keys:
        if isinstance(key, list):
            composite.update(columns[i][0] for i in key)
        else:
            singles.setdefault(columns[key][0], []).append(key)
    by_table: dict[int, list[Column]] = {i: [] for i in range(len(tables))}
    for index, ((t, name), (_, nice), json_type) in enumerate(
        zip(columns, readable, entry.column_types, strict=True)
    ):
        if t < 0:  # Spider's [-1, "*"]
            continue
        decl, not_null = declared.get(tables[t].lower(), {}).get(name.lower(), ("", False))
        pk = singles.get(t) == [index] and t not in composite and unique(tables[t], name)
        by_table[t].append(
            Column(
                name=name,
                type=_affinity(decl, json_type),
                nullable=not (not_null or pk),
                primary_key=pk,
                description=_readable(nice, name),
            )
        )
    return Schema(
        name=entry.db_id,
        tables=tuple(
            Table(name=tables[i], columns=tuple(cols), noun=_readable(names[i], tables[i]))
            for i, cols in by_table.items()
        ),
        foreign_keys=tuple(
            ForeignKey(tables[columns[a][0]], columns[a][1], tables[columns[b][0]], columns[b][1])
            for a, b in entry.foreign_keys
        ),
    )
