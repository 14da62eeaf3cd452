"""The hard shapes of the question grammar (three joins, nested subqueries, set
operations, grouping over a two-join path) and the medium days-between shape
(`questions.py` checks them)."""

from __future__ import annotations

from bisect import bisect_right

from envgym.envs.sql.grammar import (
    MAX_ROWS,
    Candidate,
    Context,
    bare,
    day_number_sql,
    describe,
    kind,
    pick,
    q,
)
from envgym.envs.sql.shapes import child_parent_, col_, from_, join_filter_, link_phrase_


def join3_filter(ctx: Context, rng) -> Candidate | None:
    return join_filter_(ctx, rng, joins=(3,))


def join3_count(ctx: Context, rng) -> Candidate | None:
    table = pick(rng, ctx.tables).name
    links, pk = ctx.path(rng, table, 3), ctx.pk(table)
    if not links or pk is None:
        return None
    cond = ctx.cond(rng, links[-1].table, links[-1].alias)
    if cond is None:
        return None
    sql = f"SELECT COUNT(DISTINCT {col_('T1', pk)}) {from_(table, links)} WHERE {cond.sql}"
    text = pick(
        rng,
        [
            "How many different {nouns} are linked to {other} {cond}?",
            "Count the distinct {nouns} connected to {other} {cond}.",
        ],
    ).format(nouns=ctx.nouns(table), other=link_phrase_(ctx, links), cond=cond.text)
    return Candidate(sql, text)


def subquery_in(ctx: Context, rng) -> Candidate | None:
    found = child_parent_(ctx, rng)
    if found is None:
        return None
    fk, _ = found
    parent, child = fk.ref_table, fk.table
    cond = ctx.cond(rng, child, "T2")
    if cond is None:
        return None
    lab, ref, fkcol = ctx.label(parent), col_("T1", ctx.table(parent).column(fk.ref_column)), None
    fkcol = f"T2.{q(fk.column)}"
    negate = rng.random() < 0.35
    inner = f"SELECT {fkcol} FROM {q(child)} AS T2 WHERE {cond.sql}"
    if negate:
        # NOT IN over a NULL is never true: the subquery leaves NULL keys out.
        inner += f" AND {fkcol} IS NOT NULL"
    op = "NOT IN" if negate else "IN"
    sql = f"SELECT {col_('T1', lab)} FROM {q(parent)} AS T1 WHERE {ref} {op} ({inner})"
    words = (
        [
            "Which {p} have no {c} {cond}? Give {lab}.",
            "List {lab} of the {p} without any {c} {cond}.",
        ]
        if negate
        else [
            "Which {p} have at least one {c} {cond}? Give {lab}.",
            "List {lab} of the {p} that have some {c} {cond}.",
        ]
    )
    text = pick(rng, words).format(
        p=ctx.nouns(parent), c=ctx.noun(child), cond=cond.text, lab=describe(lab)
    )
    everyone = f"SELECT {col_('T1', lab)} FROM {q(parent)} AS T1"
    return Candidate(
        sql,
        text,
        count_as=sql.replace("SELECT ", "SELECT DISTINCT ", 1),
        differs_from=[everyone],
    )


def subquery_scalar(ctx: Context, rng) -> Candidate | None:
    table = pick(rng, ctx.tables).name
    numbers = ctx.numbers(table)
    cond = ctx.cond(rng, table, "T1")
    if not numbers or cond is None:
        return None
    column, lab = pick(rng, numbers), ctx.label(table)
    above = rng.random() < 0.6
    average = f"(SELECT AVG(T2.{q(column.name)}) FROM {q(table)} AS T2)"
    key = col_("T1", column)
    body = f"{from_(table)} WHERE {key} {'>' if above else '<'} {average} AND {cond.sql}"
    sql = f"SELECT {col_('T1', lab)}, {key} {body}"
    what, nouns = describe(column), ctx.nouns(table)
    text = pick(
        rng,
        [
            "Which {nouns} {cond} have {w} {side} the average over all {nouns}? "
            "Give {lab} and {w}.",
            "Among {nouns} {cond}, list {lab} and {w} of those whose {b} is {side} "
            "the average {b} of all {nouns}.",
        ],
    ).format(
        nouns=nouns,
        cond=cond.text,
        w=what,
        b=bare(what),
        side="above" if above else "below",
        lab=describe(lab),
    )
    # A value within float noise of the average could fall either side on another engine.
    near = f"SELECT COUNT(*) {from_(table)} WHERE ABS({key} - {average}) < 1e-6"
    return Candidate(sql, text, count_as=f"SELECT DISTINCT {col_('T1', lab)} {body}", zero=[near])


