"""The Retail world: its SQLite schema and the seeded generation of a whole shop.

`build_world(seed)` makes 180 users (names drawn from small pools, so
namesakes are common), their payment methods (credit cards, PayPal, gift cards
with a balance), 32 product types with 5 to 10 variants each, and 1-3 orders
per user in every state (pending, processed, delivered, cancelled, return
requested, exchange requested) with their items, shipping address, payment
history and, once shipped, tracking. About 2,300 rows; no download.

Money is stored in dollars with two decimals and always computed in whole
cents (`cents`, `dollars`), so the same writes in any order give the same
store. `add_order` is also how a task adds the orders it is about, and
`world_view` what tasks read of a world, once per process.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from envgym.envs.retail.catalog import (
    CARD_BRANDS,
    CITIES,
    COURIERS,
    FIRST_NAMES,
    LAST_NAMES,
    PRODUCTS,
    STREET_KINDS,
    STREETS,
)
from envgym.envs.toolworld import Store

__all__ = [
    "RETURN_WINDOW_DAYS",
    "WorldView",
    "SCHEMA",
    "STATUSES",
    "TODAY",
    "add_order",
    "build_world",
    "cents",
    "days_ago",
    "dollars",
    "new_address",
    "options_text",
    "world_view",
]

#: The world's "today" (the policy states it; delivery dates count back from it).
TODAY = dt.date(2026, 6, 15)
#: Days after delivery within which the policy allows a return or an exchange.
RETURN_WINDOW_DAYS = 30
STATUSES = (
    "pending",
    "processed",
    "delivered",
    "cancelled",
    "return requested",
    "exchange requested",
)
_STATUS_WEIGHTS = np.array([0.25, 0.15, 0.38, 0.08, 0.07, 0.07])
USERS = 180

SCHEMA = """
CREATE TABLE users (
    user_id TEXT PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE, address1 TEXT, address2 TEXT, city TEXT, state TEXT,
    country TEXT, zip TEXT);
CREATE INDEX users_by_name ON users (first_name, last_name, zip);
CREATE TABLE payment_methods (
    payment_method_id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users,
    kind TEXT NOT NULL, brand TEXT, last_four TEXT, balance REAL);
CREATE INDEX methods_by_user ON payment_methods (user_id);
CREATE INDEX methods_by_kind ON payment_methods (kind);
CREATE TABLE products (product_id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE items (
    item_id TEXT PRIMARY KEY, product_id TEXT NOT NULL REFERENCES products,
    options TEXT NOT NULL, price REAL NOT NULL, available INTEGER NOT NULL);
CREATE INDEX items_by_product ON items (product_id);
CREATE TABLE orders (
    order_id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users, status TEXT NOT NULL,
    address1 TEXT, address2 TEXT, city TEXT, state TEXT, country TEXT, zip TEXT,
    placed_date TEXT, delivered_date TEXT, courier TEXT, tracking_id TEXT,
    cancel_reason TEXT, items_modified INTEGER NOT NULL DEFAULT 0);
CREATE INDEX orders_by_user ON orders (user_id);
CREATE INDEX orders_by_status ON orders (status);
CREATE TABLE order_items (
    order_id TEXT NOT NULL REFERENCES orders, line INTEGER NOT NULL,
    item_id TEXT NOT NULL REFERENCES items, price REAL NOT NULL,
    PRIMARY KEY (order_id, line));
CREATE TABLE payments (
    order_id TEXT NOT NULL REFERENCES orders, seq INTEGER NOT NULL, kind TEXT NOT NULL,
    payment_method_id TEXT NOT NULL REFERENCES payment_methods, amount REAL NOT NULL,
    PRIMARY KEY (order_id, seq));
CREATE TABLE requests (
    order_id TEXT PRIMARY KEY REFERENCES orders, kind TEXT NOT NULL, item_ids TEXT NOT NULL,
    new_item_ids TEXT, payment_method_id TEXT NOT NULL REFERENCES payment_methods,
    amount REAL NOT NULL);
"""


def cents(amount: float) -> int:
    """Dollars as whole cents."""
    return int(round(float(amount) * 100))


def dollars(amount_cents: int) -> float:
    """Whole cents as dollars (a float with two decimals)."""
    return round(amount_cents / 100, 2)


def days_ago(days: int) -> str:
    return (TODAY - dt.timedelta(days=int(days))).isoformat()


def options_text(options: Mapping[str, str] | str) -> str:
    """A variant's options in words: ``color black, size M``."""
    if isinstance(options, str):
        options = json.loads(options)
    return ", ".join(f"{name} {value}" for name, value in options.items())


def _digits(rng: np.random.Generator, n: int) -> str:
    return f"{int(rng.integers(10**n)):0{n}d}"


def new_address(rng: np.random.Generator) -> dict[str, str]:
    """A random US address (address1, address2, city, state, country, zip)."""
    city, state, prefix = CITIES[int(rng.integers(len(CITIES)))]
    street = STREETS[int(rng.integers(len(STREETS)))]
    kind = STREET_KINDS[int(rng.integers(len(STREET_KINDS)))]
    unit = (
        ""
        if rng.random() < 0.4
        else f"{('Apt', 'Suite')[int(rng.integers(2))]} {100 + int(rng.integers(900))}"
    )
    return {
        "address1": f"{int(rng.integers(10, 9999))} {street} {kind}",
        "address2": unit,
        "city": city,
        "state": state,
        "country": "USA",
        "zip": prefix + _digits(rng, 2),
    }


def _unique(rng: np.random.Generator, taken: set[str], make: Any) -> str:
    while True:
        value = make(rng)
        if value not in taken:
            taken.add(value)
            return value


def _catalog(store: Store, rng: np.random.Generator, taken: set[str]) -> None:
    products, items = [], []
    for name, (options, base) in PRODUCTS.items():
        product_id = _unique(rng, taken, lambda r: _digits(r, 10))
        products.append((product_id, name))
        names = list(options)
        combos: set[tuple[int, ...]] = set()
        wanted = int(rng.integers(5, 11))
        while len(combos) < wanted:
            combos.add(tuple(int(rng.integers(len(options[n]))) for n in names))
        for combo in sorted(combos):
            chosen = {n: options[n][i] for n, i in zip(names, combo, strict=True)}
            price = dollars(int(base * 100 * rng.uniform(0.75, 1.3)))
            item_id = _unique(rng, taken, lambda r: _digits(r, 10))
            available = int(rng.random() < 0.8)
            items.append((item_id, product_id, json.dumps(chosen), price, available))
    store.executemany("INSERT INTO products VALUES (?, ?)", products)
    store.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?)", items)


