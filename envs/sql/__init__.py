"""envgym/SQL-v0: text-to-SQL over generated (or Spider/BIRD) databases on SQLite or
PostgreSQL, rewarded by execution match (issue 30, in progress)."""
