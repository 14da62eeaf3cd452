"""A fair scripted agent for every level of Retail: it reads only
what an agent sees (the user's messages and the tools' results), never the
hidden task, so its success shows that the user's words say enough to solve a
task and that the user answers an agent's questions.

It asks for the facts the opening lacks, authenticates, reads every order of
the user, splits the request into wishes, finds each wish's order, items and
new variants by the names and options the user gave and the payment method
the user named, refuses what the policy forbids (a refund to another card, a
return after 30 days, a second item modification), asks for confirmation
naming the ids (and follows a change of mind), makes each write, and tells the
amounts it computed from the tools' results in its last message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from typing import Any

Reply = Generator[str, str, None]

_ITEM = re.compile(r"the ([A-Z][A-Za-z -]+?) \(([^)]*)\)")
_NEW = re.compile(r"for the one with (.+?)(?= and the [A-Z]| from an order|;|, paid|\.$|$)")
_CHANGED = re.compile(r"the one with (.+?)(?: instead)?\.$")
#: The policy's last delivery date a return or an exchange may have (30 days before today).
_WINDOW_START = "2026-05-16"
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

    def forbidden(wish: str) -> bool:
        """Whether the policy forbids `wish` (then it is refused before any write)."""
        named = [where[(n, _options(o))] for n, o in _ITEM.findall(wish)]
        if not named or "cancel" in wish or "new address" in wish or "gift card" in wish:
            return False
        order = named[0][0]
        if "return" in wish or "send back" in wish:
            if order["delivered_date"] < _WINDOW_START:
                return True
            if "original payment method" in wish:
                return False
            method = method_named(wish.rsplit("refund", 1)[1])["payment_method_id"]
            return method != order["payment_history"][0]["payment_method_id"]
        return bool(order["items_modified"])

    told = []
    wishes = _WISHES.split(request)
    for wish in [w for w in wishes if forbidden(w)] + [w for w in wishes if not forbidden(w)]:
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
            if "original payment method" in wish:
                method = paid
            else:
                method = method_named(wish.rsplit("refund", 1)[1])["payment_method_id"]
            ids = [i["item_id"] for _, i in named]
            late = order["delivered_date"] < _WINDOW_START
            if late or (method != paid and not method.startswith("gift_card")):
                why = "it was delivered more than 30 days ago" if late else "of the refund"
                yield (
                    f"I'm sorry, I cannot return {', '.join(ids)} of {order_id} with a refund "
                    f"to {method}: {why}; the policy does not allow it."
                )
                continue
            reply = yield (
                f"I will return {', '.join(ids)} of {order_id}, refund to {method}. Proceed?"
            )
            if "mind" in reply or "thought" in reply:
                method = paid if "original" in reply else method_named(reply)["payment_method_id"]
                yield f"I will return {', '.join(ids)} of {order_id}, refund to {method}. Proceed?"
            yield _call(
                "return_delivered_order_items",
                order_id=order_id,
                item_ids=ids,
                payment_method_id=method,
            )
            told.append(_money(sum(_cents(i["price"]) for _, i in named)))
        else:  # an exchange or a modification: "the X (...) for the one with ..."
            olds, news, variants = [], [], []
            for (_, old), wanted in zip(named, _NEW.findall(wish), strict=True):
                product = _result(
                    (yield _call("get_product_details", product_id=old["product_id"]))
                )
                variants.append(product["variants"])
                new_id = next(
                    k
                    for k, v in product["variants"].items()
                    if _options(v["options"]) == _options(wanted)
                )
                olds.append(old)
                news.append(new_id)
            if order["items_modified"]:
                yield (
                    f"I'm sorry, I cannot change the items of {order_id} for {', '.join(news)}: "
                    "its items were already modified once, and the policy allows it only once."
                )
                continue
            words = wish.split("please use", 1)[1] if "please use" in wish else wish
            method = method_named(words)["payment_method_id"]
            exchange = "exchange" in wish
            tool = "exchange_delivered_order_items" if exchange else "modify_pending_order_items"

            old_ids = ", ".join(o["item_id"] for o in olds)
            reply = yield (
                f"I will change {old_ids} in {order_id} for {', '.join(news)}, using {method}. "
                "Proceed?"
            )
            if "mind" in reply or "thought" in reply:
                wanted = _CHANGED.search(reply)[1]
                news[0] = next(
                    k for k, v in variants[0].items() if _options(v["options"]) == _options(wanted)
                )
                yield (
                    f"I will change {old_ids} in {order_id} for {', '.join(news)}, using "
                    f"{method}. Proceed?"
                )
            yield _call(
                tool,
                order_id=order_id,
                item_ids=[o["item_id"] for o in olds],
                new_item_ids=news,
                payment_method_id=method,
            )
            difference = sum(
                _cents(variants[i][n]["price"]) - _cents(o["price"])
                for i, (o, n) in enumerate(zip(olds, news, strict=True))
            )
            told.append(_money(abs(difference)))
    yield "All done. The amounts: " + ", ".join(told) + "."
