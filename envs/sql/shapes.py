"""The easy and medium shapes of the question grammar (`questions.py` checks them).

Each builder takes an opened database (`Context`) and a numpy Generator and
returns a `Candidate` (gold SQL, question text, the checks it needs) or None
when the schema or the draw offers nothing for it.
"""

from __future__ import annotations

from envgym.envs.sql.grammar import (
    Candidate,
    Context,
    bare,
    describe,
    kind,
    pick,
    q,
    sql_literal,
    window_cond,
    year_sql,
)

LIST = [
    "List {lab} of every {noun} {cond}.",
    "Give {lab} of all {nouns} {cond}.",
    "Show {lab} for the {nouns} {cond}.",
    "Find the {nouns} {cond}; answer with {lab}.",
]
COUNT = [
    "How many {nouns} are there {cond}?",
    "Count the {nouns} {cond}.",
    "What is the number of {nouns} {cond}?",
]
AGG_WORDS = {
    "AVG": ["the average {w}", "the mean {w}"],
    "SUM": ["the total {w}", "the sum of {w}"],
    "MIN": ["the smallest {w}", "the lowest {w}", "the minimum {w}"],
    "MAX": ["the largest {w}", "the highest {w}", "the maximum {w}"],
}
ROUNDED = " (rounded to 2 decimal places)"


def from_(table: str, links=()) -> str:
    return f"FROM {q(table)} AS T1" + "".join(
        f" JOIN {q(link.table)} AS {link.alias} ON {link.on}" for link in links
    )


def col_(alias: str, column) -> str:
    return f"{alias}.{q(column.name)}"


def _distinct_names(sql: str) -> str:
    """The same query with DISTINCT names: as many rows exactly when no two
    answers share a name (an answer a reader could not tell apart)."""
    return sql.replace("SELECT ", "SELECT DISTINCT ", 1)


def _agg(ctx: Context, rng, table: str, alias: str, dates: bool = True):
    """(gold expression, unrounded expression, words) of an aggregate of a column."""
    columns = ctx.numbers(table) + (ctx.dates(table) if dates else [])
    if not columns:
        return None
    column = pick(rng, columns)
    funcs = ["MIN", "MAX"] + (["AVG", "SUM"] if kind(column) != "DATE" else [])
    func = pick(rng, funcs)
    raw = f"{func}({col_(alias, column)})"
    words = pick(rng, AGG_WORDS[func]).format(w=bare(describe(column)))
    if kind(column) == "DATE":
        words = f"the {'earliest' if func == 'MIN' else 'latest'} {bare(describe(column))}"
    if func == "AVG":
        return f"ROUND({raw}, 2)", raw, words + ROUNDED
    if func == "SUM" and kind(column) == "REAL":
        # PostgreSQL rounds only NUMERIC to places (sqlglot casts AVG's result, not SUM's).
        return f"ROUND(CAST({raw} AS NUMERIC), 2)", raw, words + ROUNDED
    return raw, "", words


def filter_(ctx: Context, rng) -> Candidate | None:
    table = pick(rng, ctx.tables).name
    cond = ctx.cond(rng, table, "T1")
    if cond is None:
        return None
    lab = ctx.label(table)
    sql = f"SELECT {col_('T1', lab)} {from_(table)} WHERE {cond.sql}"
    text = pick(rng, LIST).format(
        lab=describe(lab), noun=ctx.noun(table), nouns=ctx.nouns(table), cond=cond.text
    )
    dropped = sql.split(" WHERE ")[0]
    return Candidate(sql, text, count_as=_distinct_names(sql), differs_from=[dropped])


def count_(ctx: Context, rng) -> Candidate | None:
    table = pick(rng, ctx.tables).name
    cond = ctx.cond(rng, table, "T1")
    if cond is None:
        return None
    sql = f"SELECT COUNT(*) {from_(table)} WHERE {cond.sql}"
    text = pick(rng, COUNT).format(nouns=ctx.nouns(table), cond=cond.text)
    return Candidate(sql, text, differs_from=[sql.split(" WHERE ")[0]])


