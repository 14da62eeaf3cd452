"""envgym/Retail-v0's tools and store: bad calls get errors the agent can act
on and never raise, the tools refuse what the data forbids, each write changes
exactly the rows it should, money is exact in any order of the writes, and the
store's by-value comparison agrees with its content."""

from __future__ import annotations

import numpy as np
import pytest

from envgym.envs.retail import RETAIL, RetailEnv
from envgym.envs.retail.world import build_world
from envgym.envs.toolworld import Action, Store
from envgym.envs.toolworld.tools import call_tool


@pytest.fixture(scope="module")
def world() -> Store:
    return build_world(0)


def _call(store: Store, name: str, **arguments) -> tuple[bool, object, str]:
    return call_tool(RETAIL.tool(name), store, arguments)


def _order_with(store: Store, status: str) -> dict:
    return store.row("SELECT * FROM orders WHERE status = ? ORDER BY order_id LIMIT 1", (status,))


@pytest.mark.parametrize(
    "name,arguments,expected",
    [
        ("get_order_details", {"order_id": 123}, "'order_id': 123 is not of type 'string'"),
        ("get_order_details", {}, "needs: order_id"),
        ("get_order_details", {"order_id": "#W0000000", "x": 1}, "takes: order_id"),
        ("get_order_details", {"order_id": "#W0000000"}, "there is no order '#W0000000'"),
        ("get_order_details", {"order_id": "W123"}, "start with '#W'"),
        ("get_user_details", {"user_id": "nobody"}, "find_user_id_by_email"),
        ("get_product_details", {"product_id": "1"}, "list_product_types"),
        ("find_user_id_by_email", {"email": "no@example.com"}, "check it with the user"),
        (
            "find_user_id_by_name_zip",
            {"first_name": "A", "last_name": "B", "zip": "1"},
            "all three",
        ),
        ("cancel_pending_order", {"order_id": "#W0000000", "reason": "bored"}, "is not one of"),
        ("return_delivered_order_items", {"order_id": "#W1", "item_ids": []}, "payment_method_id"),
    ],
)
def test_bad_calls_get_actionable_errors_and_never_raise(world, name, arguments, expected):
    ok, data, text = _call(world.copy(), name, **arguments)
    assert not ok and text.startswith("Error") and expected in text, text


def test_tools_refuse_what_the_data_forbids_and_say_what_is_allowed(world):
    store = world.copy()
    processed = _order_with(store, "processed")["order_id"]
    ok, _, text = _call(
        store, "cancel_pending_order", order_id=processed, reason="ordered by mistake"
    )
    assert not ok and "is processed; only pending orders can be cancelled" in text
    pending = _order_with(store, "pending")
    lines = store.rows(
        "SELECT o.item_id, i.product_id FROM order_items o JOIN items i USING (item_id) "
        "WHERE order_id = ? ORDER BY line",
        (pending["order_id"],),
    )
    other = store.value(
        "SELECT item_id FROM items WHERE product_id != ? AND available = 1 ORDER BY item_id",
        (lines[0]["product_id"],),
    )
    card = store.value(
        "SELECT payment_method_id FROM payment_methods WHERE user_id = ? AND kind = 'credit_card'",
        (pending["user_id"],),
    )
    ok, _, text = _call(
        store,
        "modify_pending_order_items",
        order_id=pending["order_id"],
        item_ids=[lines[0]["item_id"]],
        new_item_ids=[other],
        payment_method_id=card,
    )
    assert not ok and "not a variant of the same product" in text
    ok, _, text = _call(
        store,
        "modify_pending_order_items",
        order_id=pending["order_id"],
        item_ids=["0000000000"],
        new_item_ids=[other],
        payment_method_id=card,
    )
    assert not ok and "is not in order" in text and lines[0]["item_id"] in text
    stranger = store.value(
        "SELECT payment_method_id FROM payment_methods WHERE user_id != ? ORDER BY 1",
        (pending["user_id"],),
    )
    ok, _, text = _call(
        store,
        "modify_pending_order_payment",
        order_id=pending["order_id"],
        payment_method_id=stranger,
    )
    assert not ok and "is not a payment method of this order's user; theirs are" in text
    gift = store.row(
        "SELECT g.payment_method_id, o.order_id FROM payment_methods g "
        "JOIN orders o USING (user_id) JOIN payments p USING (order_id) "
        "WHERE g.kind = 'gift_card' AND o.status = 'pending' "
        "AND p.payment_method_id != g.payment_method_id ORDER BY o.order_id"
    )
    store.execute(
        "UPDATE payment_methods SET balance = 0.5 WHERE payment_method_id = ?",
        (gift["payment_method_id"],),
    )
    order = gift["order_id"]
    ok, _, text = _call(
        store,
        "modify_pending_order_payment",
        order_id=order,
        payment_method_id=gift["payment_method_id"],
    )
    assert not ok and "has a balance of 0.50, less than" in text


def _changes(before: Store, after: Store) -> dict[str, tuple[int, int]]:
    return {t: (len(d["removed"]), len(d["added"])) for t, d in after.changes_from(before).items()}


def _apply(env: RetailEnv, action: Action) -> Store:
    store = env.store.copy()
    ok, _, text = call_tool(RETAIL.tool(action.tool), store, action.arguments)
    assert ok, text
    return store


