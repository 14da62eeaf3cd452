"""The Retail tools' checks and bookkeeping: finding rows by id with errors the
agent can act on, an order's total and net payments, recording a payment or a
refund (a gift card's balance follows), and checking item swaps.

Money is whole cents here (`world.cents`); the store keeps dollars.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from envgym.envs.retail.world import cents, dollars
from envgym.envs.toolworld import Store, ToolError
from envgym.text import quote_for_feedback

__all__ = [
    "check_gift_card",
    "find_item",
    "find_method",
    "find_order",
    "find_user",
    "line_items",
    "net_paid",
    "order_total",
    "record_payment",
    "require_status",
    "swap_difference",
]


def find_user(store: Store, user_id: str) -> dict[str, Any]:
    row = store.row("SELECT * FROM users WHERE user_id = ?", (user_id,))
    if row is None:
        raise ToolError(
            f"there is no user {quote_for_feedback(user_id)}; user ids look like 'mia_garcia_4516' "
            "(find_user_id_by_email or find_user_id_by_name_zip gives it)"
        )
    return row


def find_order(store: Store, order_id: str) -> dict[str, Any]:
    row = store.row("SELECT * FROM orders WHERE order_id = ?", (order_id,))
    if row is None:
        hint = "" if order_id.startswith("#W") else " (order ids start with '#W', e.g. '#W1234567')"
        raise ToolError(f"there is no order {quote_for_feedback(order_id)}{hint}")
    return row


def find_method(store: Store, order: Mapping[str, Any], method_id: str) -> dict[str, Any]:
    row = store.row("SELECT * FROM payment_methods WHERE payment_method_id = ?", (method_id,))
    if row is None or row["user_id"] != order["user_id"]:
        mine = store.rows(
            "SELECT payment_method_id FROM payment_methods WHERE user_id = ? "
            "ORDER BY payment_method_id",
            (order["user_id"],),
        )
        names = ", ".join(m["payment_method_id"] for m in mine)
        raise ToolError(
            f"{quote_for_feedback(method_id)} is not a payment method of this order's user; "
            f"theirs are: {names}"
        )
    return row


def find_item(store: Store, item_id: str) -> dict[str, Any]:
    row = store.row(
        "SELECT i.*, p.name FROM items i JOIN products p USING (product_id) WHERE item_id = ?",
        (item_id,),
    )
    if row is None:
        raise ToolError(
            f"there is no item {quote_for_feedback(item_id)} "
            "(get_product_details lists the item ids)"
        )
    return row


def require_status(order: Mapping[str, Any], allowed: str, action: str) -> None:
    if order["status"] != allowed:
        raise ToolError(
            f"order {order['order_id']} is {order['status']}; only {allowed} orders can be {action}"
        )


def order_total(store: Store, order_id: str) -> int:
    """The order's items' total, in cents."""
    prices = store.rows("SELECT price FROM order_items WHERE order_id = ?", (order_id,))
    return sum(cents(p["price"]) for p in prices)


def net_paid(store: Store, order_id: str) -> dict[str, int]:
    """Payment method -> cents paid minus refunded, in order of first use."""
    net: dict[str, int] = {}
    for p in store.rows("SELECT * FROM payments WHERE order_id = ? ORDER BY seq", (order_id,)):
        sign = 1 if p["kind"] == "payment" else -1
        method = p["payment_method_id"]
        net[method] = net.get(method, 0) + sign * cents(p["amount"])
    return net


def record_payment(store: Store, order_id: str, kind: str, method_id: str, amount: int) -> None:
    """Record a payment or refund of `amount` cents; a gift card's balance follows."""
    seq = store.value("SELECT COUNT(*) FROM payments WHERE order_id = ?", (order_id,))
    store.execute(
        "INSERT INTO payments VALUES (?, ?, ?, ?, ?)",
        (order_id, seq, kind, method_id, dollars(amount)),
    )
    balance = store.value(
        "SELECT balance FROM payment_methods WHERE payment_method_id = ? AND kind = 'gift_card'",
        (method_id,),
    )
    if balance is not None:
        change = -amount if kind == "payment" else amount
        store.execute(
            "UPDATE payment_methods SET balance = ? WHERE payment_method_id = ?",
            (dollars(cents(balance) + change), method_id),
        )


def check_gift_card(method: Mapping[str, Any], amount: int) -> None:
    if method["kind"] == "gift_card" and amount > cents(method["balance"]):
        raise ToolError(
            f"gift card {method['payment_method_id']} has a balance of "
            f"{method['balance']:.2f}, less than the {dollars(amount):.2f} to pay; "
            "use another payment method"
        )


def line_items(store: Store, order: Mapping[str, Any], item_ids: Sequence[str]) -> list[dict]:
    if len(set(item_ids)) != len(item_ids):
        raise ToolError("item_ids names an item twice; name each item once")
    lines = store.rows(
        "SELECT o.line, o.item_id, o.price, i.product_id FROM order_items o "
        "JOIN items i USING (item_id) WHERE o.order_id = ? ORDER BY o.line",
        (order["order_id"],),
    )
    by_item = {line["item_id"]: line for line in lines}
    missing = [i for i in item_ids if i not in by_item]
    if missing:
        raise ToolError(
            f"item {missing[0]} is not in order {order['order_id']}; its items are: "
            + ", ".join(by_item)
        )
    return [by_item[i] for i in item_ids]


def swap_difference(
    store: Store, old: Sequence[Mapping[str, Any]], new_item_ids: Sequence[str]
) -> int:
    """Check each new item is an available variant of the old one's product; the
    price difference (new - old) in cents."""
    if len(new_item_ids) != len(old):
        raise ToolError(
            f"new_item_ids has {len(new_item_ids)} items for {len(old)} in item_ids; give one "
            "new item for each item, in the same order"
        )
    difference = 0
    for line, new_id in zip(old, new_item_ids, strict=True):
        new = find_item(store, new_id)
        if new["product_id"] != line["product_id"]:
            raise ToolError(
                f"item {new_id} ({new['name']}) is not a variant of the same product as item "
                f"{line['item_id']}; an item can only become another variant of its own product"
            )
        if new_id == line["item_id"]:
            raise ToolError(f"item {new_id} is already that variant; pick a different one")
        if not new["available"]:
            raise ToolError(f"item {new_id} is not available; pick an available variant")
        difference += cents(new["price"]) - cents(line["price"])
    return difference