def new_payment_method(
    store: Store, rng: np.random.Generator, user_id: str, kind: str, balance: float | None = None
) -> str:
    """Add a payment method of `kind` to `user_id`; return its id."""
    while True:
        method_id = f"{kind}_{_digits(rng, 7)}"
        if (
            store.value("SELECT 1 FROM payment_methods WHERE payment_method_id = ?", (method_id,))
            is None
        ):
            break
    brand = last_four = None
    if kind == "credit_card":
        brand = CARD_BRANDS[int(rng.integers(len(CARD_BRANDS)))]
        last_four = _digits(rng, 4)
    if kind == "gift_card" and balance is None:
        balance = dollars(int(rng.integers(0, 40_000)))
    store.execute(
        "INSERT INTO payment_methods VALUES (?, ?, ?, ?, ?, ?)",
        (method_id, user_id, kind, brand, last_four, balance if kind == "gift_card" else None),
    )
    return method_id


def add_order(
    store: Store,
    rng: np.random.Generator,
    user_id: str,
    status: str,
    item_ids: Sequence[str],
    method_id: str,
    *,
    delivered_days_ago: int | None = None,
    address: Mapping[str, str] | None = None,
    prices: Sequence[float] | None = None,
) -> str:
    """Add an order of `item_ids` for `user_id` in `status`, paid with `method_id`;
    return its id. A shipped order gets tracking; a delivered one (or one with a
    return or exchange requested) a delivery date; a cancelled one its refund.
    `address` (default: the user's) and `prices` (default: the items') save queries."""
    while True:
        order_id = f"#W{_digits(rng, 7)}"
        if store.value("SELECT 1 FROM orders WHERE order_id = ?", (order_id,)) is None:
            break
    if address is None:
        address = store.row(
            "SELECT address1, address2, city, state, country, zip FROM users WHERE user_id = ?",
            (user_id,),
        )
    shipped = status not in ("pending", "cancelled")
    delivered = status in ("delivered", "return requested", "exchange requested")
    if delivered:
        age = int(rng.integers(1, 60)) if delivered_days_ago is None else delivered_days_ago
        delivered_date = days_ago(age)
        placed = days_ago(age + int(rng.integers(3, 10)))
    else:
        delivered_date = None
        placed = days_ago(int(rng.integers(0, 6)) if status != "cancelled" else 20)
    courier = COURIERS[int(rng.integers(len(COURIERS)))] if shipped else None
    tracking = _digits(rng, 12) if shipped else None
    reason = None
    if status == "cancelled":
        reason = ("no longer needed", "ordered by mistake")[int(rng.integers(2))]
    store.execute(
        "INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
        (
            order_id,
            user_id,
            status,
            address["address1"],
            address["address2"],
            address["city"],
            address["state"],
            address["country"],
            address["zip"],
            placed,
            delivered_date,
            courier,
            tracking,
            reason,
        ),
    )
    if prices is None:
        prices = [_price(store, item_id) for item_id in item_ids]
    total = sum(cents(price) for price in prices)
    store.executemany(
        "INSERT INTO order_items VALUES (?, ?, ?, ?)",
        [(order_id, line, i, p) for line, (i, p) in enumerate(zip(item_ids, prices, strict=True))],
    )
    store.execute(
        "INSERT INTO payments VALUES (?, 0, 'payment', ?, ?)", (order_id, method_id, dollars(total))
    )
    if status == "cancelled":
        store.execute(
            "INSERT INTO payments VALUES (?, 1, 'refund', ?, ?)",
            (order_id, method_id, dollars(total)),
        )
    if status in ("return requested", "exchange requested"):
        first = [item_ids[0]]
        if status == "return requested":
            store.execute(
                "INSERT INTO requests VALUES (?, 'return', ?, NULL, ?, ?)",
                (order_id, json.dumps(first), method_id, dollars(cents(_price(store, first[0])))),
            )
        else:
            store.execute(
                "INSERT INTO requests VALUES (?, 'exchange', ?, ?, ?, 0.0)",
                (order_id, json.dumps(first), json.dumps(first), method_id),
            )
    return order_id