def test_each_write_tool_changes_exactly_the_rows_it_should():
    env = RetailEnv(difficulty="easy")
    seen = {}
    for seed in range(200):
        env.reset(seed=seed)
        action = env.task.actions[0]
        if action.tool in seen:
            continue
        before = env.store.copy()
        after = _apply(env, action)
        seen[action.tool] = (_changes(before, after), before, after, action)
    assert set(seen) == {
        "cancel_pending_order",
        "modify_pending_order_payment",
        "modify_pending_order_items",
        "return_delivered_order_items",
        "exchange_delivered_order_items",
    }
    changes, before, after, action = seen["cancel_pending_order"]
    order_id = action.arguments["order_id"]
    assert changes == {"orders": (1, 1), "payments": (0, 1)}
    assert after.row(
        "SELECT status, cancel_reason FROM orders WHERE order_id = ?", (order_id,)
    ) == {
        "status": "cancelled",
        "cancel_reason": action.arguments["reason"],
    }
    changes, before, after, action = seen["modify_pending_order_payment"]
    assert changes == {"payment_methods": (1, 1), "payments": (0, 2)}
    changes, before, after, action = seen["modify_pending_order_items"]
    assert changes == {"order_items": (1, 1), "orders": (1, 1), "payments": (0, 1)}
    changes, before, after, action = seen["return_delivered_order_items"]
    assert changes == {"orders": (1, 1), "requests": (0, 1)}
    status = after.value(
        "SELECT status FROM orders WHERE order_id = ?", (action.arguments["order_id"],)
    )
    assert status == "return requested"
    changes, before, after, action = seen["exchange_delivered_order_items"]
    assert changes == {"orders": (1, 1), "requests": (0, 1)}

    env = RetailEnv(difficulty="medium")
    for seed in range(200):
        env.reset(seed=seed)
        for action in env.task.actions:
            if action.tool in ("modify_pending_order_address", "modify_user_address") and (
                action.tool not in seen
            ):
                changes = _changes(env.store, _apply(env, action))
                table = "orders" if action.tool.startswith("modify_pending") else "users"
                assert changes == {table: (1, 1)}
                seen[action.tool] = True
    assert {"modify_pending_order_address", "modify_user_address"} <= set(seen)


def test_money_is_exact_whatever_the_order_of_the_writes():
    env = RetailEnv(difficulty="hard")
    for seed in range(20):
        env.reset(seed=seed)
        forward, backward = env.store.copy(), env.store.copy()
        for action in env.task.actions:
            assert call_tool(RETAIL.tool(action.tool), forward, action.arguments)[0]
        for action in reversed(env.task.actions):
            assert call_tool(RETAIL.tool(action.tool), backward, action.arguments)[0]
        assert forward.content() == backward.content()


def test_same_rows_agrees_with_content():
    env = RetailEnv(difficulty="hard")
    for seed in range(10):
        env.reset(seed=seed)
        partial, full = env.store.copy(), env.store.copy()
        for i, action in enumerate(env.task.actions):
            assert call_tool(RETAIL.tool(action.tool), full, action.arguments)[0]
            if i != seed % 3:
                assert call_tool(RETAIL.tool(action.tool), partial, action.arguments)[0]
        for a, b in ((full, partial), (full, full.copy()), (env.store, full)):
            assert a.same_rows(b) == (a.content() == b.content()) == b.same_rows(a)
    # Without a primary key rows may repeat, and how often counts.
    one, two = Store("CREATE TABLE t (a, b)"), Store("CREATE TABLE t (a, b)")
    one.executemany("INSERT INTO t VALUES (?, ?)", [(1, 2), (1, 2), (3, None)])
    two.executemany("INSERT INTO t VALUES (?, ?)", [(3, None), (1, 2), (3, None)])
    assert not one.same_rows(two) and not two.same_rows(one)
    two.execute("UPDATE t SET a = 1, b = 2 WHERE rowid = 3")
    assert one.same_rows(two) and one.tables() == ["t"]


def test_every_tool_survives_arguments_of_every_wrong_shape(world):
    junk = [None, 1, -1.5, True, "", "#W", "x" * 5000, [], ["#W1", "#W1"], {"a": 1}, "\x00"]
    order = _order_with(world, "delivered")
    real = {
        "order_id": order["order_id"],
        "user_id": order["user_id"],
        "item_ids": [
            world.value("SELECT item_id FROM order_items WHERE order_id = ?", (order["order_id"],))
        ]
        * 2,
    }
    rng = np.random.default_rng(0)
    for tool in RETAIL.all_tools:
        names = list(tool.parameters)
        for _ in range(60):
            arguments = {}
            for name in names:
                if rng.random() < 0.1:
                    continue  # a missing argument
                pool = junk + ([real[name]] if name in real else [])
                arguments[name] = pool[int(rng.integers(len(pool)))]
            store = world.copy()
            ok, _, text = call_tool(tool, store, arguments)
            assert ok or text.startswith("Error"), (tool.name, arguments, text)
            assert text.isascii()
            if not ok and "argument '" not in text:  # the tools' own errors quote ids shortened
                assert len(text) < 600, text
