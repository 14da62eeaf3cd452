"""The airline world: its schema, its rules in numbers, and its seeded generation.

`build_world(world_seed)` makes the store every task of that seed starts from:
30 airports, 72 daily flights (both directions of 36 routes) with a status,
seats and prices per cabin for each date of June 2026, 240 users with saved
passengers and payment methods (credit cards, gift cards with a balance, travel
certificates), and their reservations; 40 of the users share their name with
another user in another zip code (the hard tasks' distractors). "Today" is fixed (`TODAY`, `NOW`) so
tasks replay exactly. Everything is ASCII; amounts are whole dollars.

The helpers below it (`free_bags`, `add_reservation`, ...) are shared by the
tools and the task generator.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import numpy as np

from envgym.envs.toolworld import Store

__all__ = [
    "AIRPORTS",
    "BAG_PRICE",
    "CABINS",
    "CANCELLED_COMPENSATION",
    "DATES",
    "DELAYED_COMPENSATION",
    "INSURANCE_PRICE",
    "NOW",
    "SCHEMA",
    "TODAY",
    "add_reservation",
    "build_world",
    "free_bags",
    "money",
    "new_id",
]

TODAY = "2026-06-10"
#: The moment every conversation happens at (for the 24-hour cancellation rule).
NOW = "2026-06-10T14:00:00"
#: The dates flights are listed for: June 2026.
DATES = tuple(f"2026-06-{day:02d}" for day in range(1, 29))
CABINS = ("basic_economy", "economy", "business")
INSURANCE_PRICE = 30
BAG_PRICE = 50
CANCELLED_COMPENSATION = 100
DELAYED_COMPENSATION = 50
#: Free checked bags per passenger, by membership and cabin.
FREE_BAGS = {
    "regular": {"basic_economy": 0, "economy": 1, "business": 2},
    "silver": {"basic_economy": 1, "economy": 2, "business": 3},
    "gold": {"basic_economy": 2, "economy": 3, "business": 3},
}

AIRPORTS = (
    ("ATL", "Atlanta"),
    ("ANC", "Anchorage"),
    ("AUS", "Austin"),
    ("BNA", "Nashville"),
    ("BOS", "Boston"),
    ("BWI", "Baltimore"),
    ("CLT", "Charlotte"),
    ("DCA", "Washington"),
    ("DEN", "Denver"),
    ("DFW", "Dallas-Fort Worth"),
    ("DTW", "Detroit"),
    ("EWR", "Newark"),
    ("HNL", "Honolulu"),
    ("IAH", "Houston"),
    ("JFK", "New York"),
    ("LAS", "Las Vegas"),
    ("LAX", "Los Angeles"),
    ("MCO", "Orlando"),
    ("MIA", "Miami"),
    ("MSP", "Minneapolis"),
    ("MSY", "New Orleans"),
    ("ORD", "Chicago"),
    ("PDX", "Portland"),
    ("PHL", "Philadelphia"),
    ("PHX", "Phoenix"),
    ("SAN", "San Diego"),
    ("SEA", "Seattle"),
    ("SFO", "San Francisco"),
    ("SLC", "Salt Lake City"),
    ("TPA", "Tampa"),
)
FIRST_NAMES = (
    "Aarav Amelia Ava Chen Daniel Emma Ethan Fatima Grace Hiro Isabella James Juan Kai "
    "Lei Liam Lucas Maya Mei Mia Noah Nora Olivia Omar Priya Raj Sofia Yara Yusuf Zoe"
).split()
LAST_NAMES = (
    "Ahmed Brown Chen Garcia Gonzalez Ito Johnson Kim Kovacs Lee Li Lopez Martin Moore "
    "Muller Nguyen Patel Rossi Sanchez Santos Silva Smith Taylor Wang Wilson Young"
).split()
CARD_BRANDS = ("visa", "mastercard", "amex")
MEMBERSHIPS = ("regular", "silver", "gold")

SCHEMA = """
CREATE TABLE airports (code TEXT PRIMARY KEY, city TEXT NOT NULL);
CREATE TABLE flights (
    flight_number TEXT PRIMARY KEY,
    origin TEXT NOT NULL REFERENCES airports,
    destination TEXT NOT NULL REFERENCES airports,
    departure_time TEXT NOT NULL,
    arrival_time TEXT NOT NULL
);
CREATE INDEX flights_route ON flights (origin, destination);
CREATE INDEX flights_destination ON flights (destination);
CREATE TABLE flight_dates (
    flight_number TEXT NOT NULL REFERENCES flights,
    date TEXT NOT NULL,
    status TEXT NOT NULL,
    seats_basic_economy INTEGER NOT NULL,
    seats_economy INTEGER NOT NULL,
    seats_business INTEGER NOT NULL,
    price_basic_economy INTEGER NOT NULL,
    price_economy INTEGER NOT NULL,
    price_business INTEGER NOT NULL,
    PRIMARY KEY (flight_number, date)
);
CREATE TABLE users (
    user_id TEXT PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    date_of_birth TEXT NOT NULL,
    zip_code TEXT NOT NULL,
    membership TEXT NOT NULL
);
CREATE INDEX users_name ON users (last_name, first_name);
CREATE TABLE saved_passengers (
    user_id TEXT NOT NULL REFERENCES users,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    dob TEXT NOT NULL
);
CREATE INDEX saved_passengers_user ON saved_passengers (user_id);
CREATE TABLE payment_methods (
    payment_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users,
    source TEXT NOT NULL,
    brand TEXT,
    last_four TEXT,
    amount INTEGER
);
CREATE INDEX payment_methods_user ON payment_methods (user_id);
CREATE TABLE reservations (
    reservation_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users,
    origin TEXT NOT NULL,
    destination TEXT NOT NULL,
    flight_type TEXT NOT NULL,
    cabin TEXT NOT NULL,
    total_baggages INTEGER NOT NULL,
    nonfree_baggages INTEGER NOT NULL,
    insurance TEXT NOT NULL,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL,
    cancel_reason TEXT
);
CREATE INDEX reservations_user ON reservations (user_id);
CREATE TABLE reservation_flights (
    reservation_id TEXT NOT NULL REFERENCES reservations,
    position INTEGER NOT NULL,
    flight_number TEXT NOT NULL,
    date TEXT NOT NULL,
    origin TEXT NOT NULL,
    destination TEXT NOT NULL,
    price INTEGER NOT NULL,
    PRIMARY KEY (reservation_id, position)
);
CREATE TABLE reservation_passengers (
    reservation_id TEXT NOT NULL REFERENCES reservations,
    position INTEGER NOT NULL,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    dob TEXT NOT NULL,
    PRIMARY KEY (reservation_id, position)
);
CREATE TABLE payments (
    reservation_id TEXT NOT NULL REFERENCES reservations,
    payment_id TEXT NOT NULL,
    amount INTEGER NOT NULL,
    kind TEXT NOT NULL
);
CREATE INDEX payments_reservation ON payments (reservation_id);
"""

_ID_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def money(amount: int | float) -> str:
    """An amount as the policy says to state it: ``$1,234.00``."""
    return f"${amount:,.2f}"


def free_bags(membership: str, cabin: str) -> int:
    """Free checked bags per passenger."""
    return FREE_BAGS[membership][cabin]


def shift(date: str, days: int) -> str:
    return (dt.date.fromisoformat(date) + dt.timedelta(days=days)).isoformat()


def new_id(rng: np.random.Generator, length: int = 6) -> str:
    return "".join(_ID_CHARS[int(i)] for i in rng.integers(len(_ID_CHARS), size=length))


def _status(rng: np.random.Generator, date: str) -> str:
    roll = rng.random()
    if date < TODAY:
        return "cancelled" if roll < 0.04 else "landed"
    if date <= shift(TODAY, 2):
        return "cancelled" if roll < 0.05 else "delayed" if roll < 0.15 else "available"
    return "cancelled" if roll < 0.02 else "available"


def _flights(store: Store, rng: np.random.Generator) -> None:
    codes = [code for code, _ in AIRPORTS]
    pairs: set[tuple[str, str]] = set()
    while len(pairs) < 36:
        a, b = sorted(rng.choice(len(codes), size=2, replace=False))
        pairs.add((codes[a], codes[b]))
    numbers = [f"HAT{n:03d}" for n in rng.choice(np.arange(1, 1000), size=72, replace=False)]
    flights, dates = [], []
    for i, (a, b) in enumerate(sorted(pairs)):
        hours = int(rng.integers(1, 7))
        for j, (origin, destination) in enumerate(((a, b), (b, a))):
            start = int(rng.integers(5, 17)) * 60 + int(rng.choice((0, 15, 30, 45)))
            end = min(start + hours * 60 + int(rng.choice((0, 20, 40))), 23 * 60 + 59)
            number = numbers[2 * i + j]
            flights.append(
                (
                    number,
                    origin,
                    destination,
                    f"{start // 60:02d}:{start % 60:02d}:00",
                    f"{end // 60:02d}:{end % 60:02d}:00",
                )
            )
            base = 40 + 30 * hours
            for date in DATES:
                basic = int(base * rng.uniform(0.8, 1.4))
                dates.append(
                    (
                        number,
                        date,
                        _status(rng, date),
                        *(int(n) for n in rng.integers(0, 21, size=2)),
                        int(rng.integers(0, 11)),
                        basic,
                        int(basic * rng.uniform(1.3, 1.8)),
                        int(basic * rng.uniform(3, 5)),
                    )
                )
    store.executemany("INSERT INTO airports VALUES (?, ?)", AIRPORTS)
    store.executemany("INSERT INTO flights VALUES (?, ?, ?, ?, ?)", flights)
    store.executemany("INSERT INTO flight_dates VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", dates)


def _dob(rng: np.random.Generator) -> str:
    year, month, day = (
        int(rng.integers(1950, 2006)),
        int(rng.integers(1, 13)),
        int(rng.integers(1, 29)),
    )
    return f"{year}-{month:02d}-{day:02d}"


def add_user(
    store: Store, rng: np.random.Generator, first: str, last: str, membership: str | None = None
) -> dict[str, Any]:
    """A new user with saved passengers and payment methods; returns its row."""
    while True:
        digits = int(rng.integers(1000, 10000))
        user_id = f"{first.lower()}_{last.lower()}_{digits}"
        if store.value("SELECT 1 FROM users WHERE user_id = ?", (user_id,)) is None:
            break
    row = {
        "user_id": user_id,
        "first_name": first,
        "last_name": last,
        "email": f"{first.lower()}.{last.lower()}{digits}@example.com",
        "date_of_birth": _dob(rng),
        "zip_code": f"{int(rng.integers(10000, 99999))}",
        "membership": membership or MEMBERSHIPS[int(rng.choice(3, p=(0.5, 0.3, 0.2)))],
    }
    store.execute("INSERT INTO users VALUES (?, ?, ?, ?, ?, ?, ?)", tuple(row.values()))
    for _ in range(int(rng.integers(0, 3))):
        other = str(rng.choice(FIRST_NAMES))
        store.execute(
            "INSERT INTO saved_passengers VALUES (?, ?, ?, ?)",
            (user_id, other, str(rng.choice((last, *LAST_NAMES[:5]))), _dob(rng)),
        )
    methods = [("credit_card", str(rng.choice(CARD_BRANDS)), None)]
    if rng.random() < 0.4:
        methods.append(("credit_card", str(rng.choice(CARD_BRANDS)), None))
    for _ in range(int(rng.integers(0, 3))):
        methods.append(("gift_card", None, int(rng.integers(1, 50)) * 10))
    if rng.random() < 0.3:
        methods.append(("certificate", None, int(rng.choice((100, 150, 250, 500)))))
    for source, brand, amount in methods:
        while True:
            payment_id = f"{source}_{int(rng.integers(1_000_000, 10_000_000))}"
            if store.value("SELECT 1 FROM payment_methods WHERE payment_id = ?", (payment_id,)):
                continue
            break
        four = f"{int(rng.integers(10000)):04d}" if source == "credit_card" else None
        store.execute(
            "INSERT INTO payment_methods VALUES (?, ?, ?, ?, ?, ?)",
            (payment_id, user_id, source, brand, four, amount),
        )
    return row


def add_reservation(
    store: Store,
    rng: np.random.Generator,
    user: dict[str, Any],
    legs: Sequence[dict[str, Any]],
    cabin: str,
    *,
    passengers: int = 1,
    insurance: bool = False,
    created_at: str,
    status: str = "active",
) -> dict[str, Any]:
    """Insert a reservation of `user` on `legs` (rows of `random_legs`), paid in
    full with the user's first credit card; returns what `get_reservation_details`
    would (without reading it back)."""
    while True:
        reservation_id = new_id(rng)
        if (
            store.value("SELECT 1 FROM reservations WHERE reservation_id = ?", (reservation_id,))
            is None
        ):
            break
    round_trip = len(legs) == 2 and legs[0]["origin"] == legs[1]["destination"]
    people = [(user["first_name"], user["last_name"], user["date_of_birth"])]
    if passengers > 1:
        saved = store.rows(
            "SELECT first_name, last_name, dob FROM saved_passengers WHERE user_id = ?",
            (user["user_id"],),
        )
        while len(people) < passengers:
            if saved:
                people.append(tuple(saved.pop().values()))
            else:
                people.append((str(rng.choice(FIRST_NAMES)), user["last_name"], _dob(rng)))
    free = free_bags(user["membership"], cabin) * passengers
    total_bags = int(rng.integers(0, free + 1))
    values = (
        reservation_id,
        user["user_id"],
        legs[0]["origin"],
        legs[0]["destination"] if round_trip else legs[-1]["destination"],
        "round_trip" if round_trip else "one_way",
        cabin,
        total_bags,
        "yes" if insurance else "no",
        created_at,
        status,
        "change_of_plan" if status == "cancelled" else None,
    )
    store.execute("INSERT INTO reservations VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)", values)
    store.executemany(
        "INSERT INTO reservation_flights VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                reservation_id,
                i,
                leg["flight_number"],
                leg["date"],
                leg["origin"],
                leg["destination"],
                leg[f"price_{cabin}"],
            )
            for i, leg in enumerate(legs)
        ],
    )
    store.executemany(
        "INSERT INTO reservation_passengers VALUES (?, ?, ?, ?, ?)",
        [(reservation_id, i, *person) for i, person in enumerate(people)],
    )
    total = sum(leg[f"price_{cabin}"] for leg in legs) * passengers
    total += INSURANCE_PRICE * passengers if insurance else 0
    card = user.get("card") or store.value(
        "SELECT payment_id FROM payment_methods WHERE user_id = ? AND source = 'credit_card' "
        "ORDER BY payment_id LIMIT 1",
        (user["user_id"],),
    )
    rows = [(reservation_id, card, total, "booking")]
    if status == "cancelled":
        rows.append((reservation_id, card, -total, "refund"))
    store.executemany("INSERT INTO payments VALUES (?, ?, ?, ?)", rows)
    columns = ("reservation_id", "user_id", "origin", "destination", "flight_type", "cabin")
    return {
        **dict(zip(columns, values[:6], strict=True)),
        "total_baggages": total_bags,
        "nonfree_baggages": 0,
        "insurance": values[7],
        "created_at": created_at,
        "status": status,
        "flights": [
            {k: leg[k] for k in ("flight_number", "date", "origin", "destination", "status")}
            | {"price": leg[f"price_{cabin}"]}
            for leg in legs
        ],
        "passengers": [
            dict(zip(("first_name", "last_name", "dob"), p, strict=True)) for p in people
        ],
        "payment_history": [{"payment_id": r[1], "amount": r[2], "kind": r[3]} for r in rows],
    }


_LEG = (
    "SELECT d.*, f.origin, f.destination FROM flights f JOIN flight_dates d "
    "USING (flight_number) WHERE {} AND d.date = ?"
)


def random_legs(
    store: Store,
    rng: np.random.Generator,
    first: str,
    *,
    round_trip: bool,
    exclude: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """A flight on `first` (a date) and, for a round trip, its return 2-6 days
    later, as rows of `flight_dates` with the flight's origin and destination."""
    while True:
        leg = store.row(_LEG.format("f.rowid = ?"), (int(rng.integers(1, 73)), first))
        if leg["flight_number"] not in exclude:
            break
    legs = [leg]
    back = shift(first, int(rng.integers(2, 7)))
    if round_trip and back <= DATES[-1]:
        where = "f.origin = ? AND f.destination = ?"
        legs.append(store.row(_LEG.format(where), (leg["destination"], leg["origin"], back)))
    return legs


