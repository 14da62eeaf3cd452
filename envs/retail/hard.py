"""What makes a Retail task hard besides its size: a request the policy forbids
but the tools would carry out (`forbidden`), and a namesake account
(`namesake`).

The forbidden requests: a refund to a payment method that is neither the
order's original one nor a gift card (``refund_elsewhere``), a return after the
30-day window (``late_return``), and a second item modification of a pending
order (``second_modification``). The user asks for it and would confirm it;
only the agent's refusal keeps it out of the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from envgym.envs.retail.parts import Builder, item_words
from envgym.envs.retail.world import RETURN_WINDOW_DAYS, add_order, days_ago, options_text
from envgym.envs.toolworld import Action

__all__ = ["FORBIDDEN", "Forbidden", "forbidden", "namesake"]

FORBIDDEN = ("refund_elsewhere", "late_return", "second_modification")


@dataclass
class Forbidden:
    """A request the policy forbids, which the tools would carry out."""

    family: str
    action: Action
    said: str
    reason: str
    order_id: str


def forbidden(b: Builder, family: str) -> Forbidden:
    card = b.card()
    if family == "second_modification":
        order_id, items, targets = b.order("pending", 2, swaps=1)
        b.store.execute("UPDATE orders SET items_modified = 1 WHERE order_id = ?", (order_id,))
        old, new = items[0], targets[0][0]
        return Forbidden(
            family,
            Action(
                "modify_pending_order_items",
                {
                    "order_id": order_id,
                    "item_ids": [old["item_id"]],
                    "new_item_ids": [new["item_id"]],
                    "payment_method_id": card["payment_method_id"],
                },
                summary=f"change item {old['item_id']} of order {order_id} for item "
                f"{new['item_id']}",
                mentions=(order_id, new["item_id"]),
            ),
            f"In my other pending order, I also want the {item_words(old)} changed for "
            f"the one with {options_text(new['options'])}, paid with {b.words(card)}.",
            "the items of that order were already modified once, and an order's items "
            "can only be modified once.",
            order_id,
        )
    late = family == "late_return"
    age = int(b.rng.integers(RETURN_WINDOW_DAYS + 5, 56)) if late else b.recent()
    order_id, items, _ = b.order("delivered", 2, method=card, delivered_days_ago=age)
    item = items[0]
    if late:
        date = days_ago(age)
        return Forbidden(
            family,
            Action(
                "return_delivered_order_items",
                {
                    "order_id": order_id,
                    "item_ids": [item["item_id"]],
                    "payment_method_id": card["payment_method_id"],
                },
                summary=f"return item {item['item_id']} of order {order_id}",
                mentions=(order_id, item["item_id"]),
            ),
            f"I'd also like to return the {item_words(item)} that was delivered on "
            f"{date}, with the refund to the original payment method.",
            f"order {order_id} was delivered on {date}, more than {RETURN_WINDOW_DAYS} days "
            f"ago, and returns are only possible within {RETURN_WINDOW_DAYS} days of delivery.",
            order_id,
        )
    other = b.other_method()
    return Forbidden(
        family,
        Action(
            "return_delivered_order_items",
            {
                "order_id": order_id,
                "item_ids": [item["item_id"]],
                "payment_method_id": other["payment_method_id"],
            },
            summary=f"return item {item['item_id']} of order {order_id} with the refund "
            f"to {other['payment_method_id']}",
            mentions=(order_id, other["payment_method_id"]),
        ),
        f"I'd also like to return the {item_words(item)} from another order, and have "
        f"that refund go to {b.words(other)}.",
        "a refund can only go to the order's original payment method or to an existing gift card.",
        order_id,
    )


def namesake(b: Builder, order_id: str | None) -> None:
    """Give a user of the same name (another zip code) an order of the same items."""
    if order_id is None or b.user_id not in b.world.twins:
        return
    twin, method = b.world.twins[b.user_id]
    status, items = b.orders[order_id]
    add_order(
        b.store,
        b.rng,
        twin["user_id"],
        status,
        items,
        method,
        delivered_days_ago=b.recent(),
        address=twin,
    )
