"""Questions with gold SQL, generated from a grammar over a database's schema.

`generate_question` draws a shape of its difficulty (`SHAPES`), fills it with
tables, columns and values taken from the data (`shapes.py`, `nested.py`), and
keeps the gold query only when its answer is non-empty, at most `MAX_ROWS` rows,
and unambiguous:

- no tie inside a top-k or at its LIMIT boundary (the row after the limit differs
  in the ordering key), and the same rows with a secondary order either way;
- the same rows under the rewritings checked here: grouped by name instead of by
  key, DISTINCT names instead of one row per answer (no two answers share a name);
- every condition the question states matters: the gold query less one of them
  gives other rows (so no question is answered by a bare dump of a column);
- floating aggregates rounded to 2 decimals in the gold query (``ROUND(AVG(x), 2)``),
  and no value on a rounding boundary or within float noise of a compared average.

Difficulty follows the gold query's structure: easy is one table (filters,
aggregates, top-k); medium is one or two joins, GROUP BY/HAVING, top-k over
groups, date arithmetic (years, windows, days between two dates); hard is three
joins, nested subqueries, set operations, or grouping over two joins.

Gold queries run on SQLite and translate to PostgreSQL with
``sqlglot.transpile(sql, read="sqlite", write="postgres")``: their only date
function is ``STRFTIME`` of a year, month or day; a date window's start is
computed here and days between two dates in integer arithmetic on their parts
(sqlglot leaves ``JULIANDAY`` and ``DATE(d, '+n days')`` untranslated).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections import Counter, OrderedDict

import numpy as np

from envgym.envs.sql import nested, shapes
from envgym.envs.sql.grammar import MAX_ROWS, Candidate, Context, pick, q
from envgym.envs.sql.schema import Database, Question

__all__ = ["MAX_ROWS", "SHAPES", "generate_question", "random_query"]

TRIES_PER_SHAPE = 8
SHAPE_DRAWS = 30

BUILDERS = {
    "filter": shapes.filter_,
    "count": shapes.count_,
    "aggregate": shapes.aggregate_,
    "count-distinct": shapes.count_distinct_,
    "top-k": shapes.top_k_,
    "join-filter": shapes.join_filter_,
    "join-aggregate": shapes.join_aggregate_,
    "group-count": lambda ctx, rng: shapes.group_(ctx, rng, having=False),
    "group-having": lambda ctx, rng: shapes.group_(ctx, rng, having=True),
    "join-group": lambda ctx, rng: shapes.join_group_(ctx, rng, top=False),
    "join-top-k": lambda ctx, rng: shapes.join_group_(ctx, rng, top=True),
    "date-year": shapes.date_year_,
    "date-window": shapes.date_window_,
    "date-diff": nested.date_diff,
    "join3-filter": nested.join3_filter,
    "join3-count": nested.join3_count,
    "subquery-in": nested.subquery_in,
    "subquery-scalar": nested.subquery_scalar,
    "subquery-extreme": nested.subquery_extreme,
    "set-op": nested.set_op,
    "join2-group-having": nested.join2_group_having,
}
SHAPES: dict[str, tuple[str, ...]] = {
    "easy": ("filter", "count", "aggregate", "count-distinct", "top-k"),
    "medium": (
        "join-filter",
        "join-aggregate",
        "group-count",
        "group-having",
        "join-group",
        "join-top-k",
        "date-year",
        "date-window",
        "date-diff",
    ),
    "hard": (
        "join3-filter",
        "join3-count",
        "subquery-in",
        "subquery-scalar",
        "subquery-extreme",
        "set-op",
        "join2-group-having",
    ),
}

# Opened databases, the most recent few: opening one deserializes its bytes and
# reads its columns' distinct values, which a run of questions shares.
_OPEN: OrderedDict[int, tuple[Database, Context]] = OrderedDict()
_LOCK = threading.Lock()


def _context(database: Database) -> Context:
    entry = _OPEN.get(id(database))
    if entry is not None and entry[0] is database:
        _OPEN.move_to_end(id(database))
        return entry[1]
    if not isinstance(database, Database):
        raise TypeError(f"expected an envgym.envs.sql.schema.Database, got {type(database)!r}")
    ctx = Context(database)
    _OPEN[id(database)] = (database, ctx)
    while len(_OPEN) > 16:
        _OPEN.popitem(last=False)[1][1].close()
    return ctx


def _same(a: list[tuple], b: list[tuple], ordered: bool) -> bool:
    return a == b if ordered else Counter(a) == Counter(b)


def _on_boundary(value: object) -> bool:
    """A float whose 2-decimal rounding another engine could do differently."""
    if not isinstance(value, float) or not math.isfinite(value):
        return False
    return abs((abs(value) * 100) % 1 - 0.5) < 1e-6


def acceptable(ctx: Context, cand: Candidate) -> bool:
    """Whether a candidate's answer is non-empty, small and unambiguous."""
    rows = ctx.run(cand.sql, limit=MAX_ROWS + 1)
    if not 1 <= len(rows) <= MAX_ROWS or all(v is None for row in rows for v in row):
        return False
    if cand.probe:
        keys = [row[cand.key] for row in ctx.run(cand.probe)]
        if None in keys or len(set(keys)) != len(keys):
            return False
    if any(not _same(ctx.run(sql), rows, cand.ordered) for sql in cand.same_as):
        return False
    if cand.count_as and len(ctx.run(cand.count_as)) != len(rows):
        return False
    if cand.unrounded and any(_on_boundary(v) for row in ctx.run(cand.unrounded) for v in row):
        return False
    if not all(ctx.run(sql)[0][0] == 0 for sql in cand.zero):
        return False
    for sql in cand.differs_from:
        other = ctx.run(sql, limit=len(rows) + 1)
        if len(other) == len(rows) and Counter(other) == Counter(rows):
            return False
    return True


