"""SQL-v0's oracle and random agents.

The oracle reads the task's gold query from the env it was given (it sets the
ceiling: a query that returns the answer exists and the grader accepts it),
looks at one table first as an agent would, then submits the gold query. The
random agent submits a random query of the question grammar over the task's
database: a syntactically and semantically valid query that answers some
other question, which is what "random" means for text-to-SQL.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envgym.envs.sql.engine import gold_sql_for
from envgym.envs.sql.questions import random_query

__all__ = ["SQLOracle", "RandomSQLAgent"]


class SQLOracle:
    """Explores one table, then submits the gold query (in the engine's dialect)."""

    name = "oracle"

    def __init__(self, env: Any) -> None:
        self.env = env
        self._explored = False

    def reset(self) -> None:
        self._explored = False

    def act(self, observation: str, info: dict[str, Any]) -> str:
        env = self.env.unwrapped
        if not self._explored:
            self._explored = True
            table = env.database.schema.tables[0].name
            return f'<sql>SELECT * FROM "{table}" LIMIT 3</sql>'
        return f"<answer>{gold_sql_for(env.engine_name, env.question.gold_sql)}</answer>"


class RandomSQLAgent:
    """Submits one random grammar query over the task's database."""

    name = "random"

    def __init__(self, env: Any, seed: int | None = None) -> None:
        self.env = env
        self._rng = np.random.default_rng(seed)

    def reset(self) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return f"<answer>{random_query(self.env.unwrapped.database, self._rng)}</answer>"
