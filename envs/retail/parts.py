"""The parts a Retail task is made of: one gold write each, with the order it
is about (added to the store here), the user's words for it, its confirmation
summary and mentions, the value the agent must tell, and the closing sentence.

A `Builder` holds one task's user and draws everything from the task's rng.
Each task order uses products the user has in no other order, so "the desk
lamp" names one item. Money is computed in cents (`world.cents`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from envgym.envs.retail.world import (
    RETURN_WINDOW_DAYS,
    WorldView,
    add_order,
    cents,
    dollars,
    new_address,
    new_payment_method,
    options_text,
)
from envgym.envs.toolworld import Action, Store

__all__ = ["Builder", "Part", "address_text", "item_words"]

REASONS = {
    "no longer needed": ("I no longer need it", "I don't need it anymore"),
    "ordered by mistake": ("I ordered it by mistake", "I placed it by accident"),
}


@dataclass
class Part:
    """One gold write of a task and everything said about it."""

    family: str
    action: Action
    said: str
    order_id: str | None = None
    output: str | None = None
    inform: str = ""
    products: tuple[str, ...] = ()
    address: dict[str, str] | None = None
    change_of_mind: tuple[str, ...] = ()
    change_message: str = ""


def address_text(a: dict[str, str]) -> str:
    unit = f", {a['address2']}" if a["address2"] else ""
    return f"{a['address1']}{unit}, {a['city']}, {a['state']} {a['zip']}, {a['country']}"


def _money(amount: int) -> str:
    return f"{dollars(amount):.2f}"


def item_words(item: dict[str, Any]) -> str:
    return f"{item['name']} ({options_text(item['options'])})"


def _list(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


class Builder:
    """Draws one task's orders and parts for `user`."""

    def __init__(
        self, store: Store, rng: np.random.Generator, user: dict[str, Any], world: WorldView
    ) -> None:
        self.store, self.rng, self.user = store, rng, user
        self.user_id = user["user_id"]
        self.world = world
        #: order id -> (status, item ids) of the orders this task added
        self.orders: dict[str, tuple[str, list[str]]] = {}
        self.products = self.world.products
        used = store.rows(
            "SELECT DISTINCT i.product_id FROM orders o JOIN order_items l USING (order_id) "
            "JOIN items i USING (item_id) WHERE o.user_id = ? ORDER BY i.product_id",
            (self.user_id,),
        )
        self.used = {row["product_id"] for row in used}
        self._address: dict[str, str] | None = None
        self._methods: list[dict[str, Any]] | None = None
        self._card: dict[str, Any] | None = None

    # ------------------------------------------------------------ drawing
    def pick(self, options: Any) -> Any:
        return options[int(self.rng.integers(len(options)))]

    def methods(self, kind: str) -> list[dict[str, Any]]:
        """The user's payment methods of `kind`, by id (read once, then kept up to date)."""
        if self._methods is None:
            self._methods = self.store.rows(
                "SELECT * FROM payment_methods WHERE user_id = ? ORDER BY payment_method_id",
                (self.user_id,),
            )
        return [m for m in self._methods if m["kind"] == kind]

    def add_method(self, kind: str) -> None:
        new_payment_method(self.store, self.rng, self.user_id, kind)
        self._methods = None

    def card(self) -> dict[str, Any]:
        """The credit card the task's orders are paid with (the user's first)."""
        if self._card is None:
            self._card = self.methods("credit_card")[0]
        return self._card

    def gift(self, at_least: int = 0) -> dict[str, Any]:
        """The user's gift card (added if they have none), with at least `at_least` cents."""
        cards = self.methods("gift_card")
        if not cards:
            self.add_method("gift_card")
            cards = self.methods("gift_card")
        card = cards[0]
        if cents(card["balance"]) < at_least:
            balance = dollars(at_least + int(self.rng.integers(1_000, 20_000)))
            self.store.execute(
                "UPDATE payment_methods SET balance = ? WHERE payment_method_id = ?",
                (balance, card["payment_method_id"]),
            )
            card["balance"] = balance
        return card

    def other_method(self) -> dict[str, Any]:
        """A method that is neither the task's card nor a gift card (added if need be)."""
        card_id = self.card()["payment_method_id"]
        others = [
            m
            for m in self.methods("paypal") + self.methods("credit_card")
            if m["payment_method_id"] != card_id
        ]
        if not others:
            self.add_method("credit_card")
            others = [m for m in self.methods("credit_card") if m["payment_method_id"] != card_id]
        return others[0]

    def words(self, method: dict[str, Any]) -> str:
        if method["kind"] == "credit_card":
            return f"my {method['brand'].title()} card ending in {method['last_four']}"
        return "my PayPal account" if method["kind"] == "paypal" else "my gift card"

    @property
    def address(self) -> dict[str, str]:
        if self._address is None:
            self._address = new_address(self.rng)
        return self._address

    def _variants(self, product_id: str) -> tuple[dict[str, Any], ...]:
        return self.world.variants[product_id]

    def order(
        self, status: str, size: int, swaps: int = 0, choices: int = 1, **kw: Any
    ) -> tuple[str, list[dict[str, Any]], list[list[dict[str, Any]]]]:
        """Add an order of `size` items (the first `swaps` of them with `choices`
        available variants of another price to change to); return its id, its
        items and, per swap, the variants to change to."""
        items: list[dict[str, Any]] = []
        targets: list[list[dict[str, Any]]] = []
        order = self.rng.permutation(len(self.products))
        for index in order:
            product = self.products[int(index)]
            if product["product_id"] in self.used:
                continue
            variants = self._variants(product["product_id"])
            old = variants[int(self.rng.integers(len(variants)))]
            if len(targets) < swaps:
                fits = [
                    v
                    for v in variants
                    if v["available"]
                    and v["item_id"] != old["item_id"]
                    and cents(v["price"]) != cents(old["price"])
                ]
                if len(fits) < choices:
                    continue
                picked = self.rng.choice(len(fits), size=choices, replace=False)
                targets.append([fits[int(i)] for i in picked])
            self.used.add(product["product_id"])
            items.append(old)
            if len(items) == size:
                break
        method = kw.pop("method", None) or self.card()
        order_id = add_order(
            self.store,
            self.rng,
            self.user_id,
            status,
            [i["item_id"] for i in items],
            method["payment_method_id"],
            prices=[i["price"] for i in items],
            address=self.user,
            **kw,
        )
        self.orders[order_id] = (status, [i["item_id"] for i in items])
        return order_id, items, targets

    def recent(self) -> int:
        return int(self.rng.integers(1, RETURN_WINDOW_DAYS - 4))

    # ------------------------------------------------------------ parts
    def part(self, family: str, change: bool = False) -> Part:
        return getattr(self, "_" + family)(change)

    def _cancel(self, change: bool) -> Part:
        order_id, items, _ = self.order("pending", int(self.rng.integers(1, 4)))
        reason = self.pick(tuple(REASONS))
        total = sum(cents(i["price"]) for i in items)
        what = _list([f"the {item_words(i)}" for i in items])
        said = self.pick(
            (
                "I want to cancel my pending order of {} because {}.",
                "Please cancel the order with {}: {}.",
            )
        ).format(what, self.pick(REASONS[reason]))
        return Part(
            "cancel",
            Action(
                "cancel_pending_order",
                {"order_id": order_id, "reason": reason},
                summary=f"cancel order {order_id} with the reason '{reason}'",
                mentions=(order_id, reason),
            ),
            said,
            order_id,
            _money(total),
            f"Order {order_id} is cancelled and {_money(total)} will be refunded to the "
            "payment method it was paid with.",
        )

    def _order_address(self, change: bool) -> Part:
        order_id, items, _ = self.order("pending", int(self.rng.integers(1, 3)))
        address = self.address
        what = _list([f"the {item_words(i)}" for i in items])
        said = self.pick(
            (
                "I've moved, so my pending order of {} should go to my new address.",
                "Please ship my pending order of {} to my new address instead.",
            )
        ).format(what)
        return Part(
            "order_address",
            Action(
                "modify_pending_order_address",
                {"order_id": order_id, **address},
                summary=f"change the shipping address of order {order_id} to "
                f"{address_text(address)}",
                mentions=(order_id, address["address1"], address["zip"]),
            ),
            said,
            order_id,
            inform=f"Order {order_id} will ship to {address['address1']}.",
            address=address,
        )

    def _user_address(self, change: bool) -> Part:
        address = self.address
        said = self.pick(
            (
                "Please also update my default address to the new one.",
                "My account's default address should be the new one too.",
            )
        )
        return Part(
            "user_address",
            Action(
                "modify_user_address",
                {"user_id": self.user_id, **address},
                summary=f"change the default address of your account to {address_text(address)}",
                mentions=("default address", address["address1"], address["zip"]),
            ),
            said,
            inform="Your default address is updated.",
            address=address,
        )

    def _pay_gift(self, change: bool) -> Part:
        card = self.card()
        order_id, items, _ = self.order("pending", int(self.rng.integers(1, 3)), method=card)
        total = sum(cents(i["price"]) for i in items)
        gift = self.gift(at_least=total)
        left = cents(gift["balance"]) - total
        what = _list([f"the {item_words(i)}" for i in items])
        said = self.pick(
            (
                "I'd like to pay for my pending order of {} with my gift card instead of {}.",
                "Can my pending order of {} be paid with my gift card rather than {}?",
            )
        ).format(what, self.words(card))
        gift_id, card_id = gift["payment_method_id"], card["payment_method_id"]
        return Part(
            "pay_gift",
            Action(
                "modify_pending_order_payment",
                {"order_id": order_id, "payment_method_id": gift_id},
                summary=f"pay order {order_id} with {gift_id} instead of {card_id}, which "
                "gets a refund",
                mentions=(order_id, gift_id),
            ),
            said,
            order_id,
            _money(left),
            f"Order {order_id} is now paid with your gift card, whose remaining balance is "
            f"{_money(left)}.",
        )

    def _swap(self, family: str, change: bool, pending: bool, count: int, gift: bool) -> Part:
        status = "pending" if pending else "delivered"
        kw = {} if pending else {"delivered_days_ago": self.recent()}
        size = max(count, int(self.rng.integers(1, 4)))
        choices = 2 if change else 1
        order_id, items, targets = self.order(status, size, swaps=count, choices=choices, **kw)
        olds = items[:count]
        finals = [t[-1] for t in targets]
        firsts = [t[0] for t in targets]
        difference = sum(
            cents(n["price"]) - cents(o["price"]) for o, n in zip(olds, finals, strict=True)
        )
        method = self.gift(at_least=max(difference, 0)) if gift else self.card()
        method_id = method["payment_method_id"]
        shown = firsts if change else finals
        changes = _list(
            [
                f"the {item_words(o)} for the one with {options_text(n['options'])}"
                for o, n in zip(olds, shown, strict=True)
            ]
        )
        tool = "modify_pending_order_items" if pending else "exchange_delivered_order_items"
        if pending:
            said = f"In my pending order, I'd like to change {changes}"
        else:
            said = f"I'd like to exchange {changes} from an order I received"
        said += f"; please use {self.words(method)} for any price difference."
        new_ids = [n["item_id"] for n in finals]
        verb = "change" if pending else "exchange"
        summary = (
            f"{verb} item(s) {', '.join(o['item_id'] for o in olds)} of order {order_id} "
            f"for item(s) {', '.join(new_ids)} "
            f"({'; '.join(options_text(n['options']) for n in finals)}), with the price "
            f"difference paid with or refunded to {method_id}"
        )
        amount = _money(abs(difference))
        if difference > 0:
            money = f"the price difference of {amount} is charged to {self.words(method)}"
        else:
            money = f"the price difference of {amount} is refunded to {self.words(method)}"
        inform = (
            f"The {'change' if pending else 'exchange'} for order {order_id} is "
            f"{'done' if pending else 'requested'}; {money.replace('my ', 'your ')}."
        )
        part = Part(
            family,
            Action(
                tool,
                {
                    "order_id": order_id,
                    "item_ids": [o["item_id"] for o in olds],
                    "new_item_ids": new_ids,
                    "payment_method_id": method_id,
                },
                summary=summary,
                mentions=(order_id, *new_ids, method_id),
            ),
            said,
            order_id,
            amount,
            inform,
            products=tuple(o["product_id"] for o in olds),
        )
        if change:
            part.change_of_mind = (order_id, firsts[0]["item_id"])
            part.change_message = self.pick(
                (
                    "Wait, sorry, I changed my mind: I'd rather have the one with {}.",
                    "Actually, on second thought, make it the one with {} instead.",
                )
            ).format(options_text(finals[0]["options"]))
        return part

    def _modify_items(self, change: bool) -> Part:
        return self._swap("modify_items", change, pending=True, count=1, gift=False)

    def _modify_two(self, change: bool) -> Part:
        return self._swap("modify_two", change, pending=True, count=2, gift=False)

    def _exchange(self, change: bool) -> Part:
        return self._swap("exchange", change, pending=False, count=1, gift=False)

    def _exchange_gift(self, change: bool) -> Part:
        return self._swap("exchange_gift", change, pending=False, count=1, gift=True)

    def _return(self, change: bool, gift: bool = False) -> Part:
        card = self.card()
        size = int(self.rng.integers(1, 4))
        order_id, items, _ = self.order(
            "delivered", size, method=card, delivered_days_ago=self.recent()
        )
        back = items[: int(self.rng.integers(1, len(items) + 1))]
        if gift:
            first = final = self.gift()
        elif change:
            first, final = (self.gift(), card) if self.rng.random() < 0.5 else (card, self.gift())
        else:
            first = final = card
        amount = sum(cents(i["price"]) for i in back)
        what = _list([f"the {item_words(i)}" for i in back])
        where = "my gift card" if first["kind"] == "gift_card" else "the original payment method"
        said = self.pick(
            (
                "I'd like to return {} from a recent order, with the refund to {}.",
                "I want to send back {} that I received; please refund {}.",
            )
        )
        said = said.format(what, where).replace("refund my", "refund it to my")
        said = said.replace("refund the original", "refund it to the original")
        method_id = final["payment_method_id"]
        ids = [i["item_id"] for i in back]
        final_words = (
            "your gift card" if final["kind"] == "gift_card" else "the original payment method"
        )
        part = Part(
            "return_gift" if gift else "return",
            Action(
                "return_delivered_order_items",
                {"order_id": order_id, "item_ids": ids, "payment_method_id": method_id},
                summary=f"return item(s) {', '.join(ids)} of order {order_id}, with the refund "
                f"to {method_id}",
                mentions=(order_id, *ids, method_id),
            ),
            said,
            order_id,
            _money(amount),
            f"The return for order {order_id} is requested; {_money(amount)} will be refunded "
            f"to {final_words} once the items arrive.",
        )
        if change:
            part.change_of_mind = (order_id, first["payment_method_id"])
            to = "my gift card" if final["kind"] == "gift_card" else "the original payment method"
            part.change_message = self.pick(
                (
                    "Actually, I changed my mind: please send that refund to {} instead.",
                    "Hmm, on second thought, I'd rather get the refund on {}.",
                )
            ).format(to)
        return part

    def _return_gift(self, change: bool) -> Part:
        return self._return(change, gift=True)
