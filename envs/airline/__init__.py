"""Airline: a customer-service tool world (``envgym/Airline-v0``), tau-bench style.

`world` builds the seeded store (airports, flights by date, users,
reservations), `reads` and `writes` are the tools (listed in `tools`),
`policy.md` is the policy the agent reads, `parts` and `tasks` generate the
tasks. The conversation, the simulated user and the grading are the shared
tool-world base (`envgym.envs.toolworld`).
"""

from __future__ import annotations

from importlib.resources import files

from envgym.envs.airline.tasks import ASKABLE, make_task
from envgym.envs.airline.tools import TOOLS
from envgym.envs.airline.world import build_world
from envgym.envs.toolworld import Domain, ToolWorldEnv

__all__ = ["AIRLINE", "AirlineEnv"]

AIRLINE = Domain(
    name="airline",
    policy=files(__name__).joinpath("policy.md").read_text(encoding="utf-8"),
    tools=TOOLS,
    askable=ASKABLE,
    build_world=build_world,
    make_task=make_task,
)


class AirlineEnv(ToolWorldEnv):
    """Airline: serve an airline's customer with tools, by its policy (tau-bench style).

    ## Description
    The agent is an airline's customer-service agent. A simulated user holds a
    hidden goal (book a flight, cancel or change a reservation, add bags,
    correct a passenger, get compensation for a cancelled or delayed flight).
    The agent talks to the user and calls tools over the airline's database
    (a seeded SQLite store: 30 airports, 72 daily flights with a status, seats
    and prices per cabin for each date of June 2026, 200 users with saved
    passengers and payment methods, and their reservations). The system
    prompt is the airline's policy (`envs/airline/policy.md`): authenticate
    the user first, confirm every write with an explicit yes, and the domain's
    rules on changes, cancellations, bags, insurance and compensation. Some
    rules are not enforced by the tools, so breaking them is possible and
    shows in the store. docs/airline.md describes the world, tools and tasks.

    ## Action Space
    Text: one reply per step. ``<tool_call>{"name": ..., "arguments":
    {...}}</tool_call>`` blocks (at most 5) call tools; a ``respond`` call or
    any other text is a message to the user (at most 2,000 characters);
    ``transfer_to_human`` ends the conversation. ``<think>...</think>`` is
    ignored. ``info["tools"]`` has every tool's JSON schema.

    ## Observation Space
    Text, printable ASCII: the user's first message at reset; then the tool
    results in ``<tool_response>`` tags, or the user's answer, or feedback on a
    malformed reply.

    ## Starting State
    The world comes from ``world_seed``; the task from the reset seed (or
    ``options["task_id"]``, ``airline-LEVEL-SEED``): a user and requests set
    up in the task's own copy of the store. easy: one write, and the opening
    states the user id, the email or date of birth, and every id. medium: two
    writes on one reservation, facts given only when asked, one policy rule in
    play. hard: two or three writes on reservations described by their trip, a
    request the policy forbids (the user would confirm it), a change of mind,
    and another user of the same name; the user knows their name, zip code and
    email or date of birth, not their user id.

    ## Rewards
    At the episode's end, as tau-bench grades: ``store`` 1.0 when the final
    store equals the goal store (the gold writes applied to the task's initial
    store, compared row by row); ``outputs`` takes it back (-1.0) unless every
    required value (refund, fare difference, bag fee, certificate, booking
    total, as ``$123.00``) was told to the user in a message naming at most
    three amounts (and at most ten distinct amounts over the conversation);
    ``policy`` takes it back when an account was touched before
    authentication, a write was made without the user's yes, or a transfer
    was made where none was needed. The components sum to the reward (1.0 for
    success, else 0.0); earlier steps pay 0.

    ## Episode End
    Terminated when the user leaves (all done, or three messages in a row that
    move nothing forward), or on a transfer. Truncated after ``max_turns``
    (20, 30, 40 by level). ``info["success"]`` is the grade.

    ## Info
    ``tools`` (the tools' schemas), ``cost`` (``tool_calls``,
    ``user_messages``), ``privileged`` (the user id, the gold writes and
    reads, the outputs, the facts, the forbidden write), ``state_key``, and at
    the end ``grade`` (store match, missing outputs, violations), plus the
    shared keys.

    ## Arguments
    ``difficulty`` ("easy", "medium", "hard"), ``world_seed`` (default 0),
    ``max_turns``, ``render_mode`` ("ansi", "human").

    ## Version History
    * v0: first version.
    """

    domain = AIRLINE
