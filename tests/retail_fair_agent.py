"""A fair scripted agent for Retail's easy level: it reads only what an agent
sees (the user's opening and the tools' results), never the hidden task, so
its success shows that an easy task's opening says enough to solve it.

It authenticates with the facts in the opening, looks the order up, finds the
items and new variants by the names and options the user gave, picks the
payment method the user named, asks for confirmation naming the ids, makes
the write and tells the amount it computed from the tools' results.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from typing import Any

Reply = Generator[str, str, None]

_ITEM = re.compile(r"the ([A-Z][A-Za-z -]+?) \(([^)]*)\)")
_NEW = re.compile(r"for the one with (.+?)(?: from an order I received)?;")
_CARD = re.compile(r"my (\w+) card ending in (\d{4})")


def _call(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def _result(observation: str) -> Any:
    body = observation.split("<tool_response>\n", 1)[1].rsplit("\n</tool_response>", 1)[0]
    if body.startswith("Error"):
        raise AssertionError(body)
    return json.loads(body) if body[:1] in "[{" else body


def _options(options: dict[str, str] | str) -> frozenset[str]:
    """Options as a set of "name value" (the tools sort them; the user does not)."""
    if isinstance(options, str):
        return frozenset(options.split(", "))
    return frozenset(f"{k} {v}" for k, v in options.items())


def _cents(amount: str) -> int:
    return int(round(float(amount) * 100))


def fair_easy_agent(opening: str) -> Reply:
    """Yields the replies; is sent each observation."""
    email = re.search(r"[\w.]+@example\.com", opening)
    if email:
        obs = yield _call("find_user_id_by_email", email=email[0])
    else:
        first = re.search(r"(?:My first name is|I'm|First name) (\w+)\.", opening)[1]
        last = re.search(
            r"(?:My last name is (\w+)\.|Last name (\w+)\.|(\w+) is my last name)", opening
        )
        zip_code = re.search(r"zip code (?:is )?(\d{5})", opening, re.IGNORECASE)[1]
        obs = yield _call(
            "find_user_id_by_name_zip",
            first_name=first,
            last_name=next(g for g in last.groups() if g),
            zip=zip_code,
        )
    user_id = _result(obs)
    user = _result((yield _call("get_user_details", user_id=user_id)))
    order_id = re.search(r"#W\d{7}", opening)[0]
    order = _result((yield _call("get_order_details", order_id=order_id)))
    items = {(i["name"], _options(i["options"])): i for i in order["items"]}
    named = [
        items[(n, _options(o))] for n, o in _ITEM.findall(opening) if (n, _options(o)) in items
    ]
    methods = user["payment_methods"]

    def method_named(text: str) -> dict[str, Any]:
        card = _CARD.search(text)
        if card:
            return next(
                m
                for m in methods
                if m.get("brand", "").lower() == card[1].lower() and m["last_four"] == card[2]
            )
        kind = "gift_card" if "gift card" in text else "paypal"
        return next(m for m in methods if m["source"] == kind)

    if "cancel" in opening:
        mistake = "mistake" in opening or "accident" in opening
        reason = "ordered by mistake" if mistake else "no longer needed"
        yield f"I will cancel order {order_id} with the reason '{reason}'. Shall I proceed?"
        yield _call("cancel_pending_order", order_id=order_id, reason=reason)
        yield f"Done: {order['total']} will be refunded."
    elif "with my gift card" in opening:
        gift = method_named("gift card")
        gift_id = gift["payment_method_id"]
        yield f"I will pay order {order_id} with {gift_id}. Shall I proceed?"
        yield _call("modify_pending_order_payment", order_id=order_id, payment_method_id=gift_id)
        left = _cents(gift["balance"]) - _cents(order["total"])
        yield f"Done. Your gift card's remaining balance is {left / 100:.2f}."
    elif "return" in opening or "send back" in opening:
        paid = order["payment_history"][0]["payment_method_id"]
        method = method_named("gift card")["payment_method_id"] if "gift card" in opening else paid
        ids = [i["item_id"] for i in named]
        yield f"I will return items {', '.join(ids)} of {order_id}, refund to {method}. Proceed?"
        yield _call(
            "return_delivered_order_items",
            order_id=order_id,
            item_ids=ids,
            payment_method_id=method,
        )
        total = sum(_cents(i["price"]) for i in named)
        yield f"The refund will be {total / 100:.2f}."
    else:
        old = named[0]
        product = _result((yield _call("get_product_details", product_id=old["product_id"])))
        wanted = _options(_NEW.search(opening)[1])
        new_id, new = next(
            (k, v) for k, v in product["variants"].items() if _options(v["options"]) == wanted
        )
        method = method_named(opening.split("please use", 1)[1])["payment_method_id"]
        tool = (
            "exchange_delivered_order_items"
            if "exchange" in opening
            else ("modify_pending_order_items")
        )
        yield f"I will change {old['item_id']} in {order_id} for {new_id}, using {method}. Proceed?"
        yield _call(
            tool,
            order_id=order_id,
            item_ids=[old["item_id"]],
            new_item_ids=[new_id],
            payment_method_id=method,
        )
        difference = abs(_cents(new["price"]) - _cents(old["price"]))
        yield f"The price difference is {difference / 100:.2f}."
