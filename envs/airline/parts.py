"""The pieces a task is made of: one user request each (`Part`).

Each builder sets up what its request needs in the task's own store (a new
reservation of the user, a flight the airline cancelled or delayed) and returns
the gold write that fulfils it, the read calls that find it, the values the
agent must tell, and the request in words, with ids (easy) and without (medium,
hard). `tasks.py` puts parts together into a task per level.

Mentions are chosen so that no two actions of one task can be confused: each
names its own reservation id or flight number, and only the flight change
names a travel date.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from envgym.envs.airline.world import (
    AIRPORTS,
    CANCELLED_COMPENSATION,
    DATES,
    DELAYED_COMPENSATION,
    INSURANCE_PRICE,
    TODAY,
    add_reservation,
    free_bags,
    money,
    random_legs,
    shift,
)
from envgym.envs.toolworld import Action, Store

__all__ = ["Ctx", "Part", "amount", "trip_words"]

CITY = dict(AIRPORTS)
NUMBERS = {1: "one", 2: "two", 3: "three"}


def amount(value: int) -> str:
    """An output as the grader compares it (``1234.00``)."""
    return f"{value:.2f}"


@dataclass
class Part:
    action: Action
    lookups: tuple[Action, ...]
    wish: str
    specifics: str
    inform: str
    outputs: tuple[str, ...] = ()
    reservation_id: str = ""
    change_of_mind: tuple[str, ...] = ()
    change_message: str = ""
    reason: str = ""


@dataclass
class Ctx:
    """What the builders of one task share."""

    store: Store
    rng: np.random.Generator
    user: dict[str, Any]
    payment_id: str
    used: set[str] = field(default_factory=set)

    def pick(self, options: Sequence[Any]) -> Any:
        return options[int(self.rng.integers(len(options)))]

    def reservation(
        self,
        cabin: str,
        *,
        first: str | None = None,
        round_trip: bool | None = None,
        passengers: int | None = None,
        insurance: bool = False,
        created_at: str | None = None,
        ok: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any]:
        """A new reservation of the user on flights no other part uses, with the
        seats for its passengers, whose flight dates are all available (or pass
        `ok`, given a flight date row, instead)."""
        rng = self.rng
        count = passengers or int(rng.choice(3, p=(0.5, 0.35, 0.15))) + 1
        trip = bool(rng.random() < 0.4) if round_trip is None else round_trip
        for _ in range(50):
            day = first or DATES[int(rng.integers(13, 20))]
            legs = random_legs(self.store, rng, day, round_trip=trip, exclude=self.used)
            if all(
                r[f"seats_{cabin}"] >= count and (ok(r) if ok else r["status"] == "available")
                for r in legs
            ):
                break
        created = (
            created_at
            or f"{shift(TODAY, -int(rng.integers(3, 25)))}T{int(rng.integers(7, 22)):02d}:00:00"
        )
        res = add_reservation(
            self.store,
            rng,
            self.user,
            legs,
            cabin,
            passengers=count,
            insurance=insurance,
            created_at=created,
        )
        self.used.update(leg["flight_number"] for leg in legs)
        return res

    def lookup(self, res: dict[str, Any]) -> Action:
        return Action("get_reservation_details", {"reservation_id": res["reservation_id"]})


def trip_words(res: dict[str, Any], dated: bool = True) -> str:
    kind = "round trip" if res["flight_type"] == "round_trip" else "one-way trip"
    o, d = res["origin"], res["destination"]
    when = f" on {res['flights'][0]['date']}" if dated else ""
    return f"{kind} from {CITY[o]} ({o}) to {CITY[d]} ({d}){when}"


def _paid(res: dict[str, Any]) -> int:
    return sum(p["amount"] for p in res["payment_history"])


# ---------------------------------------------------------------------- cancel
CANCEL_WHY = {
    "recent": ("change_of_plan", "I only booked it this morning and my plans have changed."),
    "business": ("change_of_plan", "I won't be travelling after all."),
    "airline": ("airline_cancelled_flight", "The airline cancelled my flight {number}."),
    "health": ("health", "I'm ill and my doctor says I shouldn't fly."),
    "weather": ("weather", "A big storm is forecast there and I'd rather not go."),
}


def cancel_part(ctx: Ctx, why: str, res: dict[str, Any] | None = None) -> Part:
    if res is None:
        cabin = "business" if why == "business" else ctx.pick(("basic_economy", "economy"))
        created = f"{shift(TODAY, -1)}T20:00:00" if why == "recent" else None
        if why == "recent" and ctx.rng.random() < 0.5:
            created = f"{TODAY}T08:00:00"
        res = ctx.reservation(cabin, insurance=why in ("health", "weather"), created_at=created)
    rid = res["reservation_id"]
    first = res["flights"][0]
    if why == "airline":
        ctx.store.execute(
            "UPDATE flight_dates SET status = 'cancelled' WHERE flight_number = ? AND date = ?",
            (first["flight_number"], first["date"]),
        )
    reason, because = CANCEL_WHY[why]
    because = because.format(number=first["flight_number"])
    refund = _paid(res)
    return Part(
        action=Action(
            "cancel_reservation",
            {"reservation_id": rid, "reason": reason},
            summary=f"cancel reservation {rid} ({trip_words(res, dated=False)}) with the "
            f"reason {reason}, refunding {money(refund)} to the original form of payment",
            mentions=(rid, "cancel"),
        ),
        lookups=(ctx.lookup(res),),
        wish=f"I need to cancel my {trip_words(res)}. {because}",
        specifics=f"Please cancel reservation {rid}. {because}",
        inform=f"Reservation {rid} is cancelled and {money(refund)} is refunded to your "
        "original form of payment.",
        outputs=(amount(refund),),
        reservation_id=rid,
    )


# ---------------------------------------------------------------------- bags
def bags_part(ctx: Ctx, res: dict[str, Any] | None = None, cabin: str | None = None) -> Part:
    res = res or ctx.reservation(ctx.pick(("basic_economy", "economy", "business")))
    rid = res["reservation_id"]
    count = len(res["passengers"])
    free = free_bags(ctx.user["membership"], cabin or res["cabin"]) * count
    add = int(ctx.rng.integers(1, 4))
    total = res["total_baggages"] + add
    nonfree = max(res["nonfree_baggages"], total - free)
    fee = (nonfree - res["nonfree_baggages"]) * 50
    bags = f"{NUMBERS[add]} checked bag{'s' * (add > 1)}"
    return Part(
        action=Action(
            "update_reservation_baggages",
            {
                "reservation_id": rid,
                "total_baggages": total,
                "nonfree_baggages": nonfree,
                "payment_id": ctx.payment_id,
            },
            summary=f"add {add} bag(s) to reservation {rid}, for {total} checked bags in total "
            f"of which {nonfree} are paid, charging {money(fee)} to {ctx.payment_id}",
            mentions=(rid, f"{total} checked bag"),
        ),
        lookups=(ctx.lookup(res),),
        wish=f"I'd like to add {bags} to my {trip_words(res)}.",
        specifics=f"Please add {bags} to reservation {rid}.",
        inform=f"Reservation {rid} now has {total} checked bags; the bag fee is {money(fee)}.",
        outputs=(amount(fee),),
        reservation_id=rid,
    )


# ---------------------------------------------------------------------- change
def _dates_for(ctx: Ctx, res: dict[str, Any]) -> list[str]:
    """Dates the first flight of `res` could move to (same flight, available)."""
    first = res["flights"][0]
    last = res["flights"][1]["date"] if len(res["flights"]) > 1 else DATES[-1]
    count = len(res["passengers"])
    days = [shift(first["date"], d) for d in (-3, -2, -1, 1, 2, 3, 4)]
    days = [d for d in days if shift(TODAY, 2) <= d < last and d <= DATES[-1]]
    if not days:
        return []
    rows = ctx.store.rows(
        f"SELECT date FROM flight_dates WHERE flight_number = ? AND status = 'available' "
        f"AND seats_{res['cabin']} >= ? AND date IN ({', '.join('?' * len(days))}) ORDER BY date",
        (first["flight_number"], count, *days),
    )
    return [r["date"] for r in rows]


def change_part(
    ctx: Ctx, res: dict[str, Any] | None = None, *, change_of_mind: bool = False
) -> Part | None:
    """Move the first flight of a (not basic economy) reservation to another date."""
    res = res or ctx.reservation(ctx.pick(("economy", "business")))
    days = _dates_for(ctx, res)
    if len(days) < 1 + change_of_mind:
        return None
    chosen = [
        days[int(i)] for i in ctx.rng.choice(len(days), size=1 + change_of_mind, replace=False)
    ]
    new_day = chosen[0]
    rid, first = res["reservation_id"], res["flights"][0]
    number = first["flight_number"]
    price = ctx.store.value(
        f"SELECT price_{res['cabin']} FROM flight_dates WHERE flight_number = ? AND date = ?",
        (number, new_day),
    )
    difference = (price - first["price"]) * len(res["passengers"])
    flights = [{"flight_number": number, "date": new_day}] + [
        {"flight_number": f["flight_number"], "date": f["date"]} for f in res["flights"][1:]
    ]
    way = "charged to" if difference >= 0 else "refunded to"
    part = Part(
        action=Action(
            "update_reservation_flights",
            {
                "reservation_id": rid,
                "cabin": res["cabin"],
                "flights": flights,
                "payment_id": ctx.payment_id,
            },
            summary=f"change reservation {rid}: flight {number} moves from {first['date']} to "
            f"{new_day} in {res['cabin']}, the other flights stay; the fare difference of "
            f"{money(abs(difference))} is {way} {ctx.payment_id}",
            mentions=(number, new_day),
        ),
        lookups=(
            ctx.lookup(res),
            Action(
                "search_direct_flight",
                {"origin": first["origin"], "destination": first["destination"], "date": new_day},
            ),
        ),
        wish=f"I need to move my {trip_words(res)} to {new_day}, same flight.",
        specifics=f"Please move flight {number} of reservation {rid} to {new_day}.",
        inform=f"Flight {number} now flies on {new_day}; the fare difference of "
        f"{money(abs(difference))} was {way} your payment method.",
        outputs=(amount(abs(difference)),),
        reservation_id=rid,
    )
    if change_of_mind:
        was = chosen[1]
        part.wish = f"I need to move my {trip_words(res)} to {was}, same flight."
        part.change_of_mind = (was,)
        part.change_message = ctx.pick(
            (
                f"Hmm, actually no. Not {was}: please make it {new_day} instead.",
                f"Wait, I've changed my mind: {new_day} works better than {was}.",
                f"Sorry, on second thought I'd rather fly on {new_day}, not {was}.",
            )
        )
    return part


def upgrade_part(ctx: Ctx, res: dict[str, Any] | None = None) -> Part:
    """Upgrade an economy reservation to business on the same flights."""
    res = res or ctx.reservation(
        "economy", ok=lambda r: r["status"] == "available" and r["seats_business"] >= 3
    )
    rid = res["reservation_id"]
    flights = [{"flight_number": f["flight_number"], "date": f["date"]} for f in res["flights"]]
    now = sum(
        ctx.store.value(
            "SELECT price_business FROM flight_dates WHERE flight_number = ? AND date = ?",
            (f["flight_number"], f["date"]),
        )
        for f in flights
    )
    difference = (now - sum(f["price"] for f in res["flights"])) * len(res["passengers"])
    return Part(
        action=Action(
            "update_reservation_flights",
            {
                "reservation_id": rid,
                "cabin": "business",
                "flights": flights,
                "payment_id": ctx.payment_id,
            },
            summary=f"upgrade reservation {rid} from economy to business on all its flights, "
            f"charging the fare difference of {money(difference)} to {ctx.payment_id}",
            mentions=(rid, "business"),
        ),
        lookups=(ctx.lookup(res),),
        wish=f"I'd like to upgrade my {trip_words(res)} to business class.",
        specifics=f"Please upgrade reservation {rid} to business class.",
        inform=f"Reservation {rid} is now in business class; the fare difference of "
        f"{money(difference)} was charged.",
        outputs=(amount(difference),),
        reservation_id=rid,
    )


def passenger_part(ctx: Ctx, res: dict[str, Any] | None = None) -> Part:
    """Correct a passenger's date of birth."""
    res = res or ctx.reservation(ctx.pick(("basic_economy", "economy", "business")))
    rid = res["reservation_id"]
    people = [dict(p) for p in res["passengers"]]
    who = people[int(ctx.rng.integers(len(people)))]
    year, month, day = (int(x) for x in who["dob"].split("-"))
    new = f"{year + ctx.pick((-1, 1))}-{month:02d}-{day:02d}"
    name = f"{who['first_name']} {who['last_name']}"
    who["dob"] = new
    return Part(
        action=Action(
            "update_reservation_passengers",
            {"reservation_id": rid, "passengers": people},
            summary=f"update reservation {rid}: passenger {name}'s date of birth becomes {new}, "
            "the other passengers stay as they are",
            mentions=(rid, new),
        ),
        lookups=(ctx.lookup(res),),
        wish=f"On my {trip_words(res)}, {name}'s date of birth is wrong: it should be {new}.",
        specifics=f"On reservation {rid}, {name}'s date of birth should be {new}.",
        inform=f"{name}'s date of birth on reservation {rid} is now {new}.",
        reservation_id=rid,
    )


