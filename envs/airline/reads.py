"""The airline's read tools and the checks its write tools share (`writes.py`).

Each check raises `ToolError` with what is wrong and what is allowed.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping
from typing import Any

from envgym.envs.toolworld import Store, ToolError


# ---------------------------------------------------------------------- lookups
def quote(value: str, limit: int = 40) -> str:
    """The agent's value, quoted back in an error: its repr, cut at `limit`."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "...'"


def get_user(store: Store, user_id: str) -> dict[str, Any]:
    user = store.row("SELECT * FROM users WHERE user_id = ?", (user_id,))
    if user is None:
        raise ToolError(f"no user has the id {quote(user_id)}; user ids look like 'mia_li_3668'.")
    return user


def get_reservation(store: Store, reservation_id: str) -> dict[str, Any]:
    found = store.row("SELECT * FROM reservations WHERE reservation_id = ?", (reservation_id,))
    if found is None:
        raise ToolError(
            f"no reservation has the id {quote(reservation_id)}; reservation ids are six letters "
            "and digits, e.g. 'ZFA04Y' (get_user_details lists a user's reservations)."
        )
    return found


def reservation_owner(store: Store, arguments: Mapping[str, Any]) -> str | None:
    return store.value(
        "SELECT user_id FROM reservations WHERE reservation_id = ?",
        (arguments.get("reservation_id"),),
    )


def payment_method(
    store: Store, user_id: str, payment_id: str, *, for_change: bool = False
) -> dict:
    method = store.row(
        "SELECT * FROM payment_methods WHERE payment_id = ? AND user_id = ?", (payment_id, user_id)
    )
    if method is None:
        methods = ", ".join(
            r["payment_id"]
            for r in store.rows(
                "SELECT payment_id FROM payment_methods WHERE user_id = ? ORDER BY payment_id",
                (user_id,),
            )
        )
        raise ToolError(
            f"{quote(payment_id)} is not a payment method of {user_id}; theirs: {methods}."
        )
    if for_change and method["source"] == "certificate":
        raise ToolError(
            f"{payment_id} is a travel certificate; changes are paid with a credit card or "
            "a gift card."
        )
    return method


def charge(store: Store, method: dict, amount: int, reservation_id: str, kind: str) -> None:
    """Take `amount` (a refund when negative) from a payment method and record it."""
    if amount == 0:
        return
    if method["source"] != "credit_card":
        if amount > method["amount"]:
            raise ToolError(
                f"{method['payment_id']} has a balance of ${method['amount']}, less than the "
                f"${amount} to pay; use another payment method."
            )
        store.execute(
            "UPDATE payment_methods SET amount = amount - ? WHERE payment_id = ?",
            (amount, method["payment_id"]),
        )
    store.execute(
        "INSERT INTO payments VALUES (?, ?, ?, ?)",
        (reservation_id, method["payment_id"], amount, kind),
    )


def bookable_flight(store: Store, number: str, date: str, cabin: str, seats: int) -> dict[str, Any]:
    """A flight on a date that can be booked for `seats` passengers in `cabin`."""
    row = store.row(
        "SELECT f.*, d.* FROM flights f JOIN flight_dates d USING (flight_number) "
        "WHERE flight_number = ? AND date = ?",
        (number, date),
    )
    if row is None:
        if store.value("SELECT 1 FROM flights WHERE flight_number = ?", (number,)) is None:
            raise ToolError(f"there is no flight {quote(number)}; search for flights first.")
        raise ToolError(f"flight {number} is not listed on {date}; flights run 2026-06-01..28.")
    if row["status"] != "available":
        raise ToolError(f"flight {number} on {date} is {row['status']} and cannot be booked.")
    if row[f"seats_{cabin}"] < seats:
        raise ToolError(
            f"flight {number} on {date} has {row[f'seats_{cabin}']} {cabin} seats left, "
            f"fewer than the {seats} needed."
        )
    return row


def move_seats(store: Store, legs: list[tuple[str, str]], cabin: str, change: int) -> None:
    for number, date in legs:
        store.execute(
            f"UPDATE flight_dates SET seats_{cabin} = seats_{cabin} + ? "
            "WHERE flight_number = ? AND date = ?",
            (change, number, date),
        )


def check_chain(legs: list[dict[str, Any]]) -> None:
    for before, after in zip(legs, legs[1:], strict=False):
        if after["origin"] != before["destination"]:
            raise ToolError(
                f"flight {after['flight_number']} leaves from {after['origin']}, not from "
                f"{before['destination']} where {before['flight_number']} lands."
            )


def user_details(store: Store, user_id: str) -> dict[str, Any]:
    user = get_user(store, user_id)
    user["payment_methods"] = {
        r.pop("payment_id"): {k: v for k, v in r.items() if v is not None and k != "user_id"}
        for r in store.rows(
            "SELECT * FROM payment_methods WHERE user_id = ? ORDER BY payment_id", (user_id,)
        )
    }
    user["saved_passengers"] = store.rows(
        "SELECT first_name, last_name, dob FROM saved_passengers WHERE user_id = ?", (user_id,)
    )
    user["reservations"] = [
        r["reservation_id"]
        for r in store.rows(
            "SELECT reservation_id FROM reservations WHERE user_id = ? ORDER BY reservation_id",
            (user_id,),
        )
    ]
    return user


