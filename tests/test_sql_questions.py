"""The SQL env's question grammar (envs/sql/questions.py) on a small clinic
database built here (tests/sql_question_db.py): every shape gives answerable,
unambiguous questions that name what they filter on; generation is deterministic
and keeps to its difficulty; gold queries translate to PostgreSQL with sqlglot
and, where ENVGYM_TEST_POSTGRES_URL is set, give the same rows there."""

from __future__ import annotations

import datetime
import decimal
import os
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from postgres_server import postgres_url

from envgym.envs.sql.domains import DOMAINS, build_database
from envgym.envs.sql.grammar import day_number_sql
from envgym.envs.sql.questions import MAX_ROWS, SHAPES, generate_question, random_query
from envgym.envs.sql.schema import Column, Database, Schema, Table

sys.path.insert(0, str(Path(__file__).parent))
from sql_question_db import SCHEMA, clinic_database, clinic_rows  # noqa: E402

sqlglot = pytest.importorskip("sqlglot")
exp = sqlglot.exp

SEEDS = range(120)


@pytest.fixture(scope="module")
def db() -> Database:
    return clinic_database(0)


@pytest.fixture(scope="module")
def questions(db):
    """(seed, question) for every difficulty over SEEDS."""
    return [
        (seed, generate_question(db, np.random.default_rng(seed), difficulty))
        for difficulty in SHAPES
        for seed in SEEDS
    ]


_CONNECTIONS: dict[int, tuple[Database, sqlite3.Connection]] = {}


def run(db: Database, sql: str) -> list[tuple]:
    """The rows of ``sql`` on a copy of ``db`` (one copy per database, kept)."""
    if id(db) not in _CONNECTIONS or _CONNECTIONS[id(db)][0] is not db:
        conn = sqlite3.connect(":memory:")
        conn.deserialize(db.sqlite_bytes)
        _CONNECTIONS[id(db)] = (db, conn)
    return _CONNECTIONS[id(db)][1].execute(sql).fetchall()


def descriptions(name: str) -> list[str]:
    """What a column is called in questions: its description, less a leading "the "."""
    return [
        c.description.removeprefix("the ")
        for t in SCHEMA.tables
        for c in t.columns
        if c.name == name
    ]


def test_every_shape_is_drawn_and_only_at_its_difficulty(questions):
    seen: dict[str, Counter] = {d: Counter() for d in SHAPES}
    for _, question in questions:
        assert question.shape in SHAPES[question.difficulty], question
        seen[question.difficulty][question.shape] += 1
    for difficulty, shapes in SHAPES.items():
        assert set(seen[difficulty]) == set(shapes), (difficulty, seen[difficulty])
    all_shapes = [s for shapes in SHAPES.values() for s in shapes]
    assert len(all_shapes) == len(set(all_shapes)), "a shape belongs to one difficulty"


def test_questions_are_answerable_and_unambiguous(db, questions):
    for _, question in questions:
        check_unambiguous(db, question)


def test_namesakes_do_not_make_ambiguous_answers():
    """Past 380 patients, names repeat: an answer listing names is kept only when
    no two of its rows share one (grouping or DISTINCT by name changes nothing)."""
    big = clinic_database(1, scale=4)
    assert len(run(big, "SELECT name FROM patients GROUP BY name HAVING COUNT(*) > 1")) > 100
    for difficulty in SHAPES:
        for seed in range(40):
            check_unambiguous(big, generate_question(big, np.random.default_rng(seed), difficulty))


def check_unambiguous(db, question):
    """What any kept question must be: answerable, small, no repeated row, no tie in a top-k."""
    rows = run(db, question.gold_sql)
    assert 1 <= len(rows) <= MAX_ROWS, question
    assert any(v is not None for row in rows for v in row), question
    # No two answer rows alike: DISTINCT, or grouping by name, changes nothing.
    assert len(set(rows)) == len(rows), question
    limit = re.search(r" LIMIT (\d+)$", question.gold_sql)
    assert question.ordered == bool(limit) == (" ORDER BY " in question.gold_sql)
    if limit:
        k = int(limit.group(1))
        unlimited = run(db, question.gold_sql[: limit.start()])
        keys = [row[-1] for row in unlimited[: k + 1]]
        assert len(set(keys)) == len(keys), f"a tie in the top {k} or after it: {question}"
        assert rows == unlimited[:k]


