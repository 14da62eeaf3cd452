"""RepoFix domain: a bank-ledger library (dated entries, balances, statements)."""

from __future__ import annotations

import random

from envgym.envs.terminal.repofix.spec import Bug, Domain, Fix

NAMES = {
    "pkg": ("pennybook", "ledgerly", "tallybank", "cashtrail"),
    "U": ("money", "amounts", "fmt"),
    "C": ("accounts", "entries", "books"),
    "R": ("statements", "printing", "monthly"),
    "cents": ("to_cents", "as_cents", "cents_of"),
    "show": ("format_cents", "show_amount", "pretty"),
    "month": ("month_of", "period", "month_key"),
    "balance": ("balance", "closing_balance", "net"),
    "between": ("between", "in_range", "dated_between"),
    "by_month": ("by_month", "monthly_totals", "per_month"),
    "largest": ("largest_withdrawals", "biggest_debits", "top_spending"),
    "statement": ("statement", "range_statement", "account_summary"),
    "lines": ("month_lines", "monthly_report", "month_table"),
    "overdrawn": ("overdrawn_days", "days_below", "overdraft_dates"),
}

MONEY = '''"""Money amounts for $pkg: whole cents inside, 'units.cents' outside."""


def $cents(amount):
    """An amount such as 12.5 or "12.50" as whole cents, rounded."""
    return int(round(float(amount) * 100))


def $show(cents):
    """Whole cents as text such as '-12.05'."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d}"


def $month(date):
    """The 'YYYY-MM' of a 'YYYY-MM-DD' date."""
    return date[:7]
'''

ACCOUNTS = '''"""Entries are (date, amount) pairs: 'YYYY-MM-DD' and a signed amount."""

from .$U import $cents, $month


def $balance(entries, opening=0):
    """The balance in cents after the entries, starting from opening."""
    total = $cents(opening)
    for _, amount in entries:
        total += $cents(amount)
    return total


def $between(entries, start, end):
    """The entries dated from start to end, both included, in date order.
    A start after the end is an error (ValueError)."""
    if start > end:
        raise ValueError(f"start {start} is after end {end}")
    return sorted(e for e in entries if start <= e[0] <= end)


def $by_month(entries):
    """Net cents per 'YYYY-MM', in month order."""
    totals = {}
    for date, amount in entries:
        key = $month(date)
        totals[key] = totals.get(key, 0) + $cents(amount)
    return dict(sorted(totals.items()))


def $largest(entries, n=3):
    """The n largest withdrawals (negative amounts), largest first."""
    out = [e for e in entries if $cents(e[1]) < 0]
    return sorted(out, key=lambda e: ($cents(e[1]), e[0]))[:n]
'''

STATEMENTS = '''"""Printable statements."""

from .$C import $balance, $between, $by_month
from .$U import $cents, $show


def $statement(entries, start, end, opening=0):
    """How many entries fall from start to end, and the closing balance."""
    chosen = $between(entries, start, end)
    return {"count": len(chosen), "closing": $show($balance(chosen, opening))}


def $lines(entries):
    """One 'YYYY-MM: amount' line per month."""
    return [f"{m}: {$show(c)}" for m, c in $by_month(entries).items()]


def $overdrawn(entries, opening=0):
    """The dates on which the running balance (from opening) is below zero."""
    days = []
    total = $cents(opening)
    for date, amount in sorted(entries):
        total += $cents(amount)
        if total < 0:
            days.append(date)
    return days
'''


def date(rng: random.Random) -> str:
    return f"2024-{rng.randint(1, 6):02d}-{rng.randint(1, 28):02d}"


def amount(rng: random.Random, sign: int = 0) -> float:
    value = rng.randint(1, 400) + rng.randint(0, 99) / 100
    sign = sign or rng.choice((1, -1, -1))
    return round(sign * value, 2)


def entries(rng: random.Random, n: int | None = None) -> str:
    return repr([(date(rng), amount(rng)) for _ in range(n or rng.randint(3, 6))])


def span(rng: random.Random) -> tuple[str, str]:
    a, b = sorted((date(rng), date(rng)))
    return a, b


def visible(rng):
    return [
        f"$C.$balance({entries(rng)})",
        f"$C.$balance({entries(rng)}, {amount(rng, 1)})",
        f"$C.$between({entries(rng)}, *{span(rng)})",
        f"$C.$by_month({entries(rng)})",
        f"$C.$largest({entries(rng, 6)}, 2)",
        f"$R.$statement({entries(rng)}, *{span(rng)})",
        f"$R.$lines({entries(rng)})",
        f"$R.$overdrawn({entries(rng)})",
        f"$U.$show({rng.randint(-99999, 99999)})",
        f"$U.$cents('{amount(rng)}')",
    ]


