"""Retail: a tau-bench-like customer-service tool world (``envgym/Retail-v0``).

The shop (`world`), its tools (`tools`), the policy the agent receives
(`policy.md`) and the tasks (`tasks`, `parts`) are this package; the
conversation, the simulated user and the grading are the shared tool-world
base (`envgym.envs.toolworld`). docs/retail.md describes the domain.
"""

from __future__ import annotations

from importlib.resources import files

from envgym.envs.retail.tasks import ASKABLE, make_task
from envgym.envs.retail.tools import TOOLS
from envgym.envs.retail.world import build_world
from envgym.envs.toolworld import Domain, ToolWorldEnv

__all__ = ["POLICY", "RETAIL", "RetailEnv"]

#: The policy document, the core of the agent's system prompt.
POLICY = files("envgym.envs.retail").joinpath("policy.md").read_text(encoding="utf-8")

RETAIL = Domain(
    name="retail",
    policy=POLICY,
    tools=TOOLS,
    askable=ASKABLE,
    build_world=build_world,
    make_task=make_task,
)


class RetailEnv(ToolWorldEnv):
    """Retail: serve an online shop's customer with tools, a policy and a simulated user.

    ## Description
    A tau-bench-like customer-service world. The agent is a shop's support
    agent; its system prompt is the shop's policy (`envs/retail/policy.md`:
    authenticate first, confirm every write, only pending orders are cancelled
    or modified, only delivered orders returned or exchanged within 30 days,
    refunds to the original payment method or a gift card, items modified once)
    and the tools. The user, simulated and deterministic, holds a hidden task:
    cancel an order, change an order's address, payment method or items,
    return or exchange delivered items, update the default address. The shop
    is a SQLite store generated from ``world_seed`` (180 users, namesakes
    among them, their payment methods, 32 product types with 5-10 variants
    each, about 360 orders in six states with items, payments and tracking;
    about 2,300 rows), so nothing is downloaded. docs/retail.md has the
    policy, every tool and how tasks are built.

    ## Action Space
    Text, one action per reply. ``<tool_call>{"name": TOOL, "arguments":
    {...}}</tool_call>`` (at most 5 in a reply, run in order) calls tools:
    ``find_user_id_by_email``, ``find_user_id_by_name_zip``,
    ``get_user_details``, ``get_order_details``, ``get_product_details``,
    ``list_product_types``, ``cancel_pending_order``,
    ``modify_pending_order_address``, ``modify_pending_order_payment``,
    ``modify_pending_order_items``, ``modify_user_address``,
    ``return_delivered_order_items``, ``exchange_delivered_order_items`` and
    ``transfer_to_human`` (ends the episode); ``info["tools"]`` has their
    JSON schemas. Any other text (or a ``respond`` call with ``{"message":
    ...}``) is a message to the user, at most 2,000 characters.
    ``<think>...</think>`` is ignored.

    ## Observation Space
    Text, printable ASCII: the user's first message, then after each reply
    either the tool results in ``<tool_response>`` tags (JSON, or ``Error:
    ...`` saying what was wrong and what is allowed) or the user's answer.

    ## Starting State
    A task drawn from the seed (or ``options["task_id"]``, e.g.
    ``retail-hard-123``): a user, and the orders the task is about, added to
    that user's account in the world of ``world_seed``. easy: one write, and
    the opening states the email or name and zip code and the order number.
    medium: two or three writes, each with a policy rule in play; the user
    tells facts only when asked. hard: three writes, one with a change of mind,
    a request the policy forbids (the user would confirm it), and a namesake
    account in another zip code with an order of the same items.

    ## Rewards
    At the end only, as tau-bench grades: ``store`` 1 when the final store
    equals the goal store (the task's gold writes applied to its initial
    store, compared row by row); ``outputs`` takes it back when a value the
    user must be told (a refund, a price difference, a gift card's balance)
    was not in any message naming at most three amounts (or the conversation
    named more than ten distinct amounts in all); ``policy`` takes it
    back after a policy violation (an account touched before its user was
    authenticated, a write without the user's confirmation of it) or a
    transfer the task did not need. The reward is 1 (``info["success"]``) or 0.

    ## Episode End
    Terminated when the user ends the conversation (every gold write done, or
    three messages in a row that move nothing forward) or on
    ``transfer_to_human``; truncated at ``max_turns`` (20 easy, 30 medium, 40
    hard). Each is graded.

    ## Info
    ``tools`` (the schemas), ``cost`` (``tool_calls``, ``user_messages``),
    ``privileged`` (the user id, gold writes and look-ups, outputs, the user's
    facts, the forbidden write: for trainers, never the agent), ``state_key``,
    and at the end ``grade`` (store match, outputs told, violations), plus the
    shared keys.

    ## Arguments
    ``difficulty``: ``easy``, ``medium`` or ``hard``. ``world_seed`` (default
    0): the generated shop. ``max_turns`` overrides the level's.
    ``reset(options={"task_id": "retail-medium-42"})`` replays a task.

    ## Version History
    * v0: initial version.
    """

    domain = RETAIL