def test_floating_aggregates_are_rounded(db, questions):
    having_average = 0
    for _, question in questions:
        found = re.search(r"HAVING (AVG\(.*?\)) [<>] ([\d.]+)$", question.gold_sql)
        if found:
            having_average += 1
            head = question.gold_sql[: found.start()]
            head = head.replace(f"ROUND({found.group(1)}, 2)", found.group(1))
            threshold = float(found.group(2))
            assert all(abs(row[-1] - threshold) > 0.01 for row in run(db, head)), question
        for func in ("AVG(",):
            for match in re.finditer(re.escape(func), question.gold_sql):
                before = question.gold_sql[: match.start()]
                inside_subquery = before.rstrip().endswith("(SELECT")
                # HAVING compares an average with a threshold over 0.01 from any group's.
                compared = before.endswith("HAVING ")
                assert before.endswith("ROUND(") or inside_subquery or compared, question.gold_sql
        for match in re.finditer(r"SUM\(T\d\.\"(\w+)\"\)", question.gold_sql):
            if match.group(1) in ("salary", "weight_kg", "cost"):
                assert "ROUND(CAST(SUM(" in question.gold_sql, question.gold_sql
    assert having_average > 0


def _literal_checked(literal) -> bool:
    if literal.find_ancestor(exp.Limit, exp.Round) is not None:
        return False
    if isinstance(literal.parent, (exp.Add, exp.Sub, exp.Mul, exp.Div)):
        return False  # a constant of the day-number arithmetic
    return literal.this not in ("%Y", "%j")


def test_question_text_names_what_the_query_filters_on(questions):
    checked = 0
    for _, question in questions:
        tree = sqlglot.parse_one(question.gold_sql, read="sqlite")
        text = question.text
        for literal in tree.find_all(exp.Literal):
            if not _literal_checked(literal):
                continue
            value = literal.this[:-1] if literal.this.endswith("%") else literal.this
            if value not in text:
                # A date window names its end and its length, not its computed start.
                assert re.search(r"(\d+) days before", text), (value, question)
                continue
            predicate = literal.find_ancestor(
                exp.EQ, exp.GT, exp.LT, exp.GTE, exp.LTE, exp.In, exp.Between, exp.Like
            )
            if predicate is None:
                continue
            for column in predicate.find_all(exp.Column):
                if column.find_ancestor(exp.AggFunc, exp.Select) is not predicate.find_ancestor(
                    exp.Select
                ):
                    continue  # counted (HAVING COUNT(...) > n) or in a subquery
                assert any(d in text for d in descriptions(column.name)), (column.name, question)
                checked += 1
    assert checked > 200


def test_generation_is_deterministic(db):
    for difficulty in SHAPES:
        for seed in range(10):
            a = generate_question(db, np.random.default_rng(seed), difficulty)
            b = generate_question(clinic_database(0), np.random.default_rng(seed), difficulty)
            assert a == b
    code = (
        "import sys, numpy as np; sys.path.insert(0, 'tests');"
        "from sql_question_db import clinic_database;"
        "from envgym.envs.sql.questions import generate_question;"
        "q = generate_question(clinic_database(0), np.random.default_rng(7), 'hard');"
        "print(q.gold_sql); print(q.text)"
    )
    root = Path(__file__).parent.parent
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": str(hash_seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for hash_seed in (1, 2)
    }
    here = generate_question(db, np.random.default_rng(7), "hard")
    assert outputs == {here.gold_sql + "\n" + here.text + "\n"}


def test_generation_leaves_the_database_alone(db):
    before = bytes(db.sqlite_bytes)
    for seed in range(20):
        generate_question(db, np.random.default_rng(seed), "hard")
    assert db.sqlite_bytes == before
    # Neither the gold query nor its answer is stored in the database.
    tables = {row[0] for row in run(db, "SELECT name FROM sqlite_master")}
    assert tables == {t.name for t in SCHEMA.tables}