def compensation_part(ctx: Ctx, kind: str, res: dict[str, Any] | None = None) -> Part:
    """A certificate for a cancelled or delayed flight (the user must be eligible)."""
    if res is None:
        eligible = ctx.user["membership"] != "regular"
        cabin = ctx.pick(("economy", "business")) if eligible else "business"
        insurance = bool(ctx.rng.random() < 0.3)
        res = ctx.reservation(cabin, first=shift(TODAY, 1), insurance=insurance)
        first = res["flights"][0]
        ctx.store.execute(
            "UPDATE flight_dates SET status = ? WHERE flight_number = ? AND date = ?",
            (kind, first["flight_number"], first["date"]),
        )
    first = res["flights"][0]
    count = len(res["passengers"])
    each = CANCELLED_COMPENSATION if kind == "cancelled" else DELAYED_COMPENSATION
    total = each * count
    user_id = ctx.user["user_id"]
    people = "passenger" if count == 1 else "passengers"
    return Part(
        action=Action(
            "send_certificate",
            {"user_id": user_id, "amount": total},
            summary=f"send you a travel certificate of {money(total)} ({money(each)} for each "
            f"of {count} {people}) as compensation for the {kind} flight {first['flight_number']}",
            mentions=("certificate", amount(total)),
        ),
        lookups=(ctx.lookup(res),),
        wish=f"My flight {first['flight_number']} on {first['date']} was {kind} and I'm really "
        "unhappy about it. I'd like some compensation.",
        specifics=f"My flight {first['flight_number']} on {first['date']} (reservation "
        f"{res['reservation_id']}) was {kind}. I'd like compensation for it.",
        inform=f"A travel certificate of {money(total)} has been added to your account.",
        outputs=(amount(total),),
        reservation_id=res["reservation_id"],
    )