def reservation_details(store: Store, reservation_id: str) -> dict[str, Any]:
    found = get_reservation(store, reservation_id)
    if found["cancel_reason"] is None:
        del found["cancel_reason"]
    found["flights"] = store.rows(
        "SELECT r.flight_number, r.date, r.origin, r.destination, r.price, d.status "
        "FROM reservation_flights r LEFT JOIN flight_dates d USING (flight_number, date) "
        "WHERE reservation_id = ? ORDER BY position",
        (reservation_id,),
    )
    found["passengers"] = store.rows(
        "SELECT first_name, last_name, dob FROM reservation_passengers "
        "WHERE reservation_id = ? ORDER BY position",
        (reservation_id,),
    )
    found["payment_history"] = store.rows(
        "SELECT payment_id, amount, kind FROM payments WHERE reservation_id = ? "
        "ORDER BY kind, payment_id, amount",
        (reservation_id,),
    )
    return found


def find_user_id(store: Store, first_name: str, last_name: str, zip_code: str = "") -> str:
    sql = "SELECT user_id, zip_code FROM users WHERE lower(first_name) = ? AND lower(last_name) = ?"
    found = store.rows(sql, (first_name.strip().lower(), last_name.strip().lower()))
    if zip_code:
        found = [r for r in found if r["zip_code"] == zip_code.strip()]
    if not found:
        where = f" with the zip code {quote(zip_code)}" if zip_code else ""
        raise ToolError(f"no user is named {quote(first_name)} {quote(last_name)}{where}.")
    if len(found) > 1:
        raise ToolError(
            f"{len(found)} users are named {first_name} {last_name}; ask the user for their "
            "zip code and search again with it."
        )
    return found[0]["user_id"]


def authenticate_user(store: Store, user_id: str, email: str = "", date_of_birth: str = "") -> str:
    user = get_user(store, user_id)
    if not email and not date_of_birth:
        raise ToolError("give the user's email or date of birth to check against the account.")
    if email and email.strip().lower() != user["email"]:
        raise ToolError(f"the email does not match the account {user_id}; ask the user again.")
    if date_of_birth and date_of_birth.strip() != user["date_of_birth"]:
        raise ToolError(
            f"the date of birth does not match the account {user_id}; ask the user again."
        )
    return user_id


def search_direct_flight(store: Store, origin: str, destination: str, date: str) -> Any:
    found = store.rows(
        "SELECT f.*, d.date, d.status, d.seats_basic_economy, d.seats_economy, "
        "d.seats_business, d.price_basic_economy, d.price_economy, d.price_business "
        "FROM flights f JOIN flight_dates d USING (flight_number) "
        "WHERE f.origin = ? AND f.destination = ? AND d.date = ? AND d.status = 'available'",
        (origin, destination, date),
    )
    return found or f"No direct flight from {origin} to {destination} is available on {date}."


def search_onestop_flight(store: Store, origin: str, destination: str, date: str) -> Any:
    legs = store.rows(
        "SELECT a.flight_number AS first, b.flight_number AS second, a.destination AS stop, "
        "a.departure_time, b.arrival_time, "
        "da.price_basic_economy + db.price_basic_economy AS price_basic_economy, "
        "da.price_economy + db.price_economy AS price_economy, "
        "da.price_business + db.price_business AS price_business "
        "FROM flights a JOIN flights b ON b.origin = a.destination "
        "JOIN flight_dates da ON da.flight_number = a.flight_number AND da.date = ? "
        "JOIN flight_dates db ON db.flight_number = b.flight_number AND db.date = ? "
        "WHERE a.origin = ? AND b.destination = ? AND b.departure_time >= a.arrival_time "
        "AND da.status = 'available' AND db.status = 'available' ORDER BY a.flight_number",
        (date, date, origin, destination),
    )
    return legs or f"No one-stop connection from {origin} to {destination} on {date}."


def get_flight_status(store: Store, flight_number: str, date: str) -> str:
    status = store.value(
        "SELECT status FROM flight_dates WHERE flight_number = ? AND date = ?",
        (flight_number, date),
    )
    if status is None:
        raise ToolError(f"flight {quote(flight_number)} is not listed on {date}.")
    return f"Flight {flight_number} on {date}: {status}."


_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def calculate(store: Store, expression: str) -> str:
    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](value(node.operand))
        raise ToolError("calculate takes numbers, + - * / and brackets only.")

    if len(expression) > 200:
        raise ToolError("the expression is longer than 200 characters.")
    try:
        result = value(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ZeroDivisionError) as exc:
        raise ToolError(f"cannot calculate {expression!r}: {exc.__class__.__name__}.") from None
    return f"{result:.2f}"
