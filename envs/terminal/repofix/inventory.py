"""RepoFix domain: a stock-keeping library (items, quantities, prices)."""

from __future__ import annotations

import random

from envgym.envs.terminal.repofix.spec import Bug, Domain, Fix

NAMES = {
    "pkg": ("stockroom", "shelfkeeper", "binventory", "storekit"),
    "U": ("helpers", "common", "util"),
    "C": ("stock", "inventory", "storage"),
    "R": ("reports", "reporting", "views"),
    "clamp": ("clamp", "bounded", "limit_to"),
    "money": ("round_money", "to_cents_value", "money"),
    "norm": ("normalise", "canonical_name", "clean_name"),
    "tally": ("tally", "count_names", "name_counts"),
    "Stock": ("Stock", "Inventory", "Store"),
    "build": ("build", "from_rows", "load_rows"),
    "low": ("low_stock", "running_low", "below"),
    "total": ("total_value", "stock_value", "worth"),
    "summary": ("summary", "overview", "digest"),
    "avg": ("average_price", "mean_price", "avg_price"),
    "page": ("page", "page_of", "paginate"),
    "restock": ("restock", "to_order", "reorder"),
}

HELPERS = '''"""Small helpers shared by the $pkg modules."""


def $clamp(value, low, high):
    """value limited to the range [low, high]."""
    if value < low:
        return low
    if value > high:
        return high
    return value


def $money(amount):
    """A money amount rounded to cents, halves away from zero."""
    cents = abs(amount) * 100
    whole = int(cents + 0.5)
    return (whole if amount >= 0 else -whole) / 100


def $norm(name):
    """A product name as the inventory keys it: spaces collapsed, lower case."""
    return " ".join(name.split()).lower()


def $tally(names, counts=None):
    """How many times each (normalised) name occurs, added to counts if given."""
    counts = {} if counts is None else counts
    for name in names:
        key = $norm(name)
        counts[key] = counts.get(key, 0) + 1
    return counts
'''

CORE = '''"""The stock itself: quantities and unit prices by product name."""

from .$U import $clamp, $money, $norm

CAPACITY = 500


class $Stock:
    def __init__(self, capacity=CAPACITY):
        self.capacity = capacity
        self.items = {}

    def add(self, name, quantity, unit_price):
        """Add quantity units (the quantity is capped at the capacity); returns it."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        key = $norm(name)
        if not key:
            raise ValueError("a product needs a name")
        entry = self.items.setdefault(key, [0, unit_price])
        entry[0] = $clamp(entry[0] + quantity, 0, self.capacity)
        entry[1] = unit_price
        return entry[0]

    def remove(self, name, quantity):
        """Take quantity units out; returns what is left."""
        key = $norm(name)
        if key not in self.items or self.items[key][0] < quantity:
            raise KeyError(name)
        self.items[key][0] -= quantity
        left = self.items[key][0]
        if left == 0:
            del self.items[key]
        return left

    def quantity(self, name):
        return self.items.get($norm(name), [0, 0])[0]

    def $total(self):
        """The value of the stock: quantity times unit price, summed, to the cent."""
        return $money(sum(q * p for q, p in self.items.values()))

    def $low(self, threshold):
        """Names whose quantity is at or below threshold, sorted."""
        return sorted(k for k, (q, _) in self.items.items() if q <= threshold)


def $build(rows, capacity=CAPACITY):
    """A stock from (name, quantity, unit_price) rows."""
    stock = $Stock(capacity)
    for name, quantity, price in rows:
        stock.add(name, quantity, price)
    return stock
'''