def book_part(ctx: Ctx) -> Part:
    """Book a one-way trip on a named flight."""
    store, rng, user = ctx.store, ctx.rng, ctx.user
    cabin = ctx.pick(("basic_economy", "economy", "business"))
    saved = store.rows(
        "SELECT first_name, last_name, dob FROM saved_passengers WHERE user_id = ?",
        (user["user_id"],),
    )
    people = [
        {
            "first_name": user["first_name"],
            "last_name": user["last_name"],
            "dob": user["date_of_birth"],
        }
    ] + saved[: int(rng.integers(0, 2))]
    for _ in range(100):
        day = DATES[int(rng.integers(13, 25))]
        number = ctx.pick(store.rows("SELECT flight_number FROM flights"))["flight_number"]
        row = store.row(
            "SELECT f.origin, f.destination, d.* FROM flights f JOIN flight_dates d "
            "USING (flight_number) WHERE flight_number = ? AND date = ?",
            (number, day),
        )
        if row["status"] == "available" and row[f"seats_{cabin}"] >= len(people):
            break
    insurance = "yes" if rng.random() < 0.4 else "no"
    count = len(people)
    bags = int(rng.integers(0, 3))
    nonfree = max(0, bags - free_bags(user["membership"], cabin) * count)
    total = row[f"price_{cabin}"] * count + INSURANCE_PRICE * count * (insurance == "yes")
    total += 50 * nonfree
    names = " and ".join(f"{p['first_name']} {p['last_name']}" for p in people)
    others = "".join(
        f", and {p['first_name']} {p['last_name']} (born {p['dob']})" for p in people[1:]
    )
    o, d = row["origin"], row["destination"]
    cover = "with travel insurance" if insurance == "yes" else "without travel insurance"
    return Part(
        action=Action(
            "book_reservation",
            {
                "user_id": user["user_id"],
                "origin": o,
                "destination": d,
                "flight_type": "one_way",
                "cabin": cabin,
                "flights": [{"flight_number": number, "date": day}],
                "passengers": people,
                "payment_methods": [{"payment_id": ctx.payment_id, "amount": total}],
                "total_baggages": bags,
                "nonfree_baggages": nonfree,
                "insurance": insurance,
            },
            summary=f"book flight {number} from {o} to {d} on {day} in {cabin} for {names}, "
            f"with {bags} checked bags ({nonfree} paid), {cover}, charging {money(total)} "
            f"to {ctx.payment_id}",
            mentions=(number, day),
        ),
        lookups=(Action("search_direct_flight", {"origin": o, "destination": d, "date": day}),),
        wish="",
        specifics=f"I'd like to book flight {number} from {CITY[o]} ({o}) to {CITY[d]} ({d}) "
        f"on {day}, one way in {cabin.replace('_', ' ')}, for me{others}. "
        f"{NUMBERS.get(bags, 'No').capitalize()} checked bag{'s' * (bags != 1)}, {cover}.",
        inform=f"You're booked on flight {number} on {day}; the total charged is {money(total)}.",
        outputs=(amount(total),),
    )