def generate_question(
    database: Database, rng: np.random.Generator, difficulty: str, shape: str | None = None
) -> Question:
    """A question of ``difficulty`` about ``database`` with a checked gold query;
    with ``shape``, one of that shape of the difficulty (`SHAPES`).

    Deterministic in ``rng``'s state. Raises ValueError for an unknown difficulty
    or shape, or when no shape of it yields a checked question (a schema without
    foreign keys has no medium or hard questions, for instance).
    """
    if difficulty not in SHAPES:
        raise ValueError(f"difficulty must be one of {sorted(SHAPES)}, not {difficulty!r}")
    if shape is not None and shape not in SHAPES[difficulty]:
        raise ValueError(
            f"{difficulty} questions have the shapes {', '.join(SHAPES[difficulty])}; not {shape!r}"
        )
    with _LOCK:
        ctx = _context(database)
        wanted = [shape] if shape else list(SHAPES[difficulty])
        shapes = list(wanted)
        for _ in range(SHAPE_DRAWS):
            shape = pick(rng, shapes)
            for _ in range(TRIES_PER_SHAPE):
                cand = BUILDERS[shape](ctx, rng)
                if cand is not None and acceptable(ctx, cand):
                    return Question(
                        db_id=database.db_id,
                        text=cand.text,
                        gold_sql=cand.sql,
                        difficulty=difficulty,
                        shape=shape,
                        ordered=cand.ordered,
                    )
            if len(shapes) > 1:
                shapes.remove(shape)  # this database rarely answers it: try the others
    raise ValueError(
        f"no {difficulty} question found for database {database.db_id!r} after "
        f"{SHAPE_DRAWS} shape draws: its schema may lack what {', '.join(wanted)} "
        "need (foreign keys, numeric, date or category columns, rows)"
    )


def random_query(database: Database, rng: np.random.Generator) -> str:
    """A query of a random grammar shape with random values (unchecked): what the
    random agent submits. It runs on SQLite, though its answer may be empty."""
    all_shapes = [shape for group in SHAPES.values() for shape in group]
    with _LOCK:
        ctx = _context(database)
        for _ in range(50):
            try:
                cand = BUILDERS[pick(rng, all_shapes)](ctx, rng)
            except (sqlite3.Error, ValueError, TypeError):
                cand = None  # a loaded database's odd values: draw another shape
            if cand is not None:
                return cand.sql
        table = pick(rng, ctx.tables).name if ctx.tables else database.schema.tables[0].name
    return f"SELECT * FROM {q(table)} LIMIT 5"
