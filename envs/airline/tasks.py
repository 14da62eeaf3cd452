"""The airline's task generator: `make_task(store, rng, difficulty, task_id)`.

- easy: one write (cancel, add bags, compensation, or a booking); the opening
  states the user id, the email or date of birth, and every id needed.
- medium: two writes on one reservation (change a flight's date and add bags,
  cancel after an airline cancellation and compensate, upgrade to business and
  add bags, correct a passenger and add bags), and a third (a passenger's date
  of birth) in a third of the changes and upgrades; the opening says the goal in
  words, and the ids come only when asked for. One policy rule is in play each
  time (free bags by membership and cabin, compensation, fare difference).
- hard: two or three writes on different reservations, found by the trip's
  description, plus a request the policy forbids (cancel a reservation that is
  not cancellable, change a basic economy flight, compensation for a regular
  member without insurance, cancel a trip already flown), a change of mind
  about the new date of a flight, and another user of the same name in another
  zip code (the world has 40 such pairs); the user knows their name, zip code
  and email or date of birth, not their user id.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envgym.envs.airline.parts import (
    Ctx,
    Part,
    bags_part,
    book_part,
    cancel_part,
    change_part,
    compensation_part,
    passenger_part,
    trip_words,
    upgrade_part,
)
from envgym.envs.airline.world import DATES, TODAY, shift
from envgym.envs.toolworld import Action, Fact, Store, Task

__all__ = ["ASKABLE", "make_task"]

#: fact name -> the words in a message that ask the user for it.
ASKABLE = {
    "user_id": ("user id", "user-id", "userid", "account id"),
    "email": ("email", "e-mail"),
    "date_of_birth": ("date of birth", "birth date", "birthday", "dob"),
    "zip_code": ("zip code", "zip", "postal code"),
    "reservation_id": (
        "reservation id",
        "reservation number",
        "reservation code",
        "confirmation number",
        "booking reference",
        "booking number",
    ),
    "payment_method": ("payment method", "which card", "how would you like to pay"),
    "name": ("your name", "full name", "first name", "last name"),
}
GREETINGS = ("Hi.", "Hello!", "Hi there,", "Good afternoon.", "Hey,")
SAID = {
    "user_id": ("My user id is {}.", "It's {}, that's my user id.", "User id: {}."),
    "email": ("My email is {}.", "You can use my email, {}.", "The email on file is {}."),
    "date_of_birth": ("I was born on {}.", "My date of birth is {}."),
    "zip_code": ("My zip code is {}.", "Zip code {}."),
    "reservation_id": ("The reservation id is {}.", "My confirmation number is {}."),
    "payment_method": (
        "Please use my {} ({}).",
        "Charge my {}, the one with id {}.",
        "I'd like to pay with my {} ({}).",
    ),
    "name": ("My name is {}.", "I'm {}."),
}


def _said(rng: np.random.Generator, name: str, *values: str) -> str:
    options = SAID[name]
    return options[int(rng.integers(len(options)))].format(*values)


def _payment(store: Store, ctx_rng: np.random.Generator, user_id: str) -> tuple[str, str]:
    cards = store.rows(
        "SELECT payment_id, brand, last_four FROM payment_methods "
        "WHERE user_id = ? AND source = 'credit_card' ORDER BY payment_id",
        (user_id,),
    )
    card = cards[int(ctx_rng.integers(len(cards)))]
    return card["payment_id"], f"{card['brand']} card ending in {card['last_four']}"


_TWINNED = (
    "FROM users u WHERE EXISTS (SELECT 1 FROM users t WHERE t.last_name = u.last_name "
    "AND t.first_name = u.first_name AND t.user_id != u.user_id)"
)


def _user(store: Store, rng: np.random.Generator, twinned: bool) -> dict[str, Any]:
    """A random user; with `twinned`, one who shares their name with another user."""
    where = _TWINNED if twinned else "FROM users u"
    count = store.value(f"SELECT COUNT(*) {where}")
    return store.row(f"SELECT u.* {where} LIMIT 1 OFFSET ?", (int(rng.integers(count)),))


def _forbidden(ctx: Ctx, kind: str) -> tuple[Action, str, str]:
    """A request the policy forbids: (the write, the user's words, the policy's reason)."""
    if kind == "cancel":
        res = ctx.reservation(ctx.pick(("basic_economy", "economy")))
        rid = res["reservation_id"]
        action = Action(
            "cancel_reservation",
            {"reservation_id": rid, "reason": "change_of_plan"},
            summary=f"cancel reservation {rid}",
            mentions=(rid, "cancel"),
        )
        words = f"Please also cancel my {trip_words(res)}; my plans have changed."
        reason = (
            "it was booked more than 24 hours ago, is not in business class, has no travel "
            "insurance, and the airline has not cancelled any of its flights."
        )
        return action, words, reason
    if kind == "flown":
        day = DATES[int(ctx.rng.integers(0, 6))]
        res = ctx.reservation(
            ctx.pick(("economy", "business")),
            first=day,
            round_trip=False,
            ok=lambda r: r["status"] == "landed",
            created_at=f"{shift(day, -10)}T10:00:00",
        )
        rid = res["reservation_id"]
        action = Action(
            "cancel_reservation",
            {"reservation_id": rid, "reason": "other"},
            summary=f"cancel reservation {rid}",
            mentions=(rid, "cancel"),
        )
        words = f"And I want to cancel my {trip_words(res)} and get my money back."
        return action, words, "its flight has already been flown."
    if kind == "basic":
        for _ in range(20):
            res = ctx.reservation("basic_economy")
            part = change_part(ctx, res)
            if part is not None:
                break
        flights = part.action.arguments["flights"]
        number, day = flights[0]["flight_number"], flights[0]["date"]
        action = Action(
            "update_reservation_flights",
            dict(part.action.arguments),
            summary=f"move flight {number} of reservation {res['reservation_id']} to {day}",
            mentions=(number, day),
        )
        words = f"Also, please move my {trip_words(res)} to {day}, same flight."
        return action, words, "basic economy flights cannot be changed."
    # compensation for a regular member without insurance in (basic) economy
    ctx.store.execute(
        "UPDATE users SET membership = 'regular' WHERE user_id = ?", (ctx.user["user_id"],)
    )
    ctx.user["membership"] = "regular"
    res = ctx.reservation(ctx.pick(("basic_economy", "economy")), first=shift(TODAY, 1))
    first = res["flights"][0]
    ctx.store.execute(
        "UPDATE flight_dates SET status = 'delayed' WHERE flight_number = ? AND date = ?",
        (first["flight_number"], first["date"]),
    )
    amount = 50 * len(res["passengers"])
    action = Action(
        "send_certificate",
        {"user_id": ctx.user["user_id"], "amount": amount},
        summary=f"send you a travel certificate of ${amount}.00",
        mentions=("certificate",),
    )
    words = (
        f"Oh, and my flight {first['flight_number']} tomorrow is delayed, which is a real "
        "hassle. I want compensation for that."
    )
    reason = (
        "compensation is only for silver and gold members, insured reservations or business "
        "class, and this is an economy reservation of a regular member without insurance."
    )
    return action, words, reason


def _facts(
    rng: np.random.Generator, user: dict[str, Any], names: tuple[str, ...], payment
) -> tuple[Fact, ...]:
    values = {
        "user_id": (user["user_id"],),
        "email": (user["email"],),
        "date_of_birth": (user["date_of_birth"],),
        "zip_code": (user["zip_code"],),
        "name": (f"{user['first_name']} {user['last_name']}",),
        "payment_method": (payment[1], payment[0]),
    }
    facts = []
    for name in names:
        value = values[name]
        facts.append(
            Fact(
                name, value[-1] if name == "payment_method" else value[0], _said(rng, name, *value)
            )
        )
    return tuple(facts)


def make_task(store: Store, rng: np.random.Generator, difficulty: str, task_id: str) -> Task:
    user = _user(store, rng, twinned=difficulty == "hard")
    payment = _payment(store, rng, user["user_id"])
    ctx = Ctx(store, rng, user, payment[0])
    # The task's trips use flights none of the user's reservations has, so a
    # trip's description ("from IAH to DCA on 2026-06-19") names one reservation.
    ctx.used.update(
        r["flight_number"]
        for r in store.rows(
            "SELECT f.flight_number FROM reservations r JOIN reservation_flights f "
            "USING (reservation_id) WHERE r.user_id = ?",
            (user["user_id"],),
        )
    )
    check = "email" if rng.random() < 0.6 else "date_of_birth"
    if difficulty == "easy":
        return _easy(ctx, task_id, check, payment)
    if difficulty == "medium":
        return _medium(ctx, task_id, check, payment)
    return _hard(ctx, task_id, check, payment)


def _auth(ctx: Ctx, check: str) -> tuple[Action, ...]:
    user = ctx.user
    return (
        Action("authenticate_user", {"user_id": user["user_id"], check: user[check]}),
        Action("get_user_details", {"user_id": user["user_id"]}),
    )


def _inform(parts: list[Part]) -> str:
    return "All done. " + " ".join(p.inform for p in parts) + " Is there anything else?"


def _easy(ctx: Ctx, task_id: str, check: str, payment: tuple[str, str]) -> Task:
    kind = ctx.pick(("cancel", "bags", "compensation", "book"))
    if kind == "cancel":
        part = cancel_part(ctx, ctx.pick(("recent", "business", "airline", "health", "weather")))
    elif kind == "bags":
        part = bags_part(ctx)
    elif kind == "compensation":
        part = compensation_part(ctx, ctx.pick(("cancelled", "delayed")))
    else:
        part = book_part(ctx)
    names = ["user_id", check]
    if kind in ("bags", "book"):
        names.append("payment_method")
    facts = _facts(ctx.rng, ctx.user, tuple(names), payment)
    request = part.specifics
    opening = " ".join([ctx.pick(GREETINGS), *(f.said for f in facts), request])
    return Task(
        task_id=task_id,
        user_id=ctx.user["user_id"],
        opening=opening,
        request=request,
        facts=facts,
        stated=tuple(names),
        lookups=_auth(ctx, check) + part.lookups,
        actions=(part.action,),
        outputs=part.outputs,
        inform=_inform([part]),
        difficulty="easy",
        notes={"family": kind},
    )


def _medium(ctx: Ctx, task_id: str, check: str, payment: tuple[str, str]) -> Task:
    kind = ctx.pick(("change_bags", "cancel_compensation", "upgrade_bags", "passenger_bags"))
    if kind == "cancel_compensation" and ctx.user["membership"] == "regular":
        insurance = True
    else:
        insurance = bool(ctx.rng.random() < 0.3)
    if kind == "change_bags":
        parts = None
        while parts is None:
            res = ctx.reservation(ctx.pick(("economy", "business")))
            change = change_part(ctx, res)
            parts = None if change is None else [change, bags_part(ctx, res)]
    elif kind == "cancel_compensation":
        res = ctx.reservation("economy", insurance=insurance)
        cancel = cancel_part(ctx, "airline", res)
        parts = [cancel, compensation_part(ctx, "cancelled", res)]
    elif kind == "upgrade_bags":
        res = ctx.reservation("economy", ok=_business_seats)
        parts = [upgrade_part(ctx, res), bags_part(ctx, res, cabin="business")]
    else:
        res = ctx.reservation(ctx.pick(("basic_economy", "economy", "business")))
        parts = [passenger_part(ctx, res), bags_part(ctx, res)]
    if kind in ("change_bags", "upgrade_bags") and ctx.rng.random() < 1 / 3:
        parts.append(passenger_part(ctx, res))  # a third write on the same reservation
    names = ["user_id", check]
    if kind != "cancel_compensation":
        names.append("payment_method")
    facts = _facts(ctx.rng, ctx.user, tuple(names), payment)
    rid = res["reservation_id"]
    facts += (Fact("reservation_id", rid, _said(ctx.rng, "reservation_id", rid)),)
    request = " ".join(p.wish for p in parts)
    return Task(
        task_id=task_id,
        user_id=ctx.user["user_id"],
        opening=f"{ctx.pick(GREETINGS)} {request}",
        request=request,
        facts=facts,
        stated=(),
        lookups=_auth(ctx, check) + parts[0].lookups,
        actions=tuple(p.action for p in parts),
        outputs=tuple(o for p in parts for o in p.outputs),
        inform=_inform(parts),
        difficulty="medium",
        notes={"family": kind},
    )


def _business_seats(row: dict[str, Any]) -> bool:
    return row["status"] == "available" and row["seats_business"] >= 3


def _hard(ctx: Ctx, task_id: str, check: str, payment: tuple[str, str]) -> Task:
    kind = ctx.pick(("cancel", "basic", "compensation", "flown"))
    forbidden, forbidden_words, reason = _forbidden(ctx, kind)
    change = None
    while change is None:
        change = change_part(ctx, change_of_mind=True)
    parts = [change]
    extras = ["bags", "cancel", "passenger", "upgrade"]
    for extra in ctx.rng.choice(extras, size=int(ctx.rng.integers(1, 3)), replace=False):
        if extra == "bags":
            parts.append(bags_part(ctx))
        elif extra == "cancel":
            parts.append(cancel_part(ctx, ctx.pick(("recent", "business", "health"))))
        elif extra == "passenger":
            parts.append(passenger_part(ctx))
        else:
            parts.append(upgrade_part(ctx))
    names = ("name", "zip_code", check, "payment_method")
    facts = _facts(ctx.rng, ctx.user, names, payment)
    wishes = [p.wish for p in parts]
    wishes.insert(int(ctx.rng.integers(len(wishes) + 1)), forbidden_words)
    request = " ".join(wishes)
    user = ctx.user
    lookups = (
        Action(
            "find_user_id",
            {
                "first_name": user["first_name"],
                "last_name": user["last_name"],
                "zip_code": user["zip_code"],
            },
        ),
        *_auth(ctx, check),
        *(a for p in parts for a in p.lookups),
    )
    return Task(
        task_id=task_id,
        user_id=user["user_id"],
        opening=f"{ctx.pick(GREETINGS)} {facts[0].said} {request}",
        request=request,
        facts=facts,
        stated=("name",),
        lookups=lookups,
        actions=tuple(p.action for p in parts),
        outputs=tuple(o for p in parts for o in p.outputs),
        inform=_inform(parts),
        change_of_mind=change.change_of_mind,
        change_message=change.change_message,
        forbidden=forbidden,
        forbidden_reason=reason,
        difficulty="hard",
        notes={"family": f"{kind}+{len(parts)}"},
    )