def test_days_between_two_dates_agree_with_julianday():
    """The days-between shape's integer day numbers (portable to PostgreSQL) give
    what SQLite's JULIANDAY gives, leap years and centuries included."""
    rng = np.random.default_rng(0)
    start = datetime.date(1899, 1, 1)
    pairs = [
        tuple(
            (start + datetime.timedelta(days=int(d))).isoformat() for d in rng.integers(0, 75000, 2)
        )
        for _ in range(5000)
    ]
    pairs += [
        ("2000-02-28", "2000-03-01"),
        ("1900-02-28", "1900-03-01"),
        ("2023-12-31", "2024-01-01"),
    ]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a DATE, b DATE)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", pairs)
    diff = f"{day_number_sql('b')} - {day_number_sql('a')}"
    rows = conn.execute(f"SELECT {diff}, JULIANDAY(b) - JULIANDAY(a) FROM t").fetchall()
    assert all(ours == theirs for ours, theirs in rows)
    assert rows[-3:] == [(2, 2.0), (1, 1.0), (1, 1.0)]


def test_gold_queries_translate_to_postgres(questions):
    for _, question in questions:
        (pg,) = sqlglot.transpile(
            question.gold_sql,
            read="sqlite",
            write="postgres",
            unsupported_level=sqlglot.ErrorLevel.RAISE,
        )
        assert not re.search(r"STRFTIME|JULIANDAY|DATE\(", pg, re.I), pg


def test_random_queries_run_and_rarely_answer_the_question(db):
    matches = errors = 0
    for seed in range(100):
        difficulty = list(SHAPES)[seed % 3]
        gold = run(db, generate_question(db, np.random.default_rng(seed), difficulty).gold_sql)
        sql = random_query(db, np.random.default_rng(10_000 + seed))
        assert isinstance(sql, str) and sql.startswith("SELECT ")
        try:
            guess = run(db, sql)
        except sqlite3.Error:
            errors += 1
            continue
        matches += Counter(guess) == Counter(gold)
    assert errors == 0
    assert matches <= 5, f"{matches} random queries out of 100 matched the gold answer"


def test_every_stated_condition_matters(db, questions):
    """Dropping a question's condition changes its answer: no question is
    answered by a bare dump of a column, and a set operation's second side counts."""
    assert sum(check_conditions_matter(db, question) for _, question in questions) > 50


def check_conditions_matter(db, question) -> int:
    """Asserts the gold query less its condition, or less one side of its set
    operation, gives other rows; returns how many such checks apply."""
    checked = 0
    gold = Counter(run(db, question.gold_sql))
    if question.shape in ("filter", "count", "join-filter", "join3-filter"):
        assert Counter(run(db, question.gold_sql.split(" WHERE ")[0])) != gold, question
        checked += 1
    if question.shape == "set-op":
        for op in (" UNION ", " INTERSECT ", " EXCEPT "):
            for side in question.gold_sql.split(op) if op in question.gold_sql else ():
                assert Counter(run(db, side)) != gold, question
                checked += 1
    return checked


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_shape_is_answerable_and_unambiguous_on_each_generated_domain(domain):
    """Per gold-query shape, on the database SQL-v0 plays (world seed 0): a few
    seeds each give a question of that shape whose answer is small, non-empty,
    free of ties and repeats, and changed by every condition it states."""
    db = build_database(domain, 0)
    for difficulty, shapes in SHAPES.items():
        for shape in shapes:
            texts = set()
            for seed in range(3):
                question = generate_question(db, np.random.default_rng(seed), difficulty, shape)
                assert (question.shape, question.difficulty) == (shape, difficulty)
                check_unambiguous(db, question)
                check_conditions_matter(db, question)
                texts.add(question.text)
            assert len(texts) > 1, f"{domain} {shape}: the seeds drew one question"
    with pytest.raises(ValueError, match="easy questions have the shapes"):
        generate_question(db, np.random.default_rng(0), "easy", "set-op")


