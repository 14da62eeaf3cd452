"""A fair scripted agent for Retail's easy and medium levels: it reads only
what an agent sees (the user's messages and the tools' results), never the
hidden task, so its success shows that the user's words say enough to solve a
task and that the user answers an agent's questions.

It asks for the facts the opening lacks, authenticates, reads every order of
the user, splits the request into wishes, finds each wish's order, items and
new variants by the names and options the user gave and the payment method
the user named, asks for confirmation naming the ids, makes each write, and
tells the amounts it computed from the tools' results in its last message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from typing import Any

Reply = Generator[str, str, None]

_ITEM = re.compile(r"the ([A-Z][A-Za-z -]+?) \(([^)]*)\)")
_NEW = re.compile(r"for the one with (.+?)(?= and the [A-Z]| from an order|;|$)")
_CARD = re.compile(r"my (\w+) card ending in (\d{4})")
_WISHES = re.compile(r"(?<=[.?:]) (?:Also, |And |On top of that, |Besides that, )")
_ADDRESS = re.compile(
    r"(\d+ [A-Za-z ]+?)(?:, ((?:Apt|Suite) \d+))?, ([A-Za-z ]+), ([A-Z]{2}) (\d{5}), (USA)"
)


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


def _money(cents: int) -> str:
    return f"{cents / 100:.2f}"


def fair_agent(opening: str) -> Reply:
    """Yields the replies; is sent each observation."""
    request = opening.split(" ", 1)[1]  # after the greeting
    known = opening
    wants_address = "new address" in opening or "new one" in opening
    if not re.search(r"@example\.com|zip code", opening, re.IGNORECASE):
        ask = "your email, or your first name, last name and zip code"
        known += " " + (yield f"I can help. Could you please tell me {ask}?")
    if wants_address:
        known += " " + (yield "Could you please tell me your new address?")
    email = re.search(r"[\w.]+@example\.com", known)
    if email:
        obs = yield _call("find_user_id_by_email", email=email[0])
    else:
        first = re.search(r"(?:My first name is|I'm|First name) (\w+)\.", known)[1]
        last = re.search(
            r"(?:My last name is (\w+)\.|Last name (\w+)\.|(\w+) is my last name)", known
        )
        zip_code = re.search(r"zip code (?:is )?(\d{5})", known, re.IGNORECASE)[1]
        obs = yield _call(
            "find_user_id_by_name_zip",
            first_name=first,
            last_name=next(g for g in last.groups() if g),
            zip=zip_code,
        )
    user_id = _result(obs)
    user = _result((yield _call("get_user_details", user_id=user_id)))
    methods = user["payment_methods"]
    orders = {}
    for order_id in user["orders"]:
        orders[order_id] = _result((yield _call("get_order_details", order_id=order_id)))
    where = {
        (i["name"], _options(i["options"])): (o, i) for o in orders.values() for i in o["items"]
    }
    address = None
    if wants_address:
        found = _ADDRESS.search(known.rsplit("@example.com", 1)[-1])
        keys = ("address1", "address2", "city", "state", "zip", "country")
        address = dict(zip(keys, (g or "" for g in found.groups()), strict=True))

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

    told = []
    for wish in _WISHES.split(request):
        named = [where[(n, _options(o))] for n, o in _ITEM.findall(wish)]
        order = named[0][0] if named else None
        order_id = order["order_id"] if order else None
        if "default address" in wish:
            yield (
                f"I will change your default address to {address['address1']}, "
                f"{address['city']} {address['zip']}. Shall I proceed?"
            )
            yield _call("modify_user_address", user_id=user_id, **address)
        elif "cancel" in wish:
            mistake = "mistake" in wish or "accident" in wish
            reason = "ordered by mistake" if mistake else "no longer needed"
            yield f"I will cancel order {order_id} with the reason '{reason}'. Shall I proceed?"
            yield _call("cancel_pending_order", order_id=order_id, reason=reason)
            told.append(order["total"])
        elif "new address" in wish:
            yield (
                f"I will send order {order_id} to {address['address1']}, {address['city']} "
                f"{address['zip']}. Shall I proceed?"
            )
            yield _call("modify_pending_order_address", order_id=order_id, **address)
        elif "with my gift card" in wish:
            gift = method_named("gift card")
            gift_id = gift["payment_method_id"]
            yield f"I will pay order {order_id} with {gift_id}. Shall I proceed?"
            yield _call(
                "modify_pending_order_payment", order_id=order_id, payment_method_id=gift_id
            )
            told.append(_money(_cents(gift["balance"]) - _cents(order["total"])))
        elif "return" in wish or "send back" in wish:
            paid = order["payment_history"][0]["payment_method_id"]
            gift = "gift card" in wish
            method = method_named("gift card")["payment_method_id"] if gift else paid
            ids = [i["item_id"] for _, i in named]
            yield f"I will return {', '.join(ids)} of {order_id}, refund to {method}. Proceed?"
            yield _call(
                "return_delivered_order_items",
                order_id=order_id,
                item_ids=ids,
                payment_method_id=method,
            )
            told.append(_money(sum(_cents(i["price"]) for _, i in named)))
        else:  # an exchange or a modification: "the X (...) for the one with ..."
            olds, news, difference = [], [], 0
            for (_, old), wanted in zip(named, _NEW.findall(wish), strict=True):
                product = _result(
                    (yield _call("get_product_details", product_id=old["product_id"]))
                )
                new_id, new = next(
                    (k, v)
                    for k, v in product["variants"].items()
                    if _options(v["options"]) == _options(wanted)
                )
                olds.append(old["item_id"])
                news.append(new_id)
                difference += _cents(new["price"]) - _cents(old["price"])
            method = method_named(wish.split("please use", 1)[1])["payment_method_id"]
            tool = (
                "exchange_delivered_order_items"
                if "exchange" in wish
                else "modify_pending_order_items"
            )
            yield (
                f"I will change {', '.join(olds)} in {order_id} for {', '.join(news)}, using "
                f"{method}. Proceed?"
            )
            yield _call(
                tool,
                order_id=order_id,
                item_ids=olds,
                new_item_ids=news,
                payment_method_id=method,
            )
            told.append(_money(abs(difference)))
    yield "All done. The amounts: " + ", ".join(told) + "."