def subquery_extreme(ctx: Context, rng) -> Candidate | None:
    found = child_parent_(ctx, rng)
    if found is None:
        return None
    fk, on = found
    child, parent = fk.table, fk.ref_table
    columns = ctx.numbers(child) + ctx.dates(child)
    if not columns:
        return None
    column, lab = pick(rng, columns), ctx.label(parent)
    high = rng.random() < 0.6
    func = "MAX" if high else "MIN"
    if kind(column) == "DATE":
        word = "latest" if high else "earliest"
    else:
        word = "highest" if high else "lowest"
    key = col_("T1", column)
    extreme = f"(SELECT {func}(T3.{q(column.name)}) FROM {q(child)} AS T3)"
    sql = (
        f"SELECT {col_('T2', lab)}, {key} FROM {q(child)} AS T1 JOIN {q(parent)} AS T2 "
        f"ON {on} WHERE {key} = {extreme}"
    )
    text = pick(
        rng,
        [
            "Which {p} is linked to the {c} with the {word} {b}? Give {lab} and {w}.",
            "Find the {c} with the {word} {b} and give {lab} of its {p}, with {w}.",
        ],
    ).format(
        p=ctx.noun(parent),
        c=ctx.noun(child),
        word=word,
        b=bare(describe(column)),
        w=describe(column),
        lab=describe(lab),
    )
    # "the {c} with the highest ..." names one row: exactly one holds the extreme.
    single = f"SELECT COUNT(*) - 1 FROM {q(child)} AS T1 WHERE {key} = {extreme}"
    return Candidate(sql, text, zero=[single])


SET_WORDS = {
    "UNION": "{a}, together with those {b}",
    "INTERSECT": "{a} and, at the same time, {b}",
    "EXCEPT": "{a}, leaving out those {b}",
}


def set_op(ctx: Context, rng) -> Candidate | None:
    table = pick(rng, ctx.tables).name
    pk = ctx.pk(table)
    first, second = ctx.cond(rng, table, "T1"), ctx.cond(rng, table, "T1")
    if pk is None or first is None or second is None or first.sql == second.sql:
        return None
    op = pick(rng, list(SET_WORDS))
    lab = col_("T1", ctx.label(table))
    sides = [f"SELECT {lab} {from_(table)} WHERE {c.sql}" for c in (first, second)]
    sql = f" {op} ".join(sides)
    scope = SET_WORDS[op].format(a=first.text, b=second.text)
    text = pick(
        rng,
        ["List {lab} of the {nouns} {s} (each once).", "Which {nouns} {s}? Give {lab}, each once."],
    ).format(lab=describe(ctx.label(table)), nouns=ctx.nouns(table), s=scope)
    keyed = f" {op} ".join(s.replace("SELECT ", f"SELECT {col_('T1', pk)}, ", 1) for s in sides)
    return Candidate(sql, text, count_as=keyed, differs_from=sides)


