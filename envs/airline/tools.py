"""The airline's tools: reads and writes over the store, as typed functions.

The tools enforce what the data makes impossible (an unknown id, a flight that
is not available, a seat that is not there, a gift card without the balance,
a payment method of another user) and refuse with a message that says what is
wrong and what is allowed. Rules of the policy that are a judgement (may this
reservation be cancelled, is the user owed compensation, how many bags are
free, may a basic economy flight change) are deliberately NOT enforced here, as
in tau-bench: the agent has to apply them, and breaking them shows in the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envgym.envs.airline import reads, writes
from envgym.envs.toolworld import Store, Tool

__all__ = ["TOOLS", "REASONS"]

DATE = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$", "description": "YYYY-MM-DD"}
AIRPORT = {"type": "string", "pattern": "^[A-Z]{3}$", "description": "IATA code, e.g. JFK"}
CABIN = {"type": "string", "enum": ["basic_economy", "economy", "business"]}
FLIGHTS = {
    "type": "array",
    "minItems": 1,
    "maxItems": 4,
    "description": "the flights in travel order",
    "items": {
        "type": "object",
        "properties": {"flight_number": {"type": "string"}, "date": DATE},
        "required": ["flight_number", "date"],
        "additionalProperties": False,
    },
}
PASSENGERS = {
    "type": "array",
    "minItems": 1,
    "maxItems": 5,
    "items": {
        "type": "object",
        "properties": {
            "first_name": {"type": "string", "minLength": 1},
            "last_name": {"type": "string", "minLength": 1},
            "dob": DATE,
        },
        "required": ["first_name", "last_name", "dob"],
        "additionalProperties": False,
    },
}
REASONS = ["change_of_plan", "airline_cancelled_flight", "health", "weather", "other"]


def _user_arg(store: Store, arguments: Mapping[str, Any]) -> str | None:
    return arguments.get("user_id")


_RID = {"reservation_id": {"type": "string"}}
_PAY = {"payment_id": {"type": "string", "description": "a credit card or gift card id"}}
_MONEY = {"type": "integer", "minimum": 1, "maximum": 100_000}
TOOLS: tuple[Tool, ...] = (
    Tool(
        "find_user_id",
        "Find a user's id from their name, and zip code when several users share the name.",
        {
            "first_name": {"type": "string"},
            "last_name": {"type": "string"},
            "zip_code": {"type": "string"},
        },
        reads.find_user_id,
        required=("first_name", "last_name"),
    ),
    Tool(
        "authenticate_user",
        "Check who the user is: their user id with the email or date of birth on file. "
        "Returns the user id once it matches.",
        {"user_id": {"type": "string"}, "email": {"type": "string"}, "date_of_birth": DATE},
        reads.authenticate_user,
        required=("user_id",),
        authenticates=True,
    ),
    Tool(
        "get_user_details",
        "A user's profile: membership, payment methods, saved passengers, reservation ids.",
        {"user_id": {"type": "string"}},
        reads.user_details,
        account=_user_arg,
    ),
    Tool(
        "get_reservation_details",
        "A reservation: flights (with their status), passengers, cabin, bags, insurance, "
        "payments, when it was booked.",
        _RID,
        reads.reservation_details,
        account=reads.reservation_owner,
    ),
    Tool(
        "list_all_airports",
        "Every airport: IATA code and city.",
        {},
        lambda store: store.rows("SELECT * FROM airports ORDER BY code"),
    ),
    Tool(
        "search_direct_flight",
        "Available direct flights between two airports on a date, with seats and prices.",
        {"origin": AIRPORT, "destination": AIRPORT, "date": DATE},
        reads.search_direct_flight,
    ),
    Tool(
        "search_onestop_flight",
        "Available one-stop connections (two flights the same day) between two airports.",
        {"origin": AIRPORT, "destination": AIRPORT, "date": DATE},
        reads.search_onestop_flight,
    ),
    Tool(
        "get_flight_status",
        "The status of a flight on a date (available, delayed, cancelled, landed).",
        {"flight_number": {"type": "string"}, "date": DATE},
        reads.get_flight_status,
    ),
    Tool(
        "calculate",
        "Evaluate arithmetic (numbers, + - * / and brackets); the result has two decimals.",
        {"expression": {"type": "string"}},
        reads.calculate,
    ),
    Tool(
        "book_reservation",
        "Book a reservation for a user and charge its payment methods (amounts must add up "
        "to the total: flight prices x passengers, insurance, extra bags).",
        {
            "user_id": {"type": "string"},
            "origin": AIRPORT,
            "destination": AIRPORT,
            "flight_type": {"type": "string", "enum": ["one_way", "round_trip"]},
            "cabin": CABIN,
            "flights": FLIGHTS,
            "passengers": PASSENGERS,
            "payment_methods": {
                "type": "array",
                "minItems": 1,
                "maxItems": 5,
                "items": {
                    "type": "object",
                    "properties": {"payment_id": {"type": "string"}, "amount": _MONEY},
                    "required": ["payment_id", "amount"],
                    "additionalProperties": False,
                },
            },
            "total_baggages": {"type": "integer", "minimum": 0, "maximum": 20},
            "nonfree_baggages": {"type": "integer", "minimum": 0, "maximum": 20},
            "insurance": {"type": "string", "enum": ["yes", "no"]},
        },
        writes.book_reservation,
        writes=True,
        account=_user_arg,
    ),
    Tool(
        "cancel_reservation",
        "Cancel a whole reservation and refund its payments to the original payment methods.",
        {**_RID, "reason": {"type": "string", "enum": REASONS}},
        writes.cancel_reservation,
        writes=True,
        account=reads.reservation_owner,
    ),
    Tool(
        "update_reservation_flights",
        "Replace a reservation's flights and cabin (give every flight, changed or not); "
        "the fare difference for all passengers is charged or refunded to payment_id.",
        {**_RID, "cabin": CABIN, "flights": FLIGHTS, **_PAY},
        writes.update_reservation_flights,
        writes=True,
        account=reads.reservation_owner,
    ),
    Tool(
        "update_reservation_passengers",
        "Replace the details of a reservation's passengers (the same number of passengers).",
        {**_RID, "passengers": PASSENGERS},
        writes.update_reservation_passengers,
        writes=True,
        account=reads.reservation_owner,
    ),
    Tool(
        "update_reservation_baggages",
        "Set a reservation's checked bags (total and paid ones); added paid bags are "
        "charged to payment_id.",
        {
            **_RID,
            "total_baggages": {"type": "integer", "minimum": 0, "maximum": 20},
            "nonfree_baggages": {"type": "integer", "minimum": 0, "maximum": 20},
            **_PAY,
        },
        writes.update_reservation_baggages,
        writes=True,
        account=reads.reservation_owner,
    ),
    Tool(
        "send_certificate",
        "Send a user a travel certificate (compensation) of a whole-dollar amount.",
        {"user_id": {"type": "string"}, "amount": _MONEY},
        writes.send_certificate,
        writes=True,
        account=_user_arg,
    ),
)