def regression(rng):
    return [
        f"$C.$balance({entries(rng)}, {amount(rng, 1)})",
        f"$C.$between({entries(rng, 6)}, *{span(rng)})",
        f"$C.$by_month({entries(rng, 6)})",
        f"$C.$largest({entries(rng, 6)}, {rng.randint(1, 4)})",
        f"$R.$statement({entries(rng, 6)}, *{span(rng)}, {amount(rng, 1)})",
        f"$R.$lines({entries(rng, 6)})",
        f"$R.$overdrawn({entries(rng, 6)}, {amount(rng, 1)})",
        f"$U.$show({rng.randint(-99999, 99999)})",
        f"$U.$show({rng.randint(-99, 99)})",
        f"$U.$month('{date(rng)}')",
    ]


def _edge(rng):
    rows = [(date(rng), amount(rng)) for _ in range(5)]
    start, end = sorted(d for d, _ in rows[:2])
    return [f"$C.$between({rows!r}, {start!r}, {end!r})"]


def _statement(rng):
    return [f"$R.$statement({entries(rng, 6)}, *{span(rng)})"]


def _largest(rng):
    rows = [(date(rng), amount(rng, -1)) for _ in range(rng.randint(4, 6))]
    return [f"$C.$largest({rows!r})"]


def _padding(rng):
    rows = [(date(rng), rng.randint(1, 300) + rng.randint(1, 9) / 100) for _ in range(3)]
    return [f"$R.$lines({rows!r})"]


def _cents(rng):
    rows = [(date(rng), amount(rng)) for _ in range(rng.randint(3, 6))]
    start, end = sorted((rows[0][0], rows[-1][0]))
    return [f"$R.$statement({rows!r}, {start!r}, {end!r})"]


def _reversed(rng):
    a, b = span(rng)
    if a == b:
        b = "2024-07-01"
    return [f"$C.$between({entries(rng)}, {b!r}, {a!r})"]


def _opening(rng):
    return [
        f"$C.$balance({entries(rng)}, {amount(rng, 1)})",
        f"$R.$overdrawn({entries(rng)}, {amount(rng, 1) + 200})",
    ]


BUGS = (
    Bug(
        "ledger-between",
        "easy",
        "wrong comparison",
        (Fix("C", "start <= e[0] <= end)", "start <= e[0] < end)"),),
        "`$between` drops entries dated on the end date",
        _edge,
        lambda rng: [_edge(rng)[0] for _ in range(3)],
        "The docstring says both ends are included.",
    ),
    Bug(
        "ledger-statement",
        "easy",
        "swapped arguments",
        (
            Fix(
                "R",
                "chosen = $between(entries, start, end)",
                "chosen = $between(entries, end, start)",
            ),
        ),
        "`$statement` fails for a date range that is fine",
        _statement,
        lambda rng: [_statement(rng)[0] for _ in range(3)],
    ),
    Bug(
        "ledger-largest",
        "easy",
        "wrong default",
        (Fix("C", "def $largest(entries, n=3):", "def $largest(entries, n=2):"),),
        "`$largest` without n returns only two withdrawals",
        _largest,
        lambda rng: [_largest(rng)[0] for _ in range(3)],
        "The docs say three by default.",
    ),
    Bug(
        "ledger-padding",
        "medium",
        "missing zero padding in a helper",
        (Fix("U", "{cents % 100:02d}", "{cents % 100}"),),
        "`$lines` prints some amounts wrong",
        _padding,
        lambda rng: [_padding(rng)[0] for _ in range(3)],
        "Amounts should always show two digits of cents.",
    ),
    Bug(
        "ledger-cents",
        "medium",
        "wrong rounding in a helper",
        (Fix("U", "return int(round(float(amount) * 100))", "return int(float(amount) * 100)"),),
        "`$statement`'s closing balance is sometimes a cent off",
        _cents,
        lambda rng: [_cents(rng)[0] for _ in range(4)],
    ),
    Bug(
        "ledger-reversed",
        "hard",
        "missing edge case",
        (
            Fix(
                "C",
                "    if start > end:\n"
                '        raise ValueError(f"start {start} is after end {end}")\n'
                "    return sorted(e for",
                "    return sorted(e for",
            ),
        ),
        "`$between` quietly returns nothing when the dates are the wrong way round",
        _reversed,
        lambda rng: [_reversed(rng)[0] for _ in range(3)],
        "The docstring says a start after the end is an error; I'd expect a ValueError.",
    ),
    Bug(
        "ledger-opening",
        "hard",
        "ignored argument in two places",
        (
            Fix(
                "C",
                "    total = $cents(opening)\n    for _, amount",
                "    total = 0\n    for _, amount",
            ),
            Fix("R", "    total = $cents(opening)\n    for date", "    total = 0\n    for date"),
        ),
        "The opening balance is ignored",
        lambda rng: [_opening(rng)[0]],
        lambda rng: _opening(rng) + _opening(rng),
        "`$overdrawn` seems to ignore it too: it lists days on which the account was in credit.",
    ),
)

DOMAIN = Domain(
    "ledger",
    "bank-ledger",
    NAMES,
    {"U": MONEY, "C": ACCOUNTS, "R": STATEMENTS},
    visible,
    regression,
    BUGS,
)