def aggregate_(ctx: Context, rng) -> Candidate | None:
    table = pick(rng, ctx.tables).name
    agg = _agg(ctx, rng, table, "T1")
    if agg is None:
        return None
    gold, raw, words = agg
    cond = ctx.cond(rng, table, "T1") if rng.random() < 0.7 else None
    where = f" WHERE {cond.sql}" if cond else ""
    scope = ctx.nouns(table) + (f" {cond.text}" if cond else "")
    text = pick(rng, ["What is {w} of {s}?", "Over all {s}, what is {w}?"])
    return Candidate(
        f"SELECT {gold} {from_(table)}{where}",
        text.format(w=words, s=scope),
        unrounded=f"SELECT {raw} {from_(table)}{where}" if raw else "",
    )


def count_distinct_(ctx: Context, rng) -> Candidate | None:
    table = pick(rng, ctx.tables).name
    columns = [c for c in ctx.attrs[table] if len(ctx.values(table, c.name)) >= 2]
    cond = ctx.cond(rng, table, "T1")
    if not columns or cond is None:
        return None
    column = pick(rng, columns)
    sql = f"SELECT COUNT(DISTINCT {col_('T1', column)}) {from_(table)} WHERE {cond.sql}"
    text = pick(
        rng,
        [
            "How many different values of {w} occur among {nouns} {cond}?",
            "Among {nouns} {cond}, how many distinct {b} values are there (ignoring missing ones)?",
        ],
    )
    w = describe(column)
    return Candidate(sql, text.format(w=w, b=bare(w), nouns=ctx.nouns(table), cond=cond.text))


def _top(rng, key_sql: str, column) -> tuple[str, str, str]:
    """(direction, its word, the other direction) for ordering by a column."""
    high = rng.random() < 0.6
    if column is not None and kind(column) == "DATE":
        return ("DESC", "latest", "ASC") if high else ("ASC", "earliest", "DESC")
    return ("DESC", "highest", "ASC") if high else ("ASC", "lowest", "DESC")


def _ordered(sql_head: str, key: str, direction: str, tiebreak: str, k: int, key_index: int):
    """An ordered top-k candidate's SQL, probe and reversed-tiebreak rewriting."""
    gold = f"{sql_head} ORDER BY {key} {direction} LIMIT {k}"
    probe = f"{sql_head} ORDER BY {key} {direction} LIMIT {k + 1}"
    same = [
        f"{sql_head} ORDER BY {key} {direction}, {tiebreak} {order} LIMIT {k}"
        for order in ("ASC", "DESC")
    ]
    return Candidate(gold, "", ordered=True, probe=probe, key=key_index, limit=k, same_as=same)


def top_k_(ctx: Context, rng) -> Candidate | None:
    table = pick(rng, ctx.tables).name
    columns = ctx.numbers(table) + ctx.dates(table)
    if not columns:
        return None
    column, lab = pick(rng, columns), ctx.label(table)
    key = col_("T1", column)
    direction, word, _ = _top(rng, key, column)
    k = int(rng.integers(1, 6))
    cond = ctx.cond(rng, table, "T1") if rng.random() < 0.4 else None
    where = f"{key} IS NOT NULL" + (f" AND {cond.sql}" if cond else "")
    head = f"SELECT {col_('T1', lab)}, {key} {from_(table)} WHERE {where}"
    cand = _ordered(head, key, direction, col_("T1", lab), k, 1)
    what, scope = describe(column), ctx.nouns(table) + (f" {cond.text}" if cond else "")
    if k == 1:
        cand.text = f"Among {scope}, which {ctx.noun(table)} has the {word} {bare(what)}? "
        cand.text += f"Give {describe(lab)} and {what}."
    else:
        cand.text = pick(
            rng,
            [
                "Which {k} {s} have the {word} {b}? Give {lab} and {w}, {word} first.",
                "List the top {k} {s} by {word} {b} ({word} first), with {lab} and {w}.",
            ],
        ).format(k=k, s=scope, word=word, b=bare(what), lab=describe(lab), w=what)
    return cand