REPORTS = '''"""Reports on a stock given as (name, quantity, unit_price) rows."""

from .$C import $build
from .$U import $money


def $summary(rows, threshold=5):
    """How many products, their value, and those at or below threshold."""
    stock = $build(rows)
    return {"items": len(stock.items), "value": stock.$total(), "low": stock.$low(threshold)}


def $avg(rows):
    """The mean unit price over products, to the cent (0.0 for no products)."""
    stock = $build(rows)
    if not stock.items:
        return 0.0
    return $money(sum(p for _, p in stock.items.values()) / len(stock.items))


def $page(names, number, size=3):
    """Page number (counted from 1) of the sorted names, size names a page."""
    names = sorted(names)
    start = (number - 1) * size
    return names[start:start + size]


def $restock(rows, target):
    """How many to order of each product below target, to bring it to target."""
    stock = $build(rows)
    return {k: target - q for k, (q, _) in sorted(stock.items.items()) if q < target}
'''

PRODUCTS = (
    "blue pen",
    "red pen",
    "stapler",
    "paper clip",
    "notebook",
    "ruler",
    "eraser",
    "glue stick",
    "marker",
    "folder",
    "tape",
    "scissors",
    "binder",
    "pencil",
)
EIGHTHS = (0.125, 0.375, 0.625, 0.875)


def rows(rng: random.Random, n: int | None = None, spaced: bool = False) -> str:
    names = rng.sample(PRODUCTS, n or rng.randint(2, 5))
    out = []
    for name in names:
        shown = name.title() if rng.random() < 0.3 else name
        if spaced and " " in shown:
            shown = shown.replace(" ", "  ", 1)
        price = rng.randint(1, 30) + rng.choice((0.0, 0.25, 0.5, *EIGHTHS))
        out.append((shown, rng.randint(1, 12), price))
    return repr(out)


def visible(rng):
    return [
        f"$C.$build({rows(rng)}).$total()",
        f"$C.$build({rows(rng)}).$low({rng.randint(2, 8)})",
        f"$C.$build({rows(rng)}).quantity('stapler')",
        f"$R.$summary({rows(rng)})",
        f"$R.$avg({rows(rng)})",
        f"$R.$page({list(rng.sample(PRODUCTS, 7))}, {rng.randint(1, 2)})",
        f"$R.$restock({rows(rng)}, {rng.randint(4, 9)})",
        f"$U.$clamp({rng.randint(-5, 15)}, 0, 10)",
        "$U.$norm('  Glue   Stick ')",
        "$U.$tally(['pen', 'Pen', 'ruler'])",
    ]


def regression(rng):
    return [
        *(f"$C.$build({rows(rng)}).$total()" for _ in range(2)),
        f"$C.$build({rows(rng)}, capacity={rng.randint(5, 9)}).$total()",
        f"$C.$build([('ruler', 3, 1.0)]).remove('ruler', {rng.randint(1, 3)})",
        f"$C.$build([('ruler', 3, 1.0)]).remove('ruler', {rng.randint(4, 9)})",
        f"$R.$summary({rows(rng)}, {rng.randint(1, 9)})",
        f"$R.$avg({rows(rng)})",
        f"$R.$page({list(rng.sample(PRODUCTS, 8))}, {rng.randint(1, 3)}, {rng.randint(2, 4)})",
        f"$R.$restock({rows(rng)}, {rng.randint(3, 12)})",
        f"$U.$money({rng.randint(-999, 999) / 8})",
        f"$U.$clamp({rng.randint(-20, 20)}, -3, 3)",
    ]


def _low(rng):
    t = rng.randint(2, 9)
    got = [
        (name, rng.choice((t, t, t + 2, max(1, t - 1))), 1.0) for name in rng.sample(PRODUCTS, 4)
    ]
    return [f"$C.$build({got!r}).$low({t})"]


def _page(rng):
    names = list(rng.sample(PRODUCTS, rng.randint(5, 9)))
    return [f"$R.$page({names!r}, {rng.randint(1, 2)}, {rng.randint(2, 4)})"]


def _spaced(rng):
    name = rng.choice([p for p in PRODUCTS if " " in p])
    double = name.replace(" ", "   ")
    return [
        f"$R.$summary([('{name}', {rng.randint(1, 4)}, 2.5), ('{double}', "
        f"{rng.randint(1, 4)}, 2.5), ('stapler', 9, 4.0)])"
    ]


