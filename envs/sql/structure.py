"""A gold query's structure, read with sqlglot (SQLite dialect): whether it orders
its result (a top-level ORDER BY) and how hard it is (joins, nesting, set operations).

The Spider/BIRD loaders label questions with it; a query sqlglot cannot parse is
read from its tokens instead (ORDER BY, JOIN, GROUP BY and SELECT outside or inside
parentheses), so a dataset's odd query still gets a label.
"""

from __future__ import annotations

import functools

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

__all__ = ["difficulty_of", "is_ordered"]


@functools.lru_cache(maxsize=256)  # is_ordered and difficulty_of read the same query
def _parse(sql: str) -> exp.Expression | None:
    try:
        return sqlglot.parse_one(sql, read="sqlite")
    except SqlglotError:
        return None


def _top_level_tokens(sql: str) -> list[TokenType]:
    """The token types outside any parentheses (a fallback where sqlglot cannot parse)."""
    depth, kinds = 0, []
    try:
        tokens = sqlglot.tokenize(sql, read="sqlite")
    except SqlglotError:
        return []
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0:
            kinds.append(token.token_type)
    return kinds


def is_ordered(sql: str) -> bool:
    """Whether `sql` has a top-level ORDER BY (one that orders its result rows)."""
    tree = _parse(sql)
    if tree is not None:
        return tree.args.get("order") is not None
    return TokenType.ORDER_BY in _top_level_tokens(sql)


def difficulty_of(sql: str) -> str:
    """``easy``/``medium``/``hard`` by the gold query's structure: hard with a set
    operation, a nested SELECT or 3+ table references; medium with 2 (a self-join
    too) or a GROUP BY; else easy."""
    tree = _parse(sql)
    if tree is None:  # count the keywords instead
        try:
            kinds = [t.token_type for t in sqlglot.tokenize(sql, read="sqlite")]
        except SqlglotError:
            return "hard"  # not even tokens: nothing says it is simple
        set_ops = {TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT} & set(kinds)
        if set_ops or kinds.count(TokenType.SELECT) > 1 or kinds.count(TokenType.JOIN) >= 2:
            return "hard"
        return "medium" if TokenType.JOIN in kinds or TokenType.GROUP_BY in kinds else "easy"
    selects = list(tree.find_all(exp.Select))
    tables = len(list(tree.find_all(exp.Table)))  # references: a self-join counts twice
    if tree.find(exp.Union, exp.Intersect, exp.Except) or len(selects) > 1 or tables >= 3:
        return "hard"
    return "medium" if tables == 2 or tree.find(exp.Group) else "easy"
