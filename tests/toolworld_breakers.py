"""Policy breakers for any tool world: the gold dialogue with one rule broken.

Each breaker takes the env's task and domain and returns the replies to send.
A tool world's tests play every breaker on many seeds and check that each
scores 0 (tests/test_retail.py, tests/test_airline.py); a new domain gets the
same attacks by importing `BREAKERS` and `play_replies`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from envgym.envs.toolworld.oracle import gold_dialogue
from envgym.envs.toolworld.task import Task

LEVELS = ("easy", "medium", "hard")
_AMOUNT = re.compile(r"\$?\d[\d,]*\.\d\d")
CONFIRMATION = "Shall I proceed? (yes/no)"


def no_confirmation(task: Task, domain: Any) -> list[str]:
    """Every write made without asking the user first."""
    return [r for r in gold_dialogue(task) if CONFIRMATION not in r]


def late_authentication(task: Task, domain: Any) -> list[str]:
    """The account read and changed first; the authenticating call comes last."""
    replies = list(gold_dialogue(task))
    action = next(a for a in task.lookups if domain.tool(a.tool).authenticates)
    auth = "<tool_call>" + json.dumps(action.as_dict()) + "</tool_call>"
    replies.remove(auth)
    return replies[:-1] + [auth, replies[-1]]


def forbidden_done(task: Task, domain: Any) -> list[str]:
    """Asks to confirm the forbidden request instead of refusing it, then does it."""
    replies = list(gold_dialogue(task))
    refusal = next(i for i, r in enumerate(replies) if r.startswith("I'm sorry, I cannot"))
    replies[refusal : refusal + 1] = [
        f"I will {task.forbidden.summary}. {CONFIRMATION}",
        "<tool_call>" + json.dumps(task.forbidden.as_dict()) + "</tool_call>",
    ]
    return replies


def silent(task: Task, domain: Any) -> list[str]:
    """Does the work but never tells a value the user needs: amounts left out of
    its messages, and a closing message without them."""
    replies = [
        r if "<tool_call>" in r else _AMOUNT.sub("the amount", r)
        for r in list(gold_dialogue(task))[:-1]
    ]
    return [*replies, "All done. Is there anything else?"]


def hedging(task: Task, domain: Any) -> list[str]:
    """Tells the right values only among many candidates."""
    amounts = [f"{float(o) + k:,.2f}" for o in task.outputs for k in (0, 5, 10, 25)]
    return silent(task, domain)[:-1] + [f"The amount is one of {', '.join(amounts)}."]


#: name -> (breaker, the levels whose tasks it applies to)
BREAKERS: dict[str, tuple[Callable[[Task, Any], list[str]], tuple[str, ...]]] = {
    "writes without a confirmation": (no_confirmation, LEVELS),
    "touches the account before authenticating": (late_authentication, LEVELS),
    "does the forbidden write once confirmed": (forbidden_done, ("hard",)),
    "never tells the values": (silent, LEVELS),
    "hedges between values": (hedging, LEVELS),
}


def play_replies(env: Any, replies: list[str]) -> dict[str, Any]:
    """Send `replies` to the env just reset (then goodbyes until the episode ends);
    the final info."""
    for reply in replies:
        *_, terminated, truncated, info = env.step(reply)
        if terminated or truncated:
            return info
    while True:
        *_, terminated, truncated, info = env.step("Goodbye.")
        if terminated or truncated:
            return info


def break_policy(env: Any, breaker: str, level: str, seeds: range) -> list[int]:
    """The seeds on which `breaker` was not scored 0 (should be none)."""
    make, _ = BREAKERS[breaker]
    paid = []
    for seed in seeds:
        env.reset(seed=seed, options={"difficulty": level})
        world = env.unwrapped
        info = play_replies(env, make(world.task, world.domain))
        if info["success"] or sum(info["reward_components"].values()) > 0:
            paid.append(seed)
    return paid


def check_each_breaker_fails_for_its_own_reason(env: Any, seed: int = 1) -> None:
    """On a hard task: the unconfirmed write and the early account access are
    violations with the store right, the forbidden write breaks the store, the
    hedge leaves the values untold."""

    def grade(breaker: str) -> dict[str, Any]:
        env.reset(seed=seed, options={"difficulty": "hard"})
        make, _ = BREAKERS[breaker]
        return play_replies(env, make(env.unwrapped.task, env.unwrapped.domain))["grade"]

    g = grade("writes without a confirmation")
    assert g["store_match"] and any("confirmation" in v for v in g["violations"]), g
    g = grade("touches the account before authenticating")
    assert g["store_match"] and any("authenticated" in v for v in g["violations"]), g
    g = grade("does the forbidden write once confirmed")
    assert not g["store_match"] and g["policy_ok"], g
    g = grade("hedges between values")
    assert g["store_match"] and g["missing_outputs"], g