def _money(rng):
    return [f"$R.$avg({rows(rng)})", f"$C.$build({rows(rng)}).$total()"]


def _tally(rng):
    a, b = rng.sample(PRODUCTS, 2)
    return [f"($U.$tally(['{a}', '{b}']), $U.$tally(['{b}']))"]


def _empty(rng):
    blank = rng.choice(("' '", "'   '", "'\\t'", "''", "' \\n '"))
    return [f"$C.$build({rows(rng, 2)}).add({blank}, {rng.randint(1, 5)}, 1.5)"]


def _rounding(rng):
    return [f"$C.$build({rows(rng)}).$total()", f"$R.$avg({rows(rng)})"]


BUGS = (
    Bug(
        "inventory-low",
        "easy",
        "wrong comparison",
        (Fix("C", "if q <= threshold)", "if q < threshold)"),),
        "`$low` leaves out products with exactly the threshold left",
        _low,
        lambda rng: [_low(rng)[0] for _ in range(3)],
        "The docstring says products *at or below* the threshold are listed.",
    ),
    Bug(
        "inventory-page",
        "easy",
        "off-by-one",
        (Fix("R", "start = (number - 1) * size", "start = number * size"),),
        "`$page` skips the first page of names",
        _page,
        lambda rng: [_page(rng)[0] for _ in range(3)],
        "Pages are supposed to be counted from 1.",
    ),
    Bug(
        "inventory-tally",
        "easy",
        "mutable default argument",
        (Fix("U", "def $tally(names, counts=None):", "def $tally(names, counts={}):"),),
        "`$tally` counts names from earlier calls too",
        _tally,
        lambda rng: [_tally(rng)[0] for _ in range(3)],
        "Each call without `counts` should start from nothing.",
    ),
    Bug(
        "inventory-normalise",
        "medium",
        "missing whitespace handling in a helper",
        (Fix("U", 'return " ".join(name.split()).lower()', "return name.strip().lower()"),),
        "`$summary` counts one product twice when its name has extra spaces",
        _spaced,
        lambda rng: [_spaced(rng)[0] for _ in range(3)],
        "Names that differ only in spacing or case are the same product.",
    ),
    Bug(
        "inventory-money",
        "medium",
        "wrong rounding in a helper",
        (Fix("U", "whole = int(cents + 0.5)", "whole = int(cents)"),),
        "`$avg` is sometimes a cent too low",
        lambda rng: [_money(rng)[0]],
        lambda rng: _money(rng) + _money(rng),
        "Amounts should be rounded to the nearest cent, halves up.",
    ),
    Bug(
        "inventory-blank-name",
        "hard",
        "missing edge case",
        (
            Fix(
                "C",
                "key = $norm(name)\n        if not key:\n"
                '            raise ValueError("a product needs a name")\n        entry',
                "key = $norm(name)\n        entry",
            ),
        ),
        "Adding a product with a blank name is accepted",
        _empty,
        lambda rng: [_empty(rng)[0] for _ in range(3)],
        "A product without a name makes no sense; adding one should raise an error.",
    ),
    Bug(
        "inventory-rounding",
        "hard",
        "wrong rounding in two places",
        (
            Fix(
                "C",
                "return $money(sum(q * p for q, p in self.items.values()))",
                "return round(sum(q * p for q, p in self.items.values()), 2)",
            ),
            Fix(
                "R",
                "return $money(sum(p for _, p in stock.items.values()) / len(stock.items))",
                "return round(sum(p for _, p in stock.items.values()) / len(stock.items), 2)",
            ),
        ),
        "Stock values and average prices are sometimes a cent off",
        lambda rng: [_rounding(rng)[0]],
        lambda rng: _rounding(rng) + _rounding(rng),
        "Money is rounded to the nearest cent with halves going up everywhere else; "
        "the average price looks off in the same way.",
    ),
)

DOMAIN = Domain(
    "inventory",
    "stock-keeping",
    NAMES,
    {"U": HELPERS, "C": CORE, "R": REPORTS},
    visible,
    regression,
    BUGS,
)