def link_phrase_(ctx: Context, links) -> str:
    if len(links) == 1:
        return f"a {ctx.noun(links[-1].table)}"
    through = " and ".join(ctx.nouns(link.table) for link in links[:-1])
    return f"(through their {through}) a {ctx.noun(links[-1].table)}"


def join_filter_(ctx: Context, rng, joins: tuple[int, ...] = (1, 2)) -> Candidate | None:
    table = pick(rng, ctx.tables).name
    links = ctx.path(rng, table, int(pick(rng, joins)))
    pk = ctx.pk(table)
    if not links or pk is None:
        return None
    cond = ctx.cond(rng, links[-1].table, links[-1].alias)
    if cond is None:
        return None
    lab = ctx.label(table)
    body = f"{from_(table, links)} WHERE {cond.sql}"
    sql = f"SELECT DISTINCT {col_('T1', lab)} {body}"
    text = pick(
        rng,
        [
            "Which {nouns} are linked to {other} {cond}? Give {lab}, each {noun} once.",
            "List {lab} of the {nouns} connected to {other} {cond} (each {noun} once).",
        ],
    ).format(
        nouns=ctx.nouns(table),
        noun=ctx.noun(table),
        other=link_phrase_(ctx, links),
        cond=cond.text,
        lab=describe(lab),
    )
    count_as = f"SELECT DISTINCT {col_('T1', pk)}, {col_('T1', lab)} {body}"
    return Candidate(sql, text, count_as=count_as, differs_from=[sql.split(" WHERE ")[0]])


def child_parent_(ctx: Context, rng):
    """A foreign key between two non-empty tables: (child, parent, ON clause)."""
    names = {t.name for t in ctx.tables}
    fks = [
        fk
        for fk in ctx.schema.foreign_keys
        if fk.table in names and fk.ref_table in names and fk.table != fk.ref_table
    ]
    if not fks:
        return None
    fk = pick(rng, fks)
    return fk, f"T1.{q(fk.column)} = T2.{q(fk.ref_column)}"


def join_aggregate_(ctx: Context, rng) -> Candidate | None:
    found = child_parent_(ctx, rng)
    if found is None:
        return None
    fk, on = found
    cond = ctx.cond(rng, fk.ref_table, "T2")
    agg = _agg(ctx, rng, fk.table, "T1") if rng.random() < 0.5 else None
    if cond is None:
        return None
    body = f"FROM {q(fk.table)} AS T1 JOIN {q(fk.ref_table)} AS T2 ON {on} WHERE {cond.sql}"
    scope = f"{ctx.nouns(fk.table)} whose {ctx.noun(fk.ref_table)} is one {cond.text}"
    if agg is None:
        text = pick(rng, ["How many {s} are there?", "Count the {s}."]).format(s=scope)
        return Candidate(f"SELECT COUNT(*) {body}", text)
    gold, raw, words = agg
    text = f"What is {words} of {scope}?"
    return Candidate(f"SELECT {gold} {body}", text, unrounded=f"SELECT {raw} {body}" if raw else "")


