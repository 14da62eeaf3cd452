"""Spider and BIRD, read from the folder a user downloaded them to (never the network).

- **Spider 1.0** (yale-lily.github.io/spider): ``tables.json``, the questions
  (``dev.json``; ``train_spider.json`` and ``train_others.json`` for ``split="train"``;
  ``test.json`` with ``test_tables.json`` and ``test_database/`` for ``split="test"``),
  each ``{"db_id", "question", "query", ...}``, and the databases as
  ``database/<db_id>/<db_id>.sqlite``.
- **BIRD** (bird-bench.github.io): ``dev.json`` with ``dev_tables.json`` and
  ``dev_databases/<db_id>/<db_id>.sqlite`` (``train.json``, ``train_tables.json``,
  ``train_databases/`` for ``split="train"``), each question
  ``{"db_id", "question", "evidence", "SQL", "difficulty"}``.

A ``tables.json`` entry becomes a `Schema`: the original table and column names,
types mapped to INTEGER/REAL/TEXT (the SQLite file's declared type decides where it
is clear, else the JSON's: ``number``/``real`` -> REAL, ``integer``/``boolean`` ->
INTEGER, anything else -> TEXT), primary keys, foreign keys, and the readable names
(``"student id"`` for ``StuID``) as descriptions where they differ. A column is a
``primary_key`` when tables.json lists it as its table's only key column and the
rows agree (its values distinct, never NULL), so `Schema.ddl` holds the data; a
composite key (BIRD's ``[9, 10]``) marks none (`Schema` has no composite keys). A
column is NOT NULL where the SQLite file declares it or it is the key. The foreign
keys are the annotators', not checked against the rows (Spider's break some).

Difficulty: BIRD's own label (simple -> easy, moderate -> medium, challenging ->
hard). Spider's (and a BIRD question without a label) by the gold query's structure
(`envgym.envs.sql.structure.difficulty_of`): **hard** with a set operation
(UNION/INTERSECT/EXCEPT), a nested SELECT, or three or more table references;
**medium** with two (a self-join too) or a GROUP BY; else **easy**. A question is
``ordered`` when its gold query has a top-level ORDER BY.

A question whose ``db_id`` has no database file is refused (`SqlDataMissing`,
naming each missing file), not skipped: a benchmark that silently loses questions
reports numbers nobody can compare. The databases are read lazily: the returned
mapping (`SqlDatabases`) opens a ``.sqlite`` file the first time its ``db_id`` is
looked up and keeps the recent ones up to 1 GiB (BIRD's training databases are
33 GB together).

Some released gold queries cannot be scored: an empty (or all-NULL) result is
matched by any query that returns nothing, so a policy could earn it blind, and a
few fail or run for minutes on SQLite. `answerable` runs each gold query once and
keeps the ones that return 1..max_rows rows with a value in them; an env serving
loaded questions should serve only those.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envgym.envs.sql.schema import Database, Question
from envgym.envs.sql.tables_json import TablesEntry, ValidationError, explain, schema_of
from envgym.extras import require

__all__ = [
    "SqlDataMissing",
    "SqlDatabases",
    "SqlFormatError",
    "answerable",
    "check_bird_data",
    "check_spider_data",
    "find_sql_files",
    "load_bird",
    "load_spider",
    "sql_data_dir",
]

BIRD_DIFFICULTY = {"simple": "easy", "moderate": "medium", "challenging": "hard"}


class SqlDataMissing(FileNotFoundError):
    """Spider's or BIRD's files are not where envgym looked (the message names them)."""


class SqlFormatError(ValueError):
    """A Spider or BIRD file is not in its format (the message names the file and where)."""


@dataclass(frozen=True)
class _Layout:
    """Where one split of one dataset keeps its files, relative to ``data_dir``."""

    tables: str
    questions: tuple[str, ...]  # the first is required, the rest are read when present
    databases: str
    sql_key: str


_LAYOUTS: dict[str, dict[str, _Layout]] = {
    "spider": {
        "dev": _Layout("tables.json", ("dev.json",), "database", "query"),
        "train": _Layout(
            "tables.json", ("train_spider.json", "train_others.json"), "database", "query"
        ),
        "test": _Layout("test_tables.json", ("test.json",), "test_database", "query"),
    },
    "bird": {
        "dev": _Layout("dev_tables.json", ("dev.json",), "dev_databases", "SQL"),
        "train": _Layout("train_tables.json", ("train.json",), "train_databases", "SQL"),
    },
}

_HOW_TO_GET = {
    "spider": (
        "envgym reads Spider 1.0 as released (yale-lily.github.io/spider): unzip spider.zip "
        "and pass the folder that holds tables.json, dev.json, train_spider.json and "
        "database/<db_id>/<db_id>.sqlite as data_dir=, or set $ENVGYM_SPIDER_DATA to it "
        "(default: ~/.cache/envgym/spider)"
    ),
    "bird": (
        "envgym reads BIRD as released (bird-bench.github.io): unzip dev.zip, then "
        "dev_databases.zip inside it, and pass the folder that holds dev.json, "
        "dev_tables.json and dev_databases/<db_id>/<db_id>.sqlite as data_dir=, or set "
        "$ENVGYM_BIRD_DATA to it (default: ~/.cache/envgym/bird; train.zip likewise for "
        "split='train')"
    ),
}
_ENV_VARS = {"spider": "ENVGYM_SPIDER_DATA", "bird": "ENVGYM_BIRD_DATA"}


def _layout(dataset: str, split: str) -> _Layout:
    splits = _LAYOUTS.get(dataset)
    if splits is None:
        raise ValueError(f"unknown dataset {dataset!r}; use one of {sorted(_LAYOUTS)}")
    if split not in splits:
        raise ValueError(f"{dataset} has no split {split!r}; use one of {sorted(splits)}")
    return splits[split]


def sql_data_dir(dataset: str, data_dir: str | Path | None = None) -> Path:
    """`data_dir`, else ``$ENVGYM_SPIDER_DATA`` (``$ENVGYM_BIRD_DATA``), else
    ``~/.cache/envgym/spider`` (``bird``)."""
    _layout(dataset, "dev")
    if data_dir is None:
        data_dir = os.environ.get(_ENV_VARS[dataset]) or Path.home() / ".cache/envgym" / dataset
    return Path(data_dir).expanduser()


def _missing(dataset: str, folder: Path, given: bool, missing: list[str]) -> str:
    name = {"spider": "Spider", "bird": "BIRD"}[dataset]
    var = _ENV_VARS[dataset]
    if given:
        source = ""
    elif os.environ.get(var):
        source = f" (from ${var})"
    else:
        source = f" (the default folder; neither data_dir= nor ${var} was given)"
    return (
        f"{name} data missing in {folder}{source}: no {'; no '.join(missing)}.\n"
        f"{_HOW_TO_GET[dataset]}."
    )


def find_sql_files(
    dataset: str, data_dir: str | Path | None = None, split: str = "dev"
) -> str | None:
    """None when `data_dir` (see `sql_data_dir`) holds `dataset`'s (``"spider"`` or
    ``"bird"``) files for `split`, else a message naming what is missing, where envgym
    looked and how to get it."""
    layout = _layout(dataset, split)
    folder = sql_data_dir(dataset, data_dir)
    given = data_dir is not None
    if not folder.is_dir():
        return _missing(dataset, folder, given, ["such folder"])
    missing = [f"{name} (the tables)" for name in (layout.tables,) if not (folder / name).is_file()]
    if not (folder / layout.questions[0]).is_file():
        missing.append(f"{layout.questions[0]} (the questions)")
    if not (folder / layout.databases).is_dir():
        missing.append(f"{layout.databases}/ (the <db_id>/<db_id>.sqlite databases)")
    return _missing(dataset, folder, given, missing) if missing else None


def check_spider_data() -> None:
    """Raise `SqlDataMissing` unless Spider's dev files are in `sql_data_dir` (an
    `EnvSpec.data_check`)."""
    if (message := find_sql_files("spider")) is not None:
        raise SqlDataMissing(message)


def check_bird_data() -> None:
    """Raise `SqlDataMissing` unless BIRD's dev files are in `sql_data_dir` (an
    `EnvSpec.data_check`)."""
    if (message := find_sql_files("bird")) is not None:
        raise SqlDataMissing(message)


# ------------------------------------------------------------------ reading JSON
def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SqlFormatError(f"{path}: not UTF-8 text ({exc.reason})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SqlFormatError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); "
            "re-download or re-extract the file"
        ) from None


def _objects(path: Path, what: str) -> list[dict[str, Any]]:
    data = _read_json(path)
    if not isinstance(data, list) or not all(isinstance(row, dict) for row in data):
        raise SqlFormatError(f"{path}: expected a JSON array of {what} objects")
    return data


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def _read_database(path: Path, entry: TablesEntry, where: str) -> Database:
    """The database at `path` (read-only), its schema from `entry`, and its row counts."""
    try:
        conn = _connect(path)
        try:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT GLOB 'sqlite_*'"
                )
            ]
            by_lower = {n.lower(): n for n in names}
            declared: dict[str, dict[str, tuple[str, bool]]] = {}
            counts = {}
            for name in names:
                info = conn.execute(f"PRAGMA table_info({_quote(name)})").fetchall()
                declared[name.lower()] = {r[1].lower(): (r[2] or "", bool(r[3])) for r in info}
                counts[name] = conn.execute(f"SELECT COUNT(*) FROM {_quote(name)}").fetchone()[0]

            def unique(table: str, column: str) -> bool:
                if table.lower() not in by_lower:
                    return False
                t, c = _quote(by_lower[table.lower()]), _quote(column)
                sql = f"SELECT COUNT(*) = COUNT(DISTINCT {c}) AND COUNT(*) = COUNT({c}) FROM {t}"
                return bool(conn.execute(sql).fetchone()[0])

            missing = [t for t in entry.table_names_original if t.lower() not in by_lower]
            if missing:
                raise SqlFormatError(
                    f"{path}: has no table {', '.join(missing)} that {where} lists"
                )
            schema = schema_of(entry, declared, unique)
            data = conn.serialize()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise SqlFormatError(
            f"{path}: not a SQLite database, or not the one {where} describes ({exc})"
        ) from None
    return Database(
        db_id=schema.name,
        schema=schema,
        sqlite_bytes=data,
        row_counts={t.name: counts[by_lower[t.name.lower()]] for t in schema.tables},
    )


class SqlDatabases(Mapping[str, Database]):
    """The databases one split's questions use, by ``db_id``, each read from its
    ``.sqlite`` file the first time it is looked up. The most recently used stay in
    memory while their bytes add up to at most `cache_bytes` (1 GiB: all of Spider,
    BIRD's dev set nearly; the last one read always stays)."""

    def __init__(
        self, files: dict[str, tuple[Path, TablesEntry, str]], cache_bytes: int = 1 << 30
    ) -> None:
        self._files = files
        self.cache_bytes = cache_bytes
        self._cache: OrderedDict[str, Database] = OrderedDict()

    def __getitem__(self, db_id: str) -> Database:
        if db_id in self._cache:
            self._cache.move_to_end(db_id)
            return self._cache[db_id]
        path, entry, where = self._files[db_id]
        database = _read_database(path, entry, where)
        self._cache[db_id] = database
        held = sum(len(d.sqlite_bytes) for d in self._cache.values())
        while held > self.cache_bytes and len(self._cache) > 1:
            held -= len(self._cache.popitem(last=False)[1].sqlite_bytes)
        return database

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def path(self, db_id: str) -> Path:
        """The ``.sqlite`` file `db_id` is read from."""
        return self._files[db_id][0]

    def __repr__(self) -> str:
        return f"SqlDatabases({sorted(self._files)})"


# ---------------------------------------------------------------------- loading
def _text(row: dict[str, Any], key: str, where: str, *, optional: bool = False) -> str:
    value = row.get(key, "" if optional else None)
    if value is None and optional:
        return ""
    if not isinstance(value, str) or not (optional or value.strip()):
        raise SqlFormatError(f'{where}: expected a non-empty "{key}" string, got {value!r}')
    return value.strip()


def _load(
    dataset: str, data_dir: str | Path | None, split: str
) -> tuple[SqlDatabases, list[Question]]:
    layout = _layout(dataset, split)
    message = find_sql_files(dataset, data_dir, split)
    if message is not None:
        raise SqlDataMissing(message)
    # sqlglot reads each gold query's structure (the `sql` extra).
    require("sqlglot", extra="sql", purpose=f"loading {dataset}'s questions")
    from envgym.envs.sql import structure

    folder = sql_data_dir(dataset, data_dir)
    tables_path = folder / layout.tables
    entries: dict[str, tuple[TablesEntry, str]] = {}
    for i, raw in enumerate(_objects(tables_path, "database"), 1):
        try:
            entry = TablesEntry.model_validate(raw)
        except ValidationError as exc:
            name = f" ({raw['db_id']})" if isinstance(raw.get("db_id"), str) else ""
            raise SqlFormatError(
                f"{tables_path}: entry {i}{name}: not a tables.json entry ({explain(exc)})"
            ) from None
        entries[entry.db_id] = (entry, f"{tables_path}: entry {i} ({entry.db_id})")
    questions: list[Question] = []
    absent: dict[str, list[str]] = {}
    files: dict[str, tuple[Path, TablesEntry, str]] = {}
    for name in layout.questions:
        path = folder / name
        if not path.is_file():
            continue
        for i, row in enumerate(_objects(path, "question"), 1):
            where = f"{path}: question {i}"
            db_id = _text(row, "db_id", where)
            if Path(db_id).name != db_id or db_id.startswith("."):
                raise SqlFormatError(f"{where}: db_id {db_id!r} is not a database's folder name")
            gold = _text(row, layout.sql_key, where)
            if db_id not in entries:
                absent.setdefault(f"{db_id!r} in {tables_path.name}", []).append(where)
                continue
            db_path = folder / layout.databases / db_id / f"{db_id}.sqlite"
            if not db_path.is_file():
                absent.setdefault(str(db_path), []).append(where)
                continue
            files.setdefault(db_id, (db_path, *entries[db_id]))
            label = row.get("difficulty") if dataset == "bird" else None
            if label is not None and label not in BIRD_DIFFICULTY:
                raise SqlFormatError(
                    f'{where}: "difficulty" is {label!r}, not one of {list(BIRD_DIFFICULTY)}'
                )
            questions.append(
                Question(
                    db_id=db_id,
                    text=_text(row, "question", where),
                    gold_sql=gold,
                    difficulty=BIRD_DIFFICULTY.get(label) or structure.difficulty_of(gold),
                    shape=dataset,
                    ordered=structure.is_ordered(gold),
                    evidence=_text(row, "evidence", where, optional=True),
                )
            )
    if absent:
        lines = [f"  {what}: {len(use)} questions, first {use[0]}" for what, use in absent.items()]
        raise SqlDataMissing(
            f"{sum(map(len, absent.values()))} questions name a database envgym cannot find "
            f"(it refuses rather than drop them):\n" + "\n".join(lines) + "\n"
            f"{_HOW_TO_GET[dataset]}."
        )
    if not questions:
        raise SqlFormatError(f"{folder / layout.questions[0]} holds no questions")
    return SqlDatabases(files), questions


def load_spider(
    data_dir: str | Path | None = None, split: str = "dev"
) -> tuple[SqlDatabases, list[Question]]:
    """Spider's databases (by ``db_id``, read lazily) and its `split`'s questions
    (``dev``, ``train`` or ``test``) from the unzipped release in `data_dir` (see
    `sql_data_dir`)."""
    return _load("spider", data_dir, split)


def load_bird(
    data_dir: str | Path | None = None, split: str = "dev"
) -> tuple[SqlDatabases, list[Question]]:
    """BIRD's databases (by ``db_id``, read lazily) and its `split`'s questions
    (``dev`` or ``train``), with their evidence, from the unzipped release in
    `data_dir` (see `sql_data_dir`)."""
    return _load("bird", data_dir, split)


# ------------------------------------------------------------------ vetting gold
def answerable(
    databases: Mapping[str, Database],
    questions: list[Question],
    *,
    seconds: float = 10.0,
    max_rows: int = 10_000,
) -> tuple[list[Question], dict[str, list[int]]]:
    """The questions whose gold query can reward only a right answer, and the indices
    of the others by why. A released gold query may fail on SQLite (``"error"``),
    run past `seconds` (``"too slow"``), return more than `max_rows` rows (``"too
    many rows"``), or return no rows or only NULLs (``"empty"``): an agent that
    submits ``SELECT NULL WHERE 0`` would match an empty gold result without reading
    the question, so such a question cannot be scored. Each database is opened once
    (in memory, ``query_only``)."""
    dropped: dict[str, list[int]] = {"error": [], "too slow": [], "too many rows": [], "empty": []}
    by_db: dict[str, list[int]] = {}
    for i, question in enumerate(questions):
        by_db.setdefault(question.db_id, []).append(i)
    for db_id, indices in by_db.items():
        conn = sqlite3.connect(":memory:")
        try:
            conn.deserialize(databases[db_id].sqlite_bytes)
            conn.execute("PRAGMA query_only = ON")
            for i in indices:
                if (
                    why := _gold_problem(conn, questions[i].gold_sql, seconds, max_rows)
                ) is not None:
                    dropped[why].append(i)
        finally:
            conn.close()
    bad = {i for indices in dropped.values() for i in indices}
    return [q for i, q in enumerate(questions) if i not in bad], dropped


def _gold_problem(conn: sqlite3.Connection, sql: str, seconds: float, max_rows: int) -> str | None:
    deadline = time.monotonic() + seconds
    conn.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
    try:
        rows = conn.execute(sql).fetchmany(max_rows + 1)
    except sqlite3.Error:
        return "too slow" if time.monotonic() > deadline else "error"
    except (ValueError, OverflowError):  # several statements, text that is not UTF-8
        return "error"
    finally:
        conn.set_progress_handler(None, 0)
    if len(rows) > max_rows:
        return "too many rows"
    if all(value is None for row in rows for value in row):
        return "empty"
    return None