def build_world(world_seed: int) -> Store:
    """The airline world of `world_seed` (a few thousand rows)."""
    rng = np.random.default_rng([world_seed, 2026])
    store = Store(SCHEMA)
    _flights(store, rng)
    store.execute("BEGIN")
    for _ in range(200):
        user = add_user(store, rng, str(rng.choice(FIRST_NAMES)), str(rng.choice(LAST_NAMES)))
        for _ in range(int(rng.choice(4, p=(0.2, 0.4, 0.3, 0.1)))):
            first = DATES[int(rng.integers(len(DATES) - 3))]
            legs = random_legs(store, rng, first, round_trip=rng.random() < 0.4)
            created = shift(min(first, TODAY), -int(rng.integers(2, 30)))
            add_reservation(
                store,
                rng,
                user,
                legs,
                CABINS[int(rng.choice(3, p=(0.3, 0.5, 0.2)))],
                passengers=int(rng.choice(3, p=(0.6, 0.3, 0.1))) + 1,
                insurance=bool(rng.random() < 0.3),
                created_at=f"{created}T{int(rng.integers(6, 22)):02d}:00:00",
                status="cancelled" if rng.random() < 0.1 else "active",
            )
    # Distractors: 40 users share their name with another user in another zip code.
    users = store.rows("SELECT user_id, first_name, last_name, zip_code FROM users")
    for i in rng.choice(len(users), size=40, replace=False):
        user = users[int(i)]
        twin = add_user(store, rng, user["first_name"], user["last_name"])
        if twin["zip_code"] == user["zip_code"]:
            twin["zip_code"] = str(int(user["zip_code"]) % 89999 + 10001)
            store.execute(
                "UPDATE users SET zip_code = ? WHERE user_id = ?",
                (twin["zip_code"], twin["user_id"]),
            )
        legs = random_legs(store, rng, DATES[int(rng.integers(13, 20))], round_trip=False)
        add_reservation(
            store, rng, twin, legs, "economy", created_at=f"{shift(TODAY, -5)}T09:00:00"
        )
    store.execute("COMMIT")
    return store
