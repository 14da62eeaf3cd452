"""envgym/SQL-v0: answer a question about a database with one SQL query.

The env draws a database (one of the generated domains of ``world_seed``, or
a Spider/BIRD database from ``data_dir``) and a question with its gold query;
the agent reads the schema, may run read-only queries, and submits one final
query. The reward is execution match: the submitted query's rows equal the
gold query's rows (as a multiset; in order only where the gold query's ORDER
BY decides it), compared by value on the trusted side (`engine.same_result`).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from envgym.arguments import match_task_id, setting, short_repr
from envgym.core import Preset, TextEnv, Turn
from envgym.envs.sql.domains import DOMAINS, build_database, schema_text
from envgym.envs.sql.engine import (
    QueryResult,
    format_result,
    gold_sql_for,
    make_engine,
    same_result,
)
from envgym.envs.sql.questions import generate_question
from envgym.envs.sql.schema import Database, Question
from envgym.parsing import first_tag, parse_tool_calls, strip_think
from envgym.text import to_ascii

__all__ = ["SQLEnv", "SQLPreset", "EXECUTE_SQL_TOOL"]

HINT = (
    "Run a read-only query with <sql>SELECT ...</sql> (or the execute_sql tool), "
    "and give your final query in <answer>SELECT ...</answer>."
)
EXECUTE_SQL_TOOL = {
    "type": "function",
    "function": {
        "name": "execute_sql",
        "description": "Run one read-only SQL query on the database; the rows come back.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "one SELECT statement"}},
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}
#: Rows a submitted answer may return (a gold answer has at most 50).
ANSWER_ROW_CAP = 10_000
FORMAT_PENALTY = -0.1
DATASETS = ("generated", "spider", "bird")


@dataclass(frozen=True)
class SQLPreset(Preset):
    world_seed: int = setting(0, 0, 2**31 - 1, "the seed of the generated databases")
    max_rows: int = setting(20, 1, 200, "result rows shown per query")


class SQLEnv(TextEnv):
    """Answer a question about a relational database with one SQL query.

    ## Description
    Text-to-SQL with execution feedback (VerlTool's and SkyRL's SQL settings,
    BIRD, Spider). Each task is a database and a question about it: by
    default one of five generated domains (shop, school, hospital, flights,
    library; 4-12 tables with keys, foreign keys, NULLs and dates, filled from
    ``world_seed``) and a question from a grammar over its schema with a gold
    query checked to have one non-empty, unambiguous answer; with
    ``dataset="spider"`` or ``"bird"`` and ``data_dir=``, the questions and
    SQLite databases of those datasets. Queries run on SQLite in-process
    (read-only, time-limited, row-capped) or on PostgreSQL
    (``engine="postgresql://..."``: a schema per database, a read-only role,
    ``statement_timeout``, every episode in a transaction rolled back).

    ## Action Space
    Text: ``<sql>SELECT ...</sql>`` or an ``execute_sql`` tool call
    (``<tool_call>{"name": "execute_sql", "arguments": {"query": ...}}</tool_call>``)
    runs a query; ``<answer>SELECT ...</answer>`` submits the final query and
    ends the episode. The first of these in a reply is taken.

    ## Observation Space
    Text: the engine, the schema (tables, columns, types, keys, descriptions)
    and the question (with BIRD's evidence); after a query, its rows as a
    bounded text table in ``<result>...</result>`` (at most ``max_rows`` rows
    shown, with the total) or the engine's error message.

    ## Starting State
    A database and question drawn from the seed, or ``options["task_id"]``
    (e.g. ``hospital-medium-123``; ``spider-dev-7`` for loaded questions).

    ## Rewards
    At the answer only: ``matches`` 1.0 when the submitted query's result
    equals the gold query's (rows as a multiset, in order only where the gold
    query orders; numbers compared as numbers, NULL only equal to NULL, column
    order and count compared, names ignored), else 0. A reply with no query
    and no answer gets ``format`` -0.1. ``info["grade"]`` says whether the
    answer parsed, executed and matched (parsing and running pay nothing: a
    reward for a query that merely runs would be earned by ``SELECT 1``).

    ## Episode End
    Terminated by an answer; truncated after ``max_turns``.

    ## Arguments
    ``difficulty``: ``easy`` (one table: filters, aggregates, top-k; 5 turns),
    ``medium`` (one or two joins, GROUP BY/HAVING, date functions; 8 turns),
    ``hard`` (three joins, nested subqueries, set operations; 10 turns).
    ``engine``: ``"sqlite"`` or a PostgreSQL URL. ``dataset``: ``generated``,
    ``spider`` or ``bird`` (then ``data_dir`` and ``split``). ``world_seed``,
    ``max_rows``, ``max_turns``.

    ## Version History
    * v0: initial version.
    """

    presets: ClassVar[dict[str, SQLPreset]] = {
        "easy": SQLPreset(max_turns=5),
        "medium": SQLPreset(max_turns=8),
        "hard": SQLPreset(max_turns=10),
    }
    system_prompt: ClassVar[str] = (
        "You answer questions about a database with SQL. " + HINT + " Only the final "
        "query's result is graded: it must return exactly the rows the question asks for."
    )
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("_engine", "_session", "_session_db", "_loaded")

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        engine: str = "sqlite",
        dataset: str = "generated",
        data_dir: str | None = None,
        split: str = "dev",
        world_seed: int | None = None,
        max_rows: int | None = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            difficulty=difficulty,
            render_mode=render_mode,
            world_seed=world_seed,
            max_rows=max_rows,
            max_turns=max_turns,
        )
        if dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {DATASETS}, got {short_repr(dataset)}")
        if dataset != "generated" and data_dir is None:
            raise ValueError(f'dataset="{dataset}" needs data_dir=, the folder of its files')
        self.dataset, self.data_dir, self.split = dataset, data_dir, split
        self._engine = make_engine(engine)
        self._session: Any = None
        self._session_db: str | None = None
        self._loaded: tuple[dict[str, Database], list[Question]] | None = None
        if dataset != "generated":
            self._loaded = _load(dataset, str(data_dir), split)
        self.database: Database | None = None
        self.question: Question | None = None

    # ------------------------------------------------------------------ reset
    def _new_task(self, options: dict[str, Any]) -> str:
        if self.dataset == "generated":
            self.database, self.question = self._generated_task(options)
        else:
            self.database, self.question = self._loaded_task(options)
        self._gold: QueryResult | None = None
        self.queries = 0
        self.rows_read = 0
        self.engine_seconds = 0.0
        self._open_session()
        return self._first_observation()

    def _generated_task(self, options: dict[str, Any]) -> tuple[Database, Question]:
        if "task_id" in options:
            match = match_task_id(
                options["task_id"],
                _GENERATED_ID,
                "an SQL-v0 task id",
                "e.g. hospital-medium-123",
            )
            domain, level, task_seed = match[1], match[2], int(match[3])
            if domain not in DOMAINS:
                raise ValueError(f"task_id names no domain; the domains are {DOMAINS}")
            if level != self.difficulty:
                self._set_difficulty(level)
        else:
            domain = DOMAINS[int(self.np_random.integers(len(DOMAINS)))]
            task_seed = int(self.np_random.integers(2**31))
        self.task_id = f"{domain}-{self.difficulty}-{task_seed}"
        database = _generated(domain, self.config.world_seed)
        rng = np.random.default_rng([task_seed, DOMAINS.index(domain)])
        return database, generate_question(database, rng, self.difficulty)

    def _loaded_task(self, options: dict[str, Any]) -> tuple[Database, Question]:
        databases, questions = self._loaded
        pool = [i for i, q in enumerate(questions) if q.difficulty == self.difficulty]
        if not pool:
            raise ValueError(
                f"{self.dataset} ({self.split}) has no {self.difficulty} question; "
                "choose another difficulty"
            )
        prefix = f"{self.dataset}-{self.split}-"
        if "task_id" in options:
            task_id = options["task_id"]
            pattern = re.compile(re.escape(prefix) + r"(\d+)\Z")
            index = int(match_task_id(task_id, pattern, f"a {prefix}N id", f"e.g. {prefix}0")[1])
            if not 0 <= index < len(questions):
                raise ValueError(f"task_id {short_repr(task_id)}: no question {index}")
            level = questions[index].difficulty
            if level != self.difficulty:
                self._set_difficulty(level)
        else:
            index = pool[int(self.np_random.integers(len(pool)))]
        self.task_id = f"{prefix}{index}"
        question = questions[index]
        return databases[question.db_id], question

    def _open_session(self) -> None:
        if self._session is not None:
            self._session.close()
        self._session = self._engine.session(self.database)
        self._session_db = self.database.db_id

    def _first_observation(self) -> str:
        question = self.question
        evidence = f"\nEvidence: {question.evidence}" if question.evidence else ""
        return (
            f"Database {self.database.db_id} ({self._engine.name}).\n\n"
            f"{schema_text(self.database.schema)}\n\n"
            f"Question: {question.text}{evidence}\n\n{HINT}"
        )

    # ------------------------------------------------------------------ step
    def _act(self, action: str) -> Turn:
        if self._session is None or self._session_db != self.database.db_id:
            self._open_session()  # restored from a snapshot of another task or env
        kind, value = first_tag(action, ("sql", "answer"), tool_calls=True, hint=HINT)
        if kind == "tool_call":
            calls, error = parse_tool_calls(strip_think(action))
            call = calls[0] if calls else None
            if call is None or call.name != "execute_sql" or len(calls) > 1:
                problem = error or "Call one tool, execute_sql, per reply."
                return Turn(f"{problem} {HINT}", {"format": FORMAT_PENALTY}, action_valid=False)
            query = call.arguments.get("query")
            if not isinstance(query, str):
                return Turn(
                    f'execute_sql takes {{"query": "SELECT ..."}}. {HINT}',
                    {"format": FORMAT_PENALTY},
                    action_valid=False,
                )
            return self._query(query)
        if kind == "sql":
            return self._query(_raw_content(action, "sql"))
        if kind == "answer":
            return self._answer(_raw_content(action, "answer"))
        return Turn(value, {"format": FORMAT_PENALTY}, action_valid=False)

    def _run(self, sql: str, row_cap: int) -> QueryResult:
        result = self._session.run(sql, row_cap=row_cap)
        self.queries += 1
        self.rows_read += result.rows_read
        self.engine_seconds += result.seconds
        return result

    def _query(self, sql: str) -> Turn:
        result = self._run(sql, row_cap=max(self.config.max_rows, 1000))
        table = to_ascii(format_result(result, max_rows=self.config.max_rows))
        return Turn(f"<result>\n{table}\n</result>", {"matches": 0.0})

    def _answer(self, sql: str) -> Turn:
        parses = bool(sql.strip())
        result = self._run(sql, row_cap=ANSWER_ROW_CAP) if parses else None
        executes = bool(result is not None and result.ok and not result.truncated)
        matches = bool(executes and same_result(result, self._gold_result(), self.question.ordered))
        if matches:
            text = "Correct: your query returns the right rows."
        elif executes:
            text = f"Not correct: your query returned {len(result.rows)} row(s), not the answer."
        else:
            why = "it is empty" if result is None else (result.error or "too many rows")
            text = f"Not correct: your final query did not run ({to_ascii(why)[:1000]})."
        grade = {"parses": parses, "executes": executes, "matches": matches}
        return Turn(
            text,
            {"matches": float(matches)},
            terminated=True,
            success=matches,
            extra_info={"grade": grade},
        )

    def _gold_result(self) -> QueryResult:
        if self._gold is None:
            sql = gold_sql_for(self._engine.name, self.question.gold_sql)
            self._gold = self._session.run(sql, row_cap=ANSWER_ROW_CAP)
            if not self._gold.ok:
                raise RuntimeError(f"task {self.task_id}: the gold query fails: {self._gold.error}")
        return self._gold

    @property
    def engine_name(self) -> str:
        """``sqlite`` or ``postgresql``: the dialect the gold query is run in."""
        return self._engine.name

    # ------------------------------------------------------------------ info
    def _task_info(self) -> dict[str, Any]:
        if self.question is None:
            return {}
        return {
            "tools": [EXECUTE_SQL_TOOL],
            "cost": {
                "queries": self.queries,
                "rows_read": self.rows_read,
                "engine_seconds": round(self.engine_seconds, 6),
            },
            "state_key": f"{self.task_id}:{self.queries}",
            "privileged": {
                "gold_sql": self.question.gold_sql,
                "db_id": self.database.db_id,
                "shape": self.question.shape,
                "ordered": self.question.ordered,
            },
        }

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
        self._engine.close()
        super().close()


_GENERATED_ID = re.compile(r"^([a-z]+)-(easy|medium|hard)-(\d{1,10})$")


@lru_cache(maxsize=16)
def _generated(domain: str, world_seed: int) -> Database:
    return build_database(domain, world_seed)


@lru_cache(maxsize=4)
def _load(dataset: str, data_dir: str, split: str) -> tuple[dict[str, Database], list[Question]]:
    from envgym.envs.sql import loaders

    loader = loaders.load_spider if dataset == "spider" else loaders.load_bird
    databases, questions = loader(data_dir, split)
    # A gold query that fails, runs long or returns nothing cannot reward only a
    # right answer (an empty gold result is matched by SELECT NULL WHERE 0).
    kept, dropped = loaders.answerable(databases, questions)
    left_out = {why: len(indices) for why, indices in dropped.items() if indices}
    if left_out:
        warnings.warn(
            f"{dataset} ({split}): {sum(left_out.values())} of {len(questions)} questions "
            f"left out, their gold query unusable as a grader ({left_out})",
            stacklevel=2,
        )
    return databases, kept


def _raw_content(reply: str, tag: str) -> str:
    """The first ``<tag>...</tag>``'s content as written (SQL keeps its spacing)."""
    body = strip_think(reply)
    lowered = body.lower() if body.isascii() else body.translate(_ASCII_LOWER)
    start = lowered.find(f"<{tag}>")
    end = lowered.find(f"</{tag}>", start)
    return body[start + len(tag) + 2 : end].strip()


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
