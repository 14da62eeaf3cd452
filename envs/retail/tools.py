"""The Retail tools: read and write functions over the store, as the agent calls them.

Tools enforce what the data makes impossible (an unknown id, an item that is
not in the order, a variant of another product, a gift card without enough
balance, an order in the wrong state) and say what is allowed instead. Some
rules of the policy are deliberately left to the agent, as in tau-bench: the
reason given for a cancellation is checked, but where a refund goes (the
original payment method or a gift card), the 30-day return window and "items
are modified once" are not, so a request the policy forbids can be carried
out, and doing so shows in the store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from envgym.envs.retail.ledger import (
    check_gift_card,
    find_method,
    find_order,
    find_user,
    line_items,
    net_paid,
    order_total,
    record_payment,
    require_status,
    swap_difference,
)
from envgym.envs.retail.world import cents, dollars
from envgym.envs.toolworld import Store, Tool, ToolError
from envgym.text import quote_for_feedback

__all__ = ["CANCEL_REASONS", "TOOLS"]

CANCEL_REASONS = ("no longer needed", "ordered by mistake")
_ADDRESS = ("address1", "address2", "city", "state", "country", "zip")
_STRING = {"type": "string"}


def _ids(what: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": what}


_ADDRESS_PARAMS = {
    "address1": {"type": "string", "description": "street and number, e.g. 123 Oak Street"},
    "address2": {"type": "string", "description": "apartment or suite, or an empty string"},
    "city": _STRING,
    "state": {"type": "string", "description": "two-letter state code, e.g. TX"},
    "country": {"type": "string", "description": "e.g. USA"},
    "zip": {"type": "string", "description": "five digits"},
}


# ---------------------------------------------------------------- read tools
def find_user_id_by_email(store: Store, email: str) -> str:
    user_id = store.value("SELECT user_id FROM users WHERE email = ?", (email.strip().lower(),))
    if user_id is None:
        raise ToolError(
            f"no user has the email {quote_for_feedback(email)}; check it with the user"
        )
    return user_id


def find_user_id_by_name_zip(store: Store, first_name: str, last_name: str, zip: str) -> str:
    user_id = store.value(
        "SELECT user_id FROM users WHERE lower(first_name) = ? AND lower(last_name) = ? "
        "AND zip = ?",
        (first_name.strip().lower(), last_name.strip().lower(), zip.strip()),
    )
    if user_id is None:
        raise ToolError(
            f"no user is named {quote_for_feedback(f'{first_name} {last_name}')} with zip code "
            f"{quote_for_feedback(zip)}; check all "
            "three with the user, or ask for their email"
        )
    return user_id


def get_user_details(store: Store, user_id: str) -> dict[str, Any]:
    user = find_user(store, user_id)
    methods = store.rows(
        "SELECT * FROM payment_methods WHERE user_id = ? ORDER BY payment_method_id", (user_id,)
    )
    orders = store.rows(
        "SELECT order_id FROM orders WHERE user_id = ? ORDER BY order_id", (user_id,)
    )
    return {
        "user_id": user_id,
        "name": {"first_name": user["first_name"], "last_name": user["last_name"]},
        "email": user["email"],
        "address": {k: user[k] for k in _ADDRESS},
        "payment_methods": [_method_view(m) for m in methods],
        "orders": [o["order_id"] for o in orders],
    }


def _method_view(m: Mapping[str, Any]) -> dict[str, Any]:
    view: dict[str, Any] = {"payment_method_id": m["payment_method_id"], "source": m["kind"]}
    if m["kind"] == "credit_card":
        view.update(brand=m["brand"], last_four=m["last_four"])
    if m["kind"] == "gift_card":
        view["balance"] = f"{m['balance']:.2f}"
    return view


def get_order_details(store: Store, order_id: str) -> dict[str, Any]:
    order = find_order(store, order_id)
    items = store.rows(
        "SELECT o.item_id, i.product_id, p.name, i.options, o.price FROM order_items o "
        "JOIN items i USING (item_id) JOIN products p USING (product_id) "
        "WHERE o.order_id = ? ORDER BY o.line",
        (order_id,),
    )
    payments = store.rows("SELECT * FROM payments WHERE order_id = ? ORDER BY seq", (order_id,))
    view: dict[str, Any] = {
        "order_id": order_id,
        "user_id": order["user_id"],
        "status": order["status"],
        "placed_date": order["placed_date"],
        "address": {k: order[k] for k in _ADDRESS},
        "items": [
            {
                "item_id": i["item_id"],
                "product_id": i["product_id"],
                "name": i["name"],
                "options": json.loads(i["options"]),
                "price": f"{i['price']:.2f}",
            }
            for i in items
        ],
        "total": f"{dollars(order_total(store, order_id)):.2f}",
        "payment_history": [
            {
                "transaction_type": p["kind"],
                "payment_method_id": p["payment_method_id"],
                "amount": f"{p['amount']:.2f}",
            }
            for p in payments
        ],
        "items_modified": bool(order["items_modified"]),
    }
    if order["tracking_id"]:
        view["fulfillment"] = {"courier": order["courier"], "tracking_id": order["tracking_id"]}
    if order["delivered_date"]:
        view["delivered_date"] = order["delivered_date"]
    if order["cancel_reason"]:
        view["cancel_reason"] = order["cancel_reason"]
    request = store.row("SELECT * FROM requests WHERE order_id = ?", (order_id,))
    if request is not None:
        view["request"] = {
            "kind": request["kind"],
            "item_ids": json.loads(request["item_ids"]),
            "new_item_ids": json.loads(request["new_item_ids"] or "[]"),
            "payment_method_id": request["payment_method_id"],
            "amount": f"{request['amount']:.2f}",
        }
    return view


def get_product_details(store: Store, product_id: str) -> dict[str, Any]:
    name = store.value("SELECT name FROM products WHERE product_id = ?", (product_id,))
    if name is None:
        raise ToolError(
            f"there is no product {quote_for_feedback(product_id)}; list_product_types gives "
            "every product id "
            "(an item id is not a product id)"
        )
    items = store.rows("SELECT * FROM items WHERE product_id = ? ORDER BY item_id", (product_id,))
    return {
        "product_id": product_id,
        "name": name,
        "variants": {
            i["item_id"]: {
                "options": json.loads(i["options"]),
                "price": f"{i['price']:.2f}",
                "available": bool(i["available"]),
            }
            for i in items
        },
    }


def list_product_types(store: Store) -> dict[str, str]:
    return {r["name"]: r["product_id"] for r in store.rows("SELECT * FROM products ORDER BY name")}


# ---------------------------------------------------------------- write tools
def cancel_pending_order(store: Store, order_id: str, reason: str) -> dict[str, Any]:
    order = find_order(store, order_id)
    require_status(order, "pending", "cancelled")
    refunds = []
    for method, amount in net_paid(store, order_id).items():
        if amount > 0:
            record_payment(store, order_id, "refund", method, amount)
            refunds.append({"payment_method_id": method, "amount": f"{dollars(amount):.2f}"})
    store.execute(
        "UPDATE orders SET status = 'cancelled', cancel_reason = ? WHERE order_id = ?",
        (reason, order_id),
    )
    return {"order_id": order_id, "status": "cancelled", "refunds": refunds}


def modify_pending_order_address(store: Store, order_id: str, **address: str) -> dict[str, Any]:
    order = find_order(store, order_id)
    require_status(order, "pending", "modified")
    store.execute(
        "UPDATE orders SET address1 = ?, address2 = ?, city = ?, state = ?, country = ?, zip = ? "
        "WHERE order_id = ?",
        (*(address[k] for k in _ADDRESS), order_id),
    )
    return get_order_details(store, order_id)


def modify_pending_order_payment(store: Store, order_id: str, payment_method_id: str) -> dict:
    order = find_order(store, order_id)
    require_status(order, "pending", "modified")
    paid = {m: a for m, a in net_paid(store, order_id).items() if a > 0}
    if len(paid) != 1:
        raise ToolError(f"order {order_id} was paid with several methods; transfer to a human")
    ((old, amount),) = paid.items()
    if payment_method_id == old:
        raise ToolError(f"order {order_id} is already paid with {old}; pick another method")
    method = find_method(store, order, payment_method_id)
    check_gift_card(method, amount)
    record_payment(store, order_id, "payment", payment_method_id, amount)
    record_payment(store, order_id, "refund", old, amount)
    return get_order_details(store, order_id)


def modify_pending_order_items(
    store: Store,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
) -> dict[str, Any]:
    order = find_order(store, order_id)
    require_status(order, "pending", "modified")
    old = line_items(store, order, item_ids)
    difference = swap_difference(store, old, new_item_ids)
    method = find_method(store, order, payment_method_id)
    check_gift_card(method, difference)
    for line, new_id in zip(old, new_item_ids, strict=True):
        price = store.value("SELECT price FROM items WHERE item_id = ?", (new_id,))
        store.execute(
            "UPDATE order_items SET item_id = ?, price = ? WHERE order_id = ? AND line = ?",
            (new_id, price, order_id, line["line"]),
        )
    if difference:
        kind = "payment" if difference > 0 else "refund"
        record_payment(store, order_id, kind, payment_method_id, abs(difference))
    store.execute("UPDATE orders SET items_modified = 1 WHERE order_id = ?", (order_id,))
    return get_order_details(store, order_id)


def modify_user_address(store: Store, user_id: str, **address: str) -> dict[str, Any]:
    find_user(store, user_id)
    store.execute(
        "UPDATE users SET address1 = ?, address2 = ?, city = ?, state = ?, country = ?, zip = ? "
        "WHERE user_id = ?",
        (*(address[k] for k in _ADDRESS), user_id),
    )
    return get_user_details(store, user_id)


def _delivered(store: Store, order_id: str, action: str) -> dict[str, Any]:
    order = find_order(store, order_id)
    require_status(order, "delivered", action)
    return order


def return_delivered_order_items(
    store: Store, order_id: str, item_ids: list[str], payment_method_id: str
) -> dict[str, Any]:
    order = _delivered(store, order_id, "returned")
    lines = line_items(store, order, item_ids)
    find_method(store, order, payment_method_id)
    amount = sum(cents(line["price"]) for line in lines)
    store.execute(
        "INSERT INTO requests VALUES (?, 'return', ?, NULL, ?, ?)",
        (order_id, json.dumps(sorted(item_ids)), payment_method_id, dollars(amount)),
    )
    store.execute("UPDATE orders SET status = 'return requested' WHERE order_id = ?", (order_id,))
    return get_order_details(store, order_id)


def exchange_delivered_order_items(
    store: Store,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
) -> dict[str, Any]:
    order = _delivered(store, order_id, "exchanged")
    old = line_items(store, order, item_ids)
    difference = swap_difference(store, old, new_item_ids)
    method = find_method(store, order, payment_method_id)
    check_gift_card(method, difference)
    pairs = sorted(zip(item_ids, new_item_ids, strict=True))
    store.execute(
        "INSERT INTO requests VALUES (?, 'exchange', ?, ?, ?, ?)",
        (
            order_id,
            json.dumps([p[0] for p in pairs]),
            json.dumps([p[1] for p in pairs]),
            payment_method_id,
            dollars(difference),
        ),
    )
    store.execute("UPDATE orders SET status = 'exchange requested' WHERE order_id = ?", (order_id,))
    return get_order_details(store, order_id)


# ---------------------------------------------------------------- accounts
def _user_arg(store: Store, arguments: Mapping[str, Any]) -> str | None:
    user_id = arguments.get("user_id")
    return store.value("SELECT user_id FROM users WHERE user_id = ?", (user_id,))


def _order_owner(store: Store, arguments: Mapping[str, Any]) -> str | None:
    order_id = arguments.get("order_id")
    return store.value("SELECT user_id FROM orders WHERE order_id = ?", (order_id,))


ORDER_ID = {"type": "string", "description": "the order id, with its '#', e.g. '#W1234567'"}
ITEM_IDS = _ids("item ids of items in the order")
NEW_ITEM_IDS = _ids("the new item ids, one for each of item_ids, in the same order")
METHOD = {
    "type": "string",
    "description": "a payment method id of the user, e.g. 'gift_card_1234567'",
}

TOOLS = (
    Tool(
        "find_user_id_by_email",
        "Find a user's id by their email. Authenticates the user.",
        {"email": {"type": "string", "description": "e.g. mia.garcia4516@example.com"}},
        find_user_id_by_email,
        authenticates=True,
    ),
    Tool(
        "find_user_id_by_name_zip",
        "Find a user's id by first name, last name and zip code. Authenticates the user.",
        {"first_name": _STRING, "last_name": _STRING, "zip": {"type": "string"}},
        find_user_id_by_name_zip,
        authenticates=True,
    ),
    Tool(
        "get_user_details",
        "A user's name, email, default address, payment methods and order ids.",
        {"user_id": {"type": "string", "description": "e.g. mia_garcia_4516"}},
        get_user_details,
        account=_user_arg,
    ),
    Tool(
        "get_order_details",
        "An order's status, items, address, payment history and tracking.",
        {"order_id": ORDER_ID},
        get_order_details,
        account=_order_owner,
    ),
    Tool(
        "get_product_details",
        "A product's variants: item ids, options, prices and availability.",
        {"product_id": {"type": "string", "description": "a product id (not an item id)"}},
        get_product_details,
    ),
    Tool("list_product_types", "Every product type's name and product id.", {}, list_product_types),
    Tool(
        "cancel_pending_order",
        "Cancel a pending order; the amount paid is refunded to the payment methods used "
        "(gift cards at once, others in 5-7 business days).",
        {"order_id": ORDER_ID, "reason": {"type": "string", "enum": list(CANCEL_REASONS)}},
        cancel_pending_order,
        writes=True,
        account=_order_owner,
    ),
    Tool(
        "modify_pending_order_address",
        "Change the shipping address of a pending order.",
        {"order_id": ORDER_ID, **_ADDRESS_PARAMS},
        modify_pending_order_address,
        writes=True,
        account=_order_owner,
    ),
    Tool(
        "modify_pending_order_payment",
        "Pay a pending order with another payment method of the user; the old one is refunded.",
        {"order_id": ORDER_ID, "payment_method_id": METHOD},
        modify_pending_order_payment,
        writes=True,
        account=_order_owner,
    ),
    Tool(
        "modify_pending_order_items",
        "Change items of a pending order to other variants of the same products; the price "
        "difference is paid with, or refunded to, payment_method_id.",
        {
            "order_id": ORDER_ID,
            "item_ids": ITEM_IDS,
            "new_item_ids": NEW_ITEM_IDS,
            "payment_method_id": METHOD,
        },
        modify_pending_order_items,
        writes=True,
        account=_order_owner,
    ),
    Tool(
        "modify_user_address",
        "Change a user's default address.",
        {"user_id": {"type": "string"}, **_ADDRESS_PARAMS},
        modify_user_address,
        writes=True,
        account=_user_arg,
    ),
    Tool(
        "return_delivered_order_items",
        "Request the return of items of a delivered order; the refund goes to "
        "payment_method_id once the items arrive.",
        {"order_id": ORDER_ID, "item_ids": ITEM_IDS, "payment_method_id": METHOD},
        return_delivered_order_items,
        writes=True,
        account=_order_owner,
    ),
    Tool(
        "exchange_delivered_order_items",
        "Request the exchange of items of a delivered order for other variants of the same "
        "products; the price difference is paid with, or refunded to, payment_method_id.",
        {
            "order_id": ORDER_ID,
            "item_ids": ITEM_IDS,
            "new_item_ids": NEW_ITEM_IDS,
            "payment_method_id": METHOD,
        },
        exchange_delivered_order_items,
        writes=True,
        account=_order_owner,
    ),
)