def join2_group_having(ctx: Context, rng) -> Candidate | None:
    table = pick(rng, ctx.tables).name
    links, pk = ctx.path(rng, table, 2), ctx.pk(table)
    if not links or pk is None:
        return None
    far = ctx.pk(links[-1].table)
    if far is None:
        return None
    lab = ctx.label(table)
    counted = f"COUNT(DISTINCT {links[-1].alias}.{q(far.name)})"
    by_key = f"GROUP BY {col_('T1', pk)}, {col_('T1', lab)}"
    body = f"{from_(table, links)} {by_key}"
    counts = sorted(row[0] for row in ctx.run(f"SELECT {counted} {body}"))
    # Thresholds n >= 1 that at least one and at most MAX_ROWS rows exceed.
    above = {n: len(counts) - bisect_right(counts, n) for n in set(counts)}
    ns = sorted(n for n, k in above.items() if n >= 1 and 1 <= k <= MAX_ROWS)
    if not ns:
        return None
    n = int(ns[int(rng.integers(len(ns)))])
    sql = f"SELECT {col_('T1', lab)}, {counted} {body} HAVING {counted} > {n}"
    far_nouns = ctx.nouns(links[-1].table)
    through = ctx.nouns(links[0].table)
    text = pick(
        rng,
        [
            "Which {nouns} are linked, through their {t}, to more than {n} different {f}? "
            "Give {lab} and the number of different {f}.",
            "List {lab} of every {noun} connected via {t} to more than {n} distinct {f}, "
            "with that number.",
        ],
    ).format(
        nouns=ctx.nouns(table),
        noun=ctx.noun(table),
        t=through,
        n=n,
        f=far_nouns,
        lab=describe(lab),
    )
    return Candidate(sql, text, same_as=[sql.replace(by_key, f"GROUP BY {col_('T1', lab)}")])


def date_diff(ctx: Context, rng) -> Candidate | None:
    """Days between two dates of a row, or of a row and the row it references."""
    names = {t.name for t in ctx.tables}
    pairs = [
        (t.name, "", a, b)
        for t in ctx.tables
        for a in ctx.dates(t.name)
        for b in ctx.dates(t.name)
        if a.name != b.name
    ]
    for fk in ctx.schema.foreign_keys:
        if fk.table in names and fk.ref_table in names and fk.table != fk.ref_table:
            join = f" JOIN {q(fk.ref_table)} AS T2 ON T1.{q(fk.column)} = T2.{q(fk.ref_column)}"
            pairs += [
                (fk.table, join, a, b) for a in ctx.dates(fk.table) for b in ctx.dates(fk.ref_table)
            ]
    if not pairs:
        return None
    table, join, a, b = pick(rng, pairs)
    body = from_(table) + join
    later = day_number_sql(col_("T1", a))
    earlier = day_number_sql(col_("T2" if join else "T1", b))
    diff = f"{later} - {earlier}"
    # Thresholds from the first 500 rows' gaps: enough for quantiles, cheap on big tables.
    rows = ctx.run(f"SELECT {diff} {body}", limit=500)
    days = sorted(r[0] for r in rows if r[0] is not None)
    days = [d for d in days if d > 0]
    if len(days) < 4:
        return None
    low = int(days[int(rng.integers(len(days) // 10, len(days) // 2))])
    high = int(days[int(rng.integers(len(days) // 2, len(days) - len(days) // 10))])
    if rng.random() < 0.5 or not low < high:
        cond, gap = f"{diff} > {low}", f"more than {low} days after"
    else:
        cond, gap = f"{diff} BETWEEN {low} AND {high}", f"between {low} and {high} days after"
    what = f"{describe(a)} is {gap} {describe(b)}"
    nouns = ctx.nouns(table)
    if rng.random() < 0.5:
        text = pick(rng, ["How many {n} are there where {w}?", "Count the {n} for which {w}."])
        return Candidate(f"SELECT COUNT(*) {body} WHERE {cond}", text.format(n=nouns, w=what))
    lab = ctx.label(table)
    sql = f"SELECT {col_('T1', lab)} {body} WHERE {cond}"
    text = pick(
        rng, ["List {lab} of the {n} where {w}.", "Which {n} have {w}? Give {lab}."]
    ).format(lab=describe(lab), n=nouns, w=what)
    return Candidate(sql, text, count_as=sql.replace("SELECT ", "SELECT DISTINCT ", 1))
