"""Spider and BIRD loaders (envs/sql/loaders.py) on small files in their formats."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from sql_files import (
    BIRD_EXPECTED,
    BIRD_QUESTIONS,
    SPIDER_EXPECTED,
    SPIDER_QUESTIONS,
    SPIDER_TABLES,
    write_bird,
    write_spider,
    write_sqlite,
)

from envgym.envs.sql.loaders import (
    SqlDataMissing,
    SqlFormatError,
    answerable,
    check_bird_data,
    check_spider_data,
    find_sql_files,
    load_bird,
    load_spider,
)
from envgym.envs.sql.schema import Database, ForeignKey
from envgym.envs.sql.structure import difficulty_of, is_ordered


def _open(database: Database) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(database.sqlite_bytes)
    return conn


def _run(database: Database, sql: str) -> list[tuple]:
    conn = _open(database)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


# ------------------------------------------------------------------------ Spider
def test_spider_questions_keep_text_gold_query_and_structure(tmp_path: Path) -> None:
    databases, questions = load_spider(write_spider(tmp_path / "spider"))
    assert sorted(databases) == ["concert_singer", "pets_1"]
    assert [q.text for q in questions] == [q["question"] for q in SPIDER_QUESTIONS]
    assert [q.gold_sql for q in questions] == [q["query"] for q in SPIDER_QUESTIONS]
    assert [(q.difficulty, q.ordered) for q in questions] == SPIDER_EXPECTED
    assert {q.shape for q in questions} == {"spider"}
    assert all(q.evidence == "" for q in questions)


def test_spider_schema_from_tables_json_and_the_file(tmp_path: Path) -> None:
    databases, _ = load_spider(write_spider(tmp_path / "spider"))
    pets = databases["pets_1"].schema
    assert pets.name == "pets_1"
    assert [t.name for t in pets.tables] == ["Student", "Has_Pet", "Pets"]
    student = pets.table("Student")
    assert [c.name for c in student.columns] == ["StuID", "LName", "Fname", "Age", "Sex"]
    assert [c.type for c in student.columns] == ["INTEGER", "TEXT", "TEXT", "INTEGER", "TEXT"]
    assert student.column("StuID").primary_key and not student.column("StuID").nullable
    assert student.column("Fname").description == "first name"
    assert student.column("Age").description == ""  # same as its name: nothing to add
    assert pets.table("Pets").column("weight").type == "REAL"
    assert pets.table("Has_Pet").noun == ""  # "has pet" says no more than Has_Pet
    assert set(pets.foreign_keys) == {
        ForeignKey("Has_Pet", "StuID", "Student", "StuID"),
        ForeignKey("Has_Pet", "PetID", "Pets", "PetID"),
    }
    concert = databases["concert_singer"]
    singer = concert.schema.table("singer")
    assert not singer.column("Name").nullable  # NOT NULL in the file
    assert singer.column("Country").nullable
    assert concert.row_counts == {"stadium": 3, "singer": 4, "concert": 3, "singer_in_concert": 4}


def test_a_key_the_rows_break_is_not_declared(tmp_path: Path) -> None:
    """tables.json lists singer_in_concert.concert_ID as a key (Spider does this for
    composite keys), but concert 1 has two singers: the schema must not say so, or its
    DDL would refuse the database's own rows."""
    databases, _ = load_spider(write_spider(tmp_path / "spider"))
    concert = databases["concert_singer"]
    assert not concert.schema.table("singer_in_concert").column("concert_ID").primary_key
    assert concert.schema.table("stadium").column("Stadium_ID").primary_key
    _copy_through_ddl(concert)


def _copy_through_ddl(database: Database) -> None:
    """The schema's DDL builds tables that hold every row of the loaded database."""
    fresh = sqlite3.connect(":memory:")
    fresh.executescript(database.schema.ddl())
    source = _open(database)
    for table in database.schema.tables:
        names = ", ".join(f'"{c.name}"' for c in table.columns)
        rows = source.execute(f'SELECT {names} FROM "{table.name}"').fetchall()
        marks = ", ".join("?" * len(table.columns))
        fresh.executemany(f'INSERT INTO "{table.name}" VALUES ({marks})', rows)
        count = fresh.execute(f'SELECT COUNT(*) FROM "{table.name}"').fetchone()[0]
        assert count == database.row_counts[table.name]


