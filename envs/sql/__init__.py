"""envgym/SQL-v0: text-to-SQL over generated (or Spider/BIRD) databases on SQLite or
PostgreSQL, rewarded by execution match (docs/sql.md)."""

from envgym.envs.sql.sql import SQLEnv

__all__ = ["SQLEnv"]
