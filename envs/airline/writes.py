"""The airline's write tools: booking, cancelling, changing flights, passengers
and bags, and sending a certificate. Each checks everything first and only
then writes, so a refused call leaves the store as it was.
"""

from __future__ import annotations

import hashlib
from typing import Any

from envgym.envs.airline.reads import (
    bookable_flight,
    charge,
    check_chain,
    get_reservation,
    get_user,
    move_seats,
    payment_method,
    reservation_details,
)
from envgym.envs.airline.world import BAG_PRICE, INSURANCE_PRICE, NOW, TODAY
from envgym.envs.toolworld import Store, ToolError


def book_reservation(
    store: Store,
    user_id: str,
    origin: str,
    destination: str,
    flight_type: str,
    cabin: str,
    flights: list[dict],
    passengers: list[dict],
    payment_methods: list[dict],
    total_baggages: int,
    nonfree_baggages: int,
    insurance: str,
) -> dict[str, Any]:
    get_user(store, user_id)
    count = len(passengers)
    legs = [bookable_flight(store, f["flight_number"], f["date"], cabin, count) for f in flights]
    check_chain(legs)
    if legs[0]["origin"] != origin:
        raise ToolError(f"the first flight leaves from {legs[0]['origin']}, not {origin}.")
    end = origin if flight_type == "round_trip" else destination
    if legs[-1]["destination"] != end or destination not in [leg["destination"] for leg in legs]:
        raise ToolError(
            f"a {flight_type} trip {origin}-{destination} must end in {end} and reach "
            f"{destination}; these flights end in {legs[-1]['destination']}."
        )
    if nonfree_baggages > total_baggages:
        raise ToolError("nonfree_baggages cannot exceed total_baggages.")
    total = sum(leg[f"price_{cabin}"] for leg in legs) * count
    total += INSURANCE_PRICE * count * (insurance == "yes") + BAG_PRICE * nonfree_baggages
    paid = sum(p["amount"] for p in payment_methods)
    if paid != total:
        raise ToolError(
            f"the payments add up to ${paid} but the reservation costs ${total} "
            f"(flights x {count} passengers, insurance, extra bags); make them equal."
        )
    number = store.value("SELECT COUNT(*) FROM reservations")
    while True:
        digest = hashlib.sha256(f"{user_id}|{number}".encode()).digest()
        reservation_id = "".join("ABCDEFGHJKLMNPQRSTUVWXYZ23456789"[b % 32] for b in digest[:6])
        if store.value("SELECT 1 FROM reservations WHERE reservation_id = ?", (reservation_id,)):
            number += 1
            continue
        break
    amounts: dict[str, int] = {}
    for p in payment_methods:
        amounts[p["payment_id"]] = amounts.get(p["payment_id"], 0) + int(p["amount"])
    methods = [(payment_method(store, user_id, pid), amount) for pid, amount in amounts.items()]
    for method, amount in methods:
        if method["source"] != "credit_card" and amount > method["amount"]:
            raise ToolError(
                f"{method['payment_id']} has a balance of ${method['amount']}, less than the "
                f"${amount} to pay with it; use another payment method for the rest."
            )
    store.execute(
        "INSERT INTO reservations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', NULL)",
        (
            reservation_id,
            user_id,
            origin,
            destination,
            flight_type,
            cabin,
            total_baggages,
            nonfree_baggages,
            insurance,
            NOW,
        ),
    )
    for method, amount in methods:
        charge(store, method, amount, reservation_id, "booking")
    for i, leg in enumerate(legs):
        store.execute(
            "INSERT INTO reservation_flights VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                reservation_id,
                i,
                leg["flight_number"],
                leg["date"],
                leg["origin"],
                leg["destination"],
                leg[f"price_{cabin}"],
            ),
        )
    for i, p in enumerate(passengers):
        store.execute(
            "INSERT INTO reservation_passengers VALUES (?, ?, ?, ?, ?)",
            (reservation_id, i, p["first_name"].strip(), p["last_name"].strip(), p["dob"]),
        )
    move_seats(store, [(leg["flight_number"], leg["date"]) for leg in legs], cabin, -count)
    return {**reservation_details(store, reservation_id), "total_price": total}


def _active(store: Store, reservation_id: str) -> dict[str, Any]:
    found = get_reservation(store, reservation_id)
    if found["status"] != "active":
        raise ToolError(f"reservation {reservation_id} is cancelled; it cannot be changed.")
    return found


def _legs(store: Store, reservation_id: str) -> list[tuple[str, str]]:
    return [
        (r["flight_number"], r["date"])
        for r in store.rows(
            "SELECT flight_number, date FROM reservation_flights WHERE reservation_id = ? "
            "ORDER BY position",
            (reservation_id,),
        )
    ]


def _passenger_count(store: Store, reservation_id: str) -> int:
    return store.value(
        "SELECT COUNT(*) FROM reservation_passengers WHERE reservation_id = ?", (reservation_id,)
    )