@pytest.mark.parametrize("loader, write", [(load_spider, write_spider), (load_bird, write_bird)])
def test_every_gold_query_runs_on_its_database_and_returns_rows(tmp_path, loader, write) -> None:
    databases, questions = loader(write(tmp_path / "data"))
    for question in questions:
        rows = _run(databases[question.db_id], question.gold_sql)
        assert rows and any(v is not None for row in rows for v in row), question.text
    for database in databases.values():
        _copy_through_ddl(database)


def test_spider_gold_answers(tmp_path: Path) -> None:
    databases, questions = load_spider(write_spider(tmp_path / "spider"))
    answers = [_run(databases[q.db_id], q.gold_sql) for q in questions]
    assert answers[0] == [(4,)]
    assert [age for *_, age in answers[1]] == [52, 41, 32, 29]
    assert answers[3] == [("Linda",)]


def test_spider_train_reads_both_question_files(tmp_path: Path) -> None:
    folder = write_spider(tmp_path / "spider")
    (folder / "train_spider.json").write_text(json.dumps(SPIDER_QUESTIONS[:2]))
    (folder / "train_others.json").write_text(json.dumps(SPIDER_QUESTIONS[3:]))
    databases, questions = load_spider(folder, split="train")
    assert len(questions) == 4 and sorted(databases) == ["concert_singer", "pets_1"]


def test_databases_are_read_when_looked_up(tmp_path: Path) -> None:
    """A database file is opened when its db_id is looked up, not at load time."""
    folder = write_spider(tmp_path / "spider")
    databases, _ = load_spider(folder)
    (folder / "database" / "pets_1" / "pets_1.sqlite").write_bytes(b"not a database" * 100)
    assert databases["concert_singer"].row_counts["singer"] == 4
    with pytest.raises(SqlFormatError, match=r"pets_1\.sqlite: not a SQLite database"):
        databases["pets_1"]


def test_loading_leaves_the_files_untouched(tmp_path: Path) -> None:
    """Read-only: the release's files are byte-for-byte the same afterwards, and no
    journal or WAL file appears beside them."""
    folder = write_spider(tmp_path / "spider")
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    databases, questions = load_spider(folder)
    for question in questions:
        _run(databases[question.db_id], question.gold_sql)
    after = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert after == before


def test_the_gold_query_is_not_in_the_database(tmp_path: Path) -> None:
    """Loading copies the release's database as it is: nothing of the question or
    its gold query is written into the bytes an agent's queries read."""
    databases, questions = load_bird(write_bird(tmp_path / "bird"))
    for question in questions:
        data = databases[question.db_id].sqlite_bytes
        assert question.gold_sql.encode() not in data
        assert question.text.encode() not in data
        tables = _run(databases[question.db_id], "SELECT name FROM sqlite_master")
        assert len(tables) <= 4  # its own tables and their autoindexes, nothing added


# -------------------------------------------------------------------------- BIRD
def test_bird_questions_evidence_and_difficulty(tmp_path: Path) -> None:
    databases, questions = load_bird(write_bird(tmp_path / "bird"))
    assert sorted(databases) == ["california_schools", "debit_card_specializing"]
    assert [q.gold_sql for q in questions] == [q["SQL"] for q in BIRD_QUESTIONS]
    assert [q.evidence for q in questions] == [q["evidence"] for q in BIRD_QUESTIONS]
    assert [(q.difficulty, q.ordered) for q in questions] == BIRD_EXPECTED
    assert {q.shape for q in questions} == {"bird"}


def test_bird_schema_composite_key_and_quoted_columns(tmp_path: Path) -> None:
    databases, _ = load_bird(write_bird(tmp_path / "bird"))
    debit = databases["debit_card_specializing"].schema
    yearmonth = debit.table("yearmonth")
    assert not any(c.primary_key for c in yearmonth.columns)  # a composite key
    assert not yearmonth.column("Date").nullable  # NOT NULL in the file
    assert yearmonth.noun == "year and month"
    assert debit.table("customers").column("Segment").description == "client segment"
    assert debit.foreign_keys == (ForeignKey("yearmonth", "CustomerID", "customers", "CustomerID"),)
    schools = databases["california_schools"].schema
    frpm = schools.table("frpm")
    assert frpm.column("Free Meal Count (K-12)").type == "REAL"
    assert frpm.column("CDSCode").primary_key
    assert schools.table("schools").column("OpenDate").type == "TEXT"  # "date" is stored as text
    assert schools.table("schools").column("OpenDate").description == "open date"