def _price(store: Store, item_id: str) -> float:
    return store.value("SELECT price FROM items WHERE item_id = ?", (item_id,))


def build_world(seed: int) -> Store:
    """The whole shop of `seed`: users, payment methods, products, orders."""
    rng = np.random.default_rng([int(seed), 29])
    store = Store(SCHEMA)
    taken: set[str] = set()
    _catalog(store, rng, taken)
    catalog: dict[str, list[str]] = {}
    for row in store.rows("SELECT item_id, product_id FROM items ORDER BY item_id"):
        catalog.setdefault(row["product_id"], []).append(row["item_id"])
    product_ids = sorted(catalog)
    names: set[tuple[str, str, str]] = set()
    for _ in range(USERS):
        first = FIRST_NAMES[int(rng.integers(len(FIRST_NAMES)))]
        last = LAST_NAMES[int(rng.integers(len(LAST_NAMES)))]
        number = _unique(rng, taken, lambda r: _digits(r, 4))
        user_id = f"{first.lower()}_{last.lower()}_{number}"
        email = f"{first.lower()}.{last.lower()}{number}@example.com"
        address = new_address(rng)
        while (first, last, address["zip"]) in names:  # name and zip find one user
            address = new_address(rng)
        names.add((first, last, address["zip"]))
        store.execute(
            "INSERT INTO users VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (user_id, first, last, email, *address.values()),
        )
        methods = [new_payment_method(store, rng, user_id, "credit_card")]
        if rng.random() < 0.5:
            methods.append(new_payment_method(store, rng, user_id, "paypal"))
        if rng.random() < 0.5:
            methods.append(new_payment_method(store, rng, user_id, "gift_card"))
        for _ in range(int(rng.integers(1, 4))):
            status = STATUSES[int(rng.choice(len(STATUSES), p=_STATUS_WEIGHTS))]
            count = int(rng.integers(1, 4))
            chosen = rng.choice(len(product_ids), size=count, replace=False)
            items = [
                catalog[product_ids[int(p)]][int(rng.integers(len(catalog[product_ids[int(p)]])))]
                for p in chosen
            ]
            method = methods[int(rng.integers(len(methods)))]
            add_order(store, rng, user_id, status, items, method)
    return store


@dataclass(frozen=True)
class WorldView:
    """What tasks read of a world and never change: its products, their variants
    (options parsed) and the users who have a namesake in another zip code."""

    products: tuple[dict[str, Any], ...]
    variants: dict[str, tuple[dict[str, Any], ...]]
    namesakes: tuple[str, ...]
    #: user id -> (their namesake's user row, the namesake's first payment method id)
    twins: dict[str, tuple[dict[str, Any], str]]


_VIEWS: dict[str, WorldView] = {}


def world_view(store: Store) -> WorldView:
    """The `WorldView` of the world `store` was copied from, read once per process
    (a world is known by its product ids, which its seed draws)."""
    key = store.value(
        "SELECT group_concat(product_id, ',') FROM (SELECT product_id FROM products "
        "ORDER BY product_id)"
    )
    found = _VIEWS.get(key)
    if found is None:
        products = tuple(store.rows("SELECT product_id, name FROM products ORDER BY product_id"))
        variants: dict[str, list[dict[str, Any]]] = {p["product_id"]: [] for p in products}
        for row in store.rows(
            "SELECT i.*, p.name FROM items i JOIN products p USING (product_id) ORDER BY item_id"
        ):
            row["options"] = json.loads(row["options"])
            variants[row["product_id"]].append(row)
        namesakes = store.rows(
            "SELECT u.user_id, (SELECT v.user_id FROM users v WHERE v.first_name = u.first_name "
            "AND v.last_name = u.last_name AND v.zip != u.zip ORDER BY v.user_id) AS twin "
            "FROM users u WHERE twin IS NOT NULL ORDER BY u.user_id"
        )
        twins = {}
        for row in namesakes:
            twin = store.row("SELECT * FROM users WHERE user_id = ?", (row["twin"],))
            method = store.value(
                "SELECT payment_method_id FROM payment_methods WHERE user_id = ? "
                "ORDER BY payment_method_id",
                (row["twin"],),
            )
            twins[row["user_id"]] = (twin, method)
        found = WorldView(
            products,
            {k: tuple(v) for k, v in variants.items()},
            tuple(r["user_id"] for r in namesakes),
            twins,
        )
        if len(_VIEWS) >= 8:
            _VIEWS.pop(next(iter(_VIEWS)))
        _VIEWS[key] = found
    return found
