"""Retail tasks: who the user is, what they want, and the gold dialogue that gets it.

`make_task(store, rng, difficulty, task_id)` picks a user and adds to the
store (its own copy) the orders the task is about, then builds the request
from *parts*, one gold write each (`parts.py`):

- easy: one part (cancel, pay with a gift card, modify an item, return,
  exchange); the opening states the email or name and zip code, and the order
  number.
- medium: two or three parts of one family, each with one policy rule in play
  (the cancellation reason in the user's words, the refund to a gift card,
  every item modified in one call, a price difference paid by gift card);
  the opening states only the goal: the agent asks for the facts.
- hard: three parts, one of them with a change of mind (another variant, or
  the refund to the original payment method after all), a request the policy
  forbids (a refund to another card, a return after the 30-day window, a
  second item modification), and a namesake: another user with the same name
  in another zip code, holding an order of the same items. The user knows
  their name and zip code but not their email.

Everything is drawn from `rng`, with indexed queries and a few inserts, so a
reset stays well under a millisecond.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envgym.envs.retail import parts as P
from envgym.envs.retail.hard import FORBIDDEN, namesake
from envgym.envs.retail.hard import forbidden as forbid
from envgym.envs.retail.world import WorldView, world_view
from envgym.envs.toolworld import Action, Fact, Store, Task

__all__ = ["ASKABLE", "make_task"]

#: Fact name -> the words in the agent's message that ask the user for it.
ASKABLE: dict[str, tuple[str, ...]] = {
    "email": ("email", "e-mail"),
    "first_name": ("first name", "full name", "your name"),
    "last_name": ("last name", "surname", "full name", "your name"),
    "zip_code": ("zip", "postal code", "postcode"),
    "order_id": ("order id", "order number"),
    "new_address": ("new address",),
}

LEVELS = ("easy", "medium", "hard")
GREETINGS = ("Hi!", "Hello.", "Hi there,", "Good morning.", "Hey,")
CONNECTORS = (" Also, ", " And ", " On top of that, ", " Besides that, ")

EASY = ("cancel", "pay_gift", "modify_items", "return", "exchange")
MEDIUM = (
    ("cancel", "order_address", "user_address"),
    ("return_gift", "user_address"),
    ("modify_two", "pay_gift"),
    ("exchange_gift", "cancel"),
    ("return_gift", "cancel", "order_address"),
)
CHANGEABLE = ("exchange", "modify_items", "return")
OTHERS = ("cancel", "pay_gift", "order_address", "return", "exchange", "modify_items")


def _pick(rng: np.random.Generator, options: tuple[Any, ...] | list[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


def _auth_facts(user: dict[str, Any], by_email: bool, rng: np.random.Generator) -> list[Fact]:
    if by_email:
        said = _pick(rng, ("My email is {}.", "It's {}.", "Sure, my email address is {}."))
        return [Fact("email", user["email"], said.format(user["email"]))]
    first, last, zip_code = user["first_name"], user["last_name"], user["zip"]
    firsts = ("My first name is {}.", "I'm {}.", "First name {}.")
    lasts = ("My last name is {}.", "Last name {}.", "{} is my last name.")
    zips = ("My zip code is {}.", "I live in zip code {}.", "Zip code {}.")
    return [
        Fact("first_name", first, _pick(rng, firsts).format(first)),
        Fact("last_name", last, _pick(rng, lasts).format(last)),
        Fact("zip_code", zip_code, _pick(rng, zips).format(zip_code)),
    ]


def _lower(sentence: str) -> str:
    """`sentence` to follow a connector: its first letter in lower case, unless it is "I"."""
    if sentence[:2] in ("I ", "I'"):
        return sentence
    return sentence[0].lower() + sentence[1:]


def _auth_lookup(user: dict[str, Any], by_email: bool) -> Action:
    if by_email:
        return Action("find_user_id_by_email", {"email": user["email"]})
    args = {"first_name": user["first_name"], "last_name": user["last_name"], "zip": user["zip"]}
    return Action("find_user_id_by_name_zip", args)


def _namesake_user(store: Store, rng: np.random.Generator, world: WorldView) -> dict[str, Any]:
    user_id = _pick(rng, world.namesakes)
    return store.row("SELECT * FROM users WHERE user_id = ?", (user_id,))


def _any_user(store: Store, rng: np.random.Generator) -> dict[str, Any]:
    count = store.value("SELECT COUNT(*) FROM users")
    offset = int(rng.integers(count))
    return store.row("SELECT * FROM users ORDER BY user_id LIMIT 1 OFFSET ?", (offset,))


def make_task(store: Store, rng: np.random.Generator, difficulty: str, task_id: str) -> Task:
    """A Retail task of `difficulty`; sets its orders up in `store` (in one
    transaction: a dozen small writes cost less than one each)."""
    store.execute("BEGIN")
    try:
        task = _make_task(store, rng, difficulty, task_id)
    except BaseException:
        store.execute("ROLLBACK")
        raise
    store.execute("COMMIT")
    return task


def _make_task(store: Store, rng: np.random.Generator, difficulty: str, task_id: str) -> Task:
    hard = difficulty == "hard"
    # The base seeds every level alike: mix the level in, so seed 1 differs per level.
    rng = np.random.default_rng([int(rng.integers(2**32)), LEVELS.index(difficulty)])
    world = world_view(store)
    user = _namesake_user(store, rng, world) if hard else _any_user(store, rng)
    builder = P.Builder(store, rng, user, world)
    if difficulty == "easy":
        families: tuple[str, ...] = (_pick(rng, EASY),)
    elif difficulty == "medium":
        families = _pick(rng, MEDIUM)
    else:
        change = _pick(rng, CHANGEABLE)
        rest = [f for f in OTHERS if f != change]
        chosen = rng.choice(len(rest), size=2, replace=False)
        families = (change, *(rest[int(i)] for i in sorted(chosen)))
    parts = [builder.part(family, change=hard and i == 0) for i, family in enumerate(families)]
    forbidden = forbid(builder, _pick(rng, FORBIDDEN)) if hard else None
    if hard:
        namesake(builder, parts[0].order_id)

    by_email = difficulty != "hard" and bool(rng.random() < 0.5)
    facts = _auth_facts(user, by_email, rng)
    if difficulty == "easy":
        order_id = parts[0].order_id
        said = _pick(rng, ("My order number is {}.", "The order is {}.", "It's order {}."))
        facts.append(Fact("order_id", order_id, said.format(order_id)))
    address = next((p.address for p in parts if p.address), None)
    if address is not None and difficulty != "easy":
        text = P.address_text(address)
        said = _pick(rng, ("My new address is {}.", "It's {}.", "The new address is {}."))
        facts.append(Fact("new_address", text, said.format(text)))

    wishes = [p.said for p in parts]
    if forbidden is not None:
        wishes.insert(int(rng.integers(1, len(wishes) + 1)), forbidden.said)
    request = wishes[0] + "".join(_pick(rng, CONNECTORS) + _lower(w) for w in wishes[1:])
    greeting = _pick(rng, GREETINGS)
    opening = f"{greeting} {_lower(request) if greeting.endswith(',') else request}"
    stated: tuple[str, ...] = ()
    if difficulty == "easy":
        opening += " " + " ".join(dict.fromkeys(f.said for f in facts))
        stated = tuple(f.name for f in facts)

    lookups = [
        _auth_lookup(user, by_email),
        Action("get_user_details", {"user_id": user["user_id"]}),
    ]
    orders = [p.order_id for p in parts if p.order_id]
    if forbidden is not None:
        orders.append(forbidden.order_id)
    lookups += [Action("get_order_details", {"order_id": o}) for o in dict.fromkeys(orders)]
    products = [pid for p in parts for pid in p.products]
    lookups += [Action("get_product_details", {"product_id": p}) for p in dict.fromkeys(products)]

    outputs = tuple(p.output for p in parts if p.output)
    inform = (
        " ".join(p.inform for p in parts)
        + " "
        + _pick(rng, ("Is there anything else I can help you with?", "Anything else today?"))
    )
    change = next((p for p in parts if p.change_of_mind), None)
    return Task(
        task_id=task_id,
        user_id=user["user_id"],
        opening=opening,
        request=request,
        facts=tuple(facts),
        stated=stated,
        lookups=tuple(lookups),
        actions=tuple(p.action for p in parts),
        outputs=outputs,
        inform=inform,
        change_of_mind=change.change_of_mind if change else (),
        change_message=change.change_message if change else "",
        forbidden=forbidden.action if forbidden else None,
        forbidden_reason=forbidden.reason if forbidden else "",
        difficulty=difficulty,
        notes={
            "families": list(families),
            "forbidden": forbidden.family if forbidden else None,
            "by_email": by_email,
        },
    )