def test_bird_question_without_a_label_gets_one_from_its_query(tmp_path: Path) -> None:
    folder = write_bird(tmp_path / "bird")
    rows = [{k: v for k, v in q.items() if k != "difficulty"} for q in BIRD_QUESTIONS]
    (folder / "dev.json").write_text(json.dumps(rows))
    _, questions = load_bird(folder)
    assert [q.difficulty for q in questions] == ["hard", "easy", "medium", "medium"]


def test_bird_unknown_difficulty_is_refused(tmp_path: Path) -> None:
    folder = write_bird(tmp_path / "bird")
    rows = [dict(BIRD_QUESTIONS[0], difficulty="trivial")]
    (folder / "dev.json").write_text(json.dumps(rows))
    with pytest.raises(SqlFormatError, match=r"dev\.json: question 1: .*'trivial'.*simple"):
        load_bird(folder)


# ------------------------------------------------------------ query structure
@pytest.mark.parametrize(
    "sql, difficulty, ordered",
    [
        ("SELECT name FROM singer WHERE age > 30", "easy", False),
        ("SELECT name FROM singer ORDER BY age LIMIT 1", "easy", True),
        ("SELECT country, count(*) FROM singer GROUP BY country", "medium", False),
        ("SELECT a.name FROM singer AS a JOIN singer AS b ON a.age = b.age", "medium", False),
        ("SELECT x FROM t1, t2 WHERE t1.k = t2.k ORDER BY x", "medium", True),
        ("SELECT a FROM t JOIN u ON t.k = u.k JOIN v ON u.j = v.j", "hard", False),
        ("SELECT name FROM s WHERE age > (SELECT avg(age) FROM s ORDER BY 1)", "hard", False),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY a", "hard", True),
        ("SELECT a FROM t EXCEPT SELECT b FROM u", "hard", False),
        ("SELECT name, rank() OVER (ORDER BY age) FROM singer", "easy", False),
        ("SELECT `Free Meal Count (K-12)` FROM frpm WHERE \"x(\" = 'a) ORDER BY'", "easy", False),
    ],
)
def test_difficulty_and_order_by_the_query_structure(sql, difficulty, ordered) -> None:
    assert difficulty_of(sql) == difficulty
    assert is_ordered(sql) is ordered


def test_a_query_sqlglot_cannot_parse_still_gets_a_structure() -> None:
    sql = "SELECT a FROM t JOIN u ON t.k = u.k WHERE ORDER BY a ((("
    assert is_ordered(sql)
    assert difficulty_of(sql) == "medium"


# ---------------------------------------------------------------- missing files
def test_find_sql_files_is_none_when_everything_is_there(tmp_path: Path) -> None:
    assert find_sql_files("spider", write_spider(tmp_path / "spider")) is None
    assert find_sql_files("bird", write_bird(tmp_path / "bird")) is None


def test_missing_folder(tmp_path: Path) -> None:
    folder = tmp_path / "nowhere"
    message = find_sql_files("spider", folder)
    assert message is not None and f"Spider data missing in {folder}: no such folder" in message
    assert "yale-lily.github.io/spider" in message
    with pytest.raises(SqlDataMissing, match="no such folder"):
        load_bird(folder)