def test_a_dump_of_every_table_matches_no_answer(db, questions):
    dumps = [Counter(run(db, f'SELECT * FROM "{t.name}"')) for t in SCHEMA.tables]
    for _, question in questions[::7]:
        assert Counter(run(db, question.gold_sql)) not in dumps


def test_loaded_column_types_are_understood():
    """A loaded database declares types as Spider does (``number``, ``text``,
    ``time``): the grammar still compares numbers as numbers and dates as dates."""
    schema = Schema(
        "loaded",
        (
            Table(
                "race",
                (
                    Column("race_id", "number", primary_key=True),
                    Column("name", "text"),
                    Column("laps", "number"),
                    Column("held", "time"),
                ),
                noun="a race",
            ),
        ),
    )
    conn = sqlite3.connect(":memory:")
    conn.executescript(schema.ddl())
    rng = np.random.default_rng(0)
    conn.executemany(
        "INSERT INTO race VALUES (?, ?, ?, ?)",
        [
            (i, f"Grand Prix {i}", float(rng.integers(40, 80)), f"{2000 + i % 20}-0{1 + i % 9}-15")
            for i in range(60)
        ],
    )
    conn.commit()
    database = Database("loaded-0", schema, conn.serialize())
    golds = []
    for seed in range(40):
        question = generate_question(database, np.random.default_rng(seed), "easy")
        check_unambiguous(database, question)
        golds.append(question.gold_sql)
        run(database, random_query(database, np.random.default_rng(seed)))
    # A "number" may hold reals: never compared for equality; "time" is a date.
    assert not any(re.search(r'"laps" (=|IN) ', gold) for gold in golds), golds
    assert any(re.search(r'"held" (<|>|BETWEEN|>=)', gold) for gold in golds), golds


def test_bad_input_gets_a_clear_error(db):
    with pytest.raises(ValueError, match="difficulty must be one of"):
        generate_question(db, np.random.default_rng(0), "expert")
    with pytest.raises(TypeError, match="Database"):
        generate_question(SCHEMA, np.random.default_rng(0), "easy")
    lone = Schema(
        "lone",
        (Table("items", (Column("id", "INTEGER", primary_key=True), Column("label", "TEXT"))),),
    )
    conn = sqlite3.connect(":memory:")
    conn.executescript(lone.ddl())
    conn.executemany("INSERT INTO items VALUES (?, ?)", [(i, f"item {i}") for i in range(30)])
    conn.commit()
    database = Database("lone-0", lone, conn.serialize())
    assert generate_question(database, np.random.default_rng(0), "easy").shape in SHAPES["easy"]
    with pytest.raises(ValueError, match="no medium question found for database 'lone-0'"):
        generate_question(database, np.random.default_rng(0), "medium")


# PostgreSQL: the translated gold queries give the same rows as on SQLite.


def _normal(value):
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()[:10]
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        return round(float(value), 6)
    return value


@pytest.fixture(scope="module")
def postgres():
    url = postgres_url()
    psycopg = pytest.importorskip("psycopg")
    conn = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True)
    schema = f"envgym_sqlq_{os.getpid()}"
    try:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'SET search_path TO "{schema}"')
        # PostgreSQL's REAL is single precision; SQLite's is double.
        conn.execute(SCHEMA.ddl().replace(" REAL", " DOUBLE PRECISION"))
        rows = clinic_rows(0)
        with conn.cursor() as cur:
            for table in SCHEMA.tables:
                marks = ", ".join("%s" for _ in table.columns)
                cur.executemany(f'INSERT INTO "{table.name}" VALUES ({marks})', rows[table.name])
        yield conn
    finally:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        conn.close()


def test_gold_queries_give_the_same_rows_on_postgres(db, questions, postgres):
    for _, question in questions:
        (pg,) = sqlglot.transpile(question.gold_sql, read="sqlite", write="postgres")
        there = [tuple(map(_normal, row)) for row in postgres.execute(pg).fetchall()]
        here = [tuple(map(_normal, row)) for row in run(db, question.gold_sql)]
        if question.ordered:
            assert there == here, (question, pg)
        else:
            assert Counter(there) == Counter(here), (question, pg)