def group_(ctx: Context, rng, having: bool) -> Candidate | None:
    table = pick(rng, ctx.tables).name
    categories = ctx.categories(table)
    if not categories:
        return None
    cat = pick(rng, categories)
    key, what, nouns = col_("T1", cat), describe(cat), ctx.nouns(table)
    body = f"{from_(table)} WHERE {key} IS NOT NULL GROUP BY {key}"
    if not having:
        text = pick(
            rng,
            [
                "For each {b}, how many {nouns} are there? Give {w} and the count.",
                "Count the {nouns} per {b}: list each {b} with its number of {nouns}.",
            ],
        )
        return Candidate(
            f"SELECT {key}, COUNT(*) {body}", text.format(w=what, b=bare(what), nouns=nouns)
        )
    numbers = [c for c in ctx.numbers(table) if c.name != cat.name]
    if numbers and rng.random() < 0.5:
        return _group_average(ctx, rng, table, key, what, body, pick(rng, numbers))
    counts = sorted(row[0] for row in ctx.run(f"SELECT COUNT(*) {body}"))
    n = int(counts[int(rng.integers(len(counts)))]) - 1
    if n < 1:
        return None
    sql = f"SELECT {key}, COUNT(*) {body} HAVING COUNT(*) > {n}"
    text = pick(
        rng,
        [
            "Which values of {w} are shared by more than {n} {nouns}? Give each with its count.",
            "List each {b} that has more than {n} {nouns}, with the number of {nouns}.",
        ],
    )
    return Candidate(sql, text.format(w=what, b=bare(what), n=n, nouns=nouns))


def _group_average(ctx: Context, rng, table, key, what, body, column) -> Candidate | None:
    """Groups whose average of a number is above (or below) a threshold between two
    groups' averages, more than 0.01 from each (so rounding changes no side)."""
    avg = f"AVG({col_('T1', column)})"
    averages = sorted({row[0] for row in ctx.run(f"SELECT {avg} {body}") if row[0] is not None})
    if len(averages) < 2:
        return None
    i = int(rng.integers(len(averages) - 1))
    threshold = round((averages[i] + averages[i + 1]) / 2, 2)
    if not averages[i] + 0.01 < threshold < averages[i + 1] - 0.01:
        return None  # rounded or not, on either engine, each group falls the same side
    above = rng.random() < 0.5
    sql = (
        f"SELECT {key}, ROUND({avg}, 2) {body} "
        f"HAVING {avg} {'>' if above else '<'} {sql_literal(threshold)}"
    )
    text = pick(
        rng,
        [
            "Which values of {w} have an average {n} {side} {t} among their {nouns}? "
            "Give each with that average{r}.",
            "List each {b} whose {nouns} average {side} {t} in {n}, with the average{r}.",
        ],
    ).format(
        w=what,
        b=bare(what),
        n=bare(describe(column)),
        side="above" if above else "below",
        t=sql_literal(threshold),
        nouns=ctx.nouns(table),
        r=ROUNDED,
    )
    return Candidate(sql, text, unrounded=f"SELECT {avg} {body}")


def _parent_groups(ctx: Context, table: str):
    """GROUP BY on the first table's key and name, and the same grouped by name only."""
    pk, lab = ctx.pk(table), ctx.label(table)
    if pk is None:
        return None
    return lab, f"GROUP BY {col_('T1', pk)}, {col_('T1', lab)}", f"GROUP BY {col_('T1', lab)}"