def cancel_reservation(store: Store, reservation_id: str, reason: str) -> dict[str, Any]:
    found = _active(store, reservation_id)
    refunds = store.rows(
        "SELECT p.payment_id, SUM(p.amount) AS amount, m.source FROM payments p "
        "LEFT JOIN payment_methods m USING (payment_id) WHERE reservation_id = ? "
        "GROUP BY p.payment_id HAVING SUM(p.amount) > 0 ORDER BY p.payment_id",
        (reservation_id,),
    )
    for refund in refunds:
        if refund["source"] in ("gift_card", "certificate"):
            store.execute(
                "UPDATE payment_methods SET amount = amount + ? WHERE payment_id = ?",
                (refund["amount"], refund["payment_id"]),
            )
        store.execute(
            "INSERT INTO payments VALUES (?, ?, ?, 'refund')",
            (reservation_id, refund["payment_id"], -refund["amount"]),
        )
    future = [leg for leg in _legs(store, reservation_id) if leg[1] >= TODAY]
    move_seats(store, future, found["cabin"], _passenger_count(store, reservation_id))
    store.execute(
        "UPDATE reservations SET status = 'cancelled', cancel_reason = ? WHERE reservation_id = ?",
        (reason, reservation_id),
    )
    return {
        "reservation_id": reservation_id,
        "status": "cancelled",
        "refunds": [{"payment_id": r["payment_id"], "amount": r["amount"]} for r in refunds],
        "refund_total": sum(r["amount"] for r in refunds),
    }


def update_reservation_flights(
    store: Store, reservation_id: str, cabin: str, flights: list[dict], payment_id: str
) -> dict[str, Any]:
    found = _active(store, reservation_id)
    method = payment_method(store, found["user_id"], payment_id, for_change=True)
    count = _passenger_count(store, reservation_id)
    old = {
        (r["flight_number"], r["date"]): r["price"]
        for r in store.rows(
            "SELECT flight_number, date, price FROM reservation_flights WHERE reservation_id = ?",
            (reservation_id,),
        )
    }
    legs, prices = [], []
    for f in flights:
        key = (f["flight_number"], f["date"])
        if key in old and cabin == found["cabin"]:
            leg = store.row("SELECT * FROM flights WHERE flight_number = ?", (f["flight_number"],))
            legs.append({**leg, "date": f["date"]})
            prices.append(old[key])
        else:
            leg = bookable_flight(store, f["flight_number"], f["date"], cabin, count)
            legs.append(leg)
            prices.append(leg[f"price_{cabin}"])
    check_chain(legs)
    difference = (sum(prices) - sum(old.values())) * count
    charge(store, method, difference, reservation_id, "change")
    new_legs = [(leg["flight_number"], leg["date"]) for leg in legs]
    move_seats(store, [k for k in old if k[1] >= TODAY], found["cabin"], count)
    move_seats(store, [k for k in new_legs if k[1] >= TODAY], cabin, -count)
    store.execute("DELETE FROM reservation_flights WHERE reservation_id = ?", (reservation_id,))
    for i, (leg, price) in enumerate(zip(legs, prices, strict=True)):
        store.execute(
            "INSERT INTO reservation_flights VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                reservation_id,
                i,
                leg["flight_number"],
                leg["date"],
                leg["origin"],
                leg["destination"],
                price,
            ),
        )
    store.execute(
        "UPDATE reservations SET cabin = ? WHERE reservation_id = ?", (cabin, reservation_id)
    )
    return {**reservation_details(store, reservation_id), "price_difference": difference}


def update_reservation_passengers(
    store: Store, reservation_id: str, passengers: list[dict]
) -> dict[str, Any]:
    _active(store, reservation_id)
    count = _passenger_count(store, reservation_id)
    if len(passengers) != count:
        raise ToolError(
            f"reservation {reservation_id} has {count} passengers; the number of passengers "
            f"cannot change (give all {count}, changed or not)."
        )
    store.execute("DELETE FROM reservation_passengers WHERE reservation_id = ?", (reservation_id,))
    for i, p in enumerate(passengers):
        store.execute(
            "INSERT INTO reservation_passengers VALUES (?, ?, ?, ?, ?)",
            (reservation_id, i, p["first_name"].strip(), p["last_name"].strip(), p["dob"]),
        )
    return reservation_details(store, reservation_id)


def update_reservation_baggages(
    store: Store, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
) -> dict[str, Any]:
    found = _active(store, reservation_id)
    method = payment_method(store, found["user_id"], payment_id, for_change=True)
    if total_baggages < found["total_baggages"] or nonfree_baggages < found["nonfree_baggages"]:
        raise ToolError(
            f"reservation {reservation_id} has {found['total_baggages']} bags "
            f"({found['nonfree_baggages']} paid); bags can be added, not removed."
        )
    if nonfree_baggages > total_baggages:
        raise ToolError("nonfree_baggages cannot exceed total_baggages.")
    cost = (nonfree_baggages - found["nonfree_baggages"]) * BAG_PRICE
    charge(store, method, cost, reservation_id, "baggage")
    store.execute(
        "UPDATE reservations SET total_baggages = ?, nonfree_baggages = ? WHERE reservation_id = ?",
        (total_baggages, nonfree_baggages, reservation_id),
    )
    return {**reservation_details(store, reservation_id), "baggage_charge": cost}


def send_certificate(store: Store, user_id: str, amount: int) -> dict[str, Any]:
    get_user(store, user_id)
    number = store.value("SELECT COUNT(*) FROM payment_methods")
    while True:
        digest = hashlib.sha256(f"{user_id}|certificate|{number}".encode()).hexdigest()
        payment_id = f"certificate_{int(digest[:12], 16) % 9_000_000 + 1_000_000}"
        if store.value("SELECT 1 FROM payment_methods WHERE payment_id = ?", (payment_id,)):
            number += 1
            continue
        break
    store.execute(
        "INSERT INTO payment_methods VALUES (?, ?, 'certificate', NULL, NULL, ?)",
        (payment_id, user_id, int(amount)),
    )
    return {"payment_id": payment_id, "user_id": user_id, "amount": int(amount)}