@pytest.mark.parametrize(
    "dataset, write, remove, named",
    [
        ("spider", write_spider, "tables.json", "no tables.json (the tables)"),
        ("spider", write_spider, "dev.json", "no dev.json (the questions)"),
        ("spider", write_spider, "database", "no database/ (the <db_id>/<db_id>.sqlite"),
        ("bird", write_bird, "dev_tables.json", "no dev_tables.json (the tables)"),
        ("bird", write_bird, "dev.json", "no dev.json (the questions)"),
        ("bird", write_bird, "dev_databases", "no dev_databases/ (the <db_id>"),
    ],
)
def test_each_missing_file_is_named(tmp_path, dataset, write, remove, named) -> None:
    folder = write(tmp_path / dataset)
    target = folder / remove
    if target.is_dir():
        for path in sorted(target.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        target.rmdir()
    else:
        target.unlink()
    message = find_sql_files(dataset, folder)
    assert message is not None and named in message and str(folder) in message
    loader = load_spider if dataset == "spider" else load_bird
    with pytest.raises(SqlDataMissing) as info:
        loader(folder)
    assert str(info.value) == message


def test_a_question_whose_database_file_is_missing_is_refused(tmp_path: Path) -> None:
    folder = write_spider(tmp_path / "spider")
    missing = folder / "database" / "pets_1" / "pets_1.sqlite"
    missing.unlink()
    with pytest.raises(SqlDataMissing) as info:
        load_spider(folder)
    message = str(info.value)
    assert "2 questions name a database envgym cannot find" in message
    assert f"{missing}: 2 questions, first {folder / 'dev.json'}: question 4" in message


def test_a_question_whose_db_id_is_not_in_tables_json_is_refused(tmp_path: Path) -> None:
    folder = write_bird(tmp_path / "bird")
    rows = [*BIRD_QUESTIONS, dict(BIRD_QUESTIONS[1], db_id="formula_1")]
    (folder / "dev.json").write_text(json.dumps(rows))
    with pytest.raises(SqlDataMissing, match=r"'formula_1' in dev_tables\.json: 1 questions"):
        load_bird(folder)


def test_malformed_json_names_the_file_and_line(tmp_path: Path) -> None:
    folder = write_spider(tmp_path / "spider")
    text = (folder / "tables.json").read_text().splitlines()
    text[5] = text[5] + ","  # a stray comma on line 6
    (folder / "tables.json").write_text("\n".join(text))
    with pytest.raises(SqlFormatError, match=rf"{folder / 'tables.json'}:\d+:\d+: not valid JSON"):
        load_spider(folder)
    (folder / "tables.json").write_text(json.dumps({"db_id": "pets_1"}))
    with pytest.raises(SqlFormatError, match=r"tables\.json: expected a JSON array of database"):
        load_spider(folder)


def test_malformed_json_line_number(tmp_path: Path) -> None:
    folder = write_bird(tmp_path / "bird")
    (folder / "dev.json").write_text('[\n  {"db_id": "x",\n   "question": }\n]')
    with pytest.raises(SqlFormatError, match=rf"{folder / 'dev.json'}:3:\d+: not valid JSON"):
        load_bird(folder)


def test_a_question_without_its_gold_query(tmp_path: Path) -> None:
    folder = write_spider(tmp_path / "spider")
    rows = [{k: v for k, v in q.items() if k != "query"} for q in SPIDER_QUESTIONS]
    (folder / "dev.json").write_text(json.dumps(rows))
    with pytest.raises(
        SqlFormatError, match=r'dev\.json: question 1: expected a non-empty "query"'
    ):
        load_spider(folder)


def test_a_tables_entry_the_database_does_not_match(tmp_path: Path) -> None:
    folder = write_spider(tmp_path / "spider")
    write_sqlite(
        folder / "database" / "other" / "other.sqlite",
        "CREATE TABLE t (a INT); INSERT INTO t VALUES (1);",
    )
    pets = folder / "database" / "pets_1" / "pets_1.sqlite"
    pets.write_bytes((folder / "database" / "other" / "other.sqlite").read_bytes())
    databases, _ = load_spider(folder)
    with pytest.raises(
        SqlFormatError, match=r"pets_1\.sqlite: has no table Student, Has_Pet, Pets"
    ):
        databases["pets_1"]


def test_unknown_dataset_or_split(tmp_path: Path) -> None:
    folder = write_bird(tmp_path / "bird")
    with pytest.raises(
        ValueError, match=r"bird has no split 'test'; use one of \['dev', 'train'\]"
    ):
        load_bird(folder, split="test")
    with pytest.raises(
        ValueError, match=r"unknown dataset 'wikisql'; use one of \['bird', 'spider'\]"
    ):
        find_sql_files("wikisql", folder)


def test_the_folder_from_the_environment_or_the_default(tmp_path, monkeypatch) -> None:
    """Without data_dir=, $ENVGYM_SPIDER_DATA / $ENVGYM_BIRD_DATA name the folder; the
    zero-argument checks (an EnvSpec.data_check) say which folder was looked in."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ENVGYM_SPIDER_DATA", raising=False)
    with pytest.raises(SqlDataMissing) as info:
        check_spider_data()
    assert str(tmp_path / "home" / ".cache/envgym/spider") in str(info.value)
    assert "neither data_dir= nor $ENVGYM_SPIDER_DATA was given" in str(info.value)
    folder = write_bird(tmp_path / "my data #1?")  # a path a file: URI must escape
    monkeypatch.setenv("ENVGYM_BIRD_DATA", str(folder))
    check_bird_data()
    databases, questions = load_bird()
    assert len(questions) == 4 and databases["california_schools"].row_counts["frpm"] == 3
    monkeypatch.setenv("ENVGYM_BIRD_DATA", str(tmp_path / "gone"))
    with pytest.raises(SqlDataMissing, match=r"gone \(from \$ENVGYM_BIRD_DATA\): no such folder"):
        check_bird_data()


@pytest.mark.parametrize("db_id", ["../../outside", "/etc/passwd", ".hidden", "a/b"])
def test_a_db_id_cannot_point_outside_the_release(tmp_path: Path, db_id: str) -> None:
    folder = write_spider(tmp_path / "spider")
    write_sqlite(tmp_path / "outside" / "outside.sqlite", "CREATE TABLE t (a INT);")
    rows = [dict(SPIDER_QUESTIONS[0], db_id=db_id)]
    (folder / "dev.json").write_text(json.dumps(rows))
    with pytest.raises(SqlFormatError, match=r"question 1: db_id .* is not a database's folder"):
        load_spider(folder)


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"foreign_keys": [[-1, 1]]}, "a key names column -1, which is not a table's column"),
        ({"primary_keys": [0]}, "a key names column 0, which is not a table's column"),
        ({"column_types": ["text"]}, "column_types has 1 items, its \\*_original 12"),
        (
            {"column_names_original": [*SPIDER_TABLES[1]["column_names_original"][:-1], [7, "x"]]},
            "column 'x' is in table 7; there are 3 tables",
        ),
        ({"table_names_original": "Student"}, "table_names_original: Input should be a valid list"),
    ],
)
def test_a_broken_tables_entry_names_the_entry_and_the_problem(tmp_path, change, problem) -> None:
    """Indices are checked when the file is read (Python would read -1 as the last
    column and quietly build a wrong schema)."""
    folder = write_spider(tmp_path / "spider")
    tables = json.loads((folder / "tables.json").read_text())
    tables[1].update(change)
    (folder / "tables.json").write_text(json.dumps(tables))
    with pytest.raises(SqlFormatError, match=rf"tables\.json: entry 2 \(pets_1\): .*{problem}"):
        load_spider(folder)


def test_databases_beyond_the_cache_are_read_again_alike(tmp_path: Path) -> None:
    databases, _ = load_spider(write_spider(tmp_path / "spider"))
    databases.cache_bytes = 1  # keeps only the last one read
    first = databases["pets_1"]
    assert databases["pets_1"] is first  # held
    databases["concert_singer"]
    again = databases["pets_1"]  # read from its file again
    assert again is not first and again == first
    assert dict(databases) == {k: databases[k] for k in ("concert_singer", "pets_1")}


def test_answerable_drops_gold_queries_that_would_reward_a_blind_answer(tmp_path: Path) -> None:
    """An empty (or all-NULL) gold result would be matched by ``SELECT NULL WHERE 0``
    without reading the question; a gold query that fails, hangs, writes or floods
    cannot be scored. answerable keeps the rest, in order, and says why it dropped
    each of the others."""
    folder = write_spider(tmp_path / "spider")
    bad = {
        "SELECT name FROM singer WHERE age > 100": "empty",
        "SELECT max(age) FROM singer WHERE age > 100": "empty",
        "SELECT nope FROM singer": "error",
        "DELETE FROM singer": "error",
        "SELECT 1; DROP TABLE singer": "error",
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
        "SELECT count(*) FROM c": "too slow",
        "SELECT * FROM singer JOIN stadium JOIN concert": "too many rows",
    }
    rows = (
        SPIDER_QUESTIONS[:2]
        + [
            {"db_id": "concert_singer", "question": f"q{i}", "query": sql}
            for i, sql in enumerate(bad)
        ]
        + SPIDER_QUESTIONS[2:]
    )
    (folder / "dev.json").write_text(json.dumps(rows))
    databases, questions = load_spider(folder)
    kept, dropped = answerable(databases, questions, seconds=2.0, max_rows=20)
    assert [q.gold_sql for q in kept] == [q["query"] for q in SPIDER_QUESTIONS]
    assert {why: [questions[i].gold_sql for i in idx] for why, idx in dropped.items()} == {
        why: [sql for sql, w in bad.items() if w == why]
        for why in ("error", "too slow", "too many rows", "empty")
    }
    assert _run(databases["concert_singer"], "SELECT count(*) FROM singer") == [(4,)]
    bird, bird_questions = load_bird(write_bird(tmp_path / "bird"))
    assert answerable(bird, bird_questions)[0] == bird_questions