def join_group_(ctx: Context, rng, top: bool) -> Candidate | None:
    found = child_parent_(ctx, rng)
    if found is None:
        return None
    fk, _ = found
    parent, child = fk.ref_table, fk.table
    # T1 is the parent here: its rows are grouped, the child's counted.
    on = f"T2.{q(fk.column)} = T1.{q(fk.ref_column)}"
    groups = _parent_groups(ctx, parent)
    if groups is None:
        return None
    lab, by_key, by_name = groups
    body = f"FROM {q(parent)} AS T1 JOIN {q(child)} AS T2 ON {on}"
    nouns_c, nouns_p = ctx.nouns(child), ctx.nouns(parent)
    if top:
        k = int(rng.integers(1, 6))
        numbers = ctx.numbers(child)
        metric, what = "COUNT(*)", f"the number of {nouns_c}"
        if numbers and rng.random() < 0.5:
            column = pick(rng, numbers)
            metric = f"SUM({col_('T2', column)})"
            if kind(column) == "REAL":
                metric = f"ROUND(CAST({metric} AS NUMERIC), 2)"
            what = f"the total {bare(describe(column))} of their {nouns_c}"
        head = f"SELECT {col_('T1', lab)}, {metric} {body} {by_key}"
        cand = _ordered(head, metric, "DESC", col_("T1", lab), k, 1)
        cand.same_as.append(cand.sql.replace(by_key, by_name))
        words = [
            "Which {k} {p} have the highest {w}? Give {lab} and {w}, highest first.",
            "List the top {k} {p} by {w} (highest first), with {lab} and that number.",
        ]
        if k == 1:
            words = ["Which {pn} has the highest {w}? Give {lab} and {w}."]
        cand.text = pick(rng, words).format(
            k=k, p=nouns_p, pn=ctx.noun(parent), w=what, lab=describe(lab)
        )
        return cand
    counts = sorted(row[-1] for row in ctx.run(f"SELECT COUNT(*) {body} {by_key}"))
    n = int(counts[int(rng.integers(len(counts) // 2, len(counts)))]) - 1
    if n < 1:
        return None
    sql = f"SELECT {col_('T1', lab)}, COUNT(*) {body} {by_key} HAVING COUNT(*) > {n}"
    text = pick(
        rng,
        [
            "Which {p} have more than {n} {c}? Give {lab} and the number of {c}.",
            "List {lab} of every {pn} with more than {n} {c}, and how many {c} it has.",
        ],
    ).format(p=nouns_p, pn=ctx.noun(parent), n=n, c=nouns_c, lab=describe(lab))
    return Candidate(sql, text, same_as=[sql.replace(by_key, by_name)])


def _date_table(ctx: Context, rng):
    tables = [t.name for t in ctx.tables if ctx.dates(t.name)]
    if not tables:
        return None
    table = pick(rng, tables)
    return table, pick(rng, ctx.dates(table))


def date_year_(ctx: Context, rng) -> Candidate | None:
    found = _date_table(ctx, rng)
    if found is None:
        return None
    table, column = found
    year, what, nouns = year_sql(col_("T1", column)), describe(column), ctx.nouns(table)
    if rng.random() < 0.5:
        body = f"{from_(table)} WHERE {col_('T1', column)} IS NOT NULL GROUP BY {year}"
        text = pick(
            rng,
            [
                "For each year of {w}, how many {nouns} are there? Give the year and the count.",
                "Count the {nouns} by the year of {w}: each year with its number of {nouns}.",
            ],
        )
        return Candidate(f"SELECT {year}, COUNT(*) {body}", text.format(w=what, nouns=nouns))
    value = int(str(pick(rng, ctx.values(table, column.name)))[:4])
    sql = f"SELECT COUNT(*) {from_(table)} WHERE {year} = {value}"
    text = pick(
        rng,
        ["How many {nouns} have {w} in the year {y}?", "Count the {nouns} whose {b} falls in {y}."],
    )
    return Candidate(sql, text.format(nouns=nouns, w=what, b=bare(what), y=value))


def date_window_(ctx: Context, rng) -> Candidate | None:
    found = _date_table(ctx, rng)
    if found is None:
        return None
    table, column = found
    values = ctx.values(table, column.name)
    cond = window_cond(rng, col_("T1", column), describe(column), values)
    if cond is None:
        return None
    if rng.random() < 0.5:
        text = pick(rng, COUNT).format(nouns=ctx.nouns(table), cond=cond.text)
        return Candidate(f"SELECT COUNT(*) {from_(table)} WHERE {cond.sql}", text)
    lab = ctx.label(table)
    sql = f"SELECT {col_('T1', lab)} {from_(table)} WHERE {cond.sql}"
    text = pick(rng, LIST).format(
        lab=describe(lab), noun=ctx.noun(table), nouns=ctx.nouns(table), cond=cond.text
    )
    dropped = sql.split(" WHERE ")[0]
    return Candidate(sql, text, count_as=_distinct_names(sql), differs_from=[dropped])
