"""`InlineCalls`: env steps run on the server's event loop, for envs that declare them fast.

Handing a call to a thread (`envgym.remote.threads`) costs a queue, a thread
wake-up, a GIL hand-over and a loop wake-up: about half the server's CPU per
step of a pure-Python env like Sokoban, whose step takes tens of
microseconds. An env class that declares ``fast_calls = True`` (pure Python,
bounded work, no I/O, no sandbox, no network: Sokoban, FrozenLake, the games,
GuessNumber, Household) has its steps run on the loop instead, timed:

- A step whose action is longer than `InlineCalls.ACTION_CHARS` still goes to
  a thread: parsing grows with the reply, and a hostile reply of a megabyte
  must not hold the loop.
- A step on the loop that takes longer than `InlineCalls.BUDGET_S` has held
  every session that long: its session runs its calls on threads from then
  on, and after `InlineCalls.OVERRUNS` such steps every session does (both
  logged as warnings).
- Resets, makes and closes always go to threads (a reset may generate and
  solve a level).

The declaration is a promise: a declared-fast step that hangs holds every
session, and the call deadline (``--call-timeout``) cannot end it. A server
started with ``calls="threads"`` (``envgym serve --calls threads``) runs
every call on a thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from envgym.remote.sessions import Session

__all__ = ["InlineCalls"]

logger = logging.getLogger("envgym.remote")


class InlineCalls:
    """Which steps run on the event loop, and the bookkeeping that moves them off it."""

    #: a step runs on the loop only when its action is at most this long (characters)
    ACTION_CHARS = 16_384
    #: a step on the loop that takes longer (seconds) moves its session to threads
    BUDGET_S = 0.010
    #: after this many such steps, every session of the server goes to threads
    OVERRUNS = 3

    def __init__(self, env_id: str, enabled: bool) -> None:
        self.env_id = env_id
        #: False once `OVERRUNS` steps overran, or with ``calls="threads"``
        self.enabled = enabled
        self.overruns = 0

    def admits(self, session: Session, action: str) -> bool:
        """Whether `session`'s step with `action` runs on the loop."""
        return session.inline and self.enabled and len(action) <= self.ACTION_CHARS

    def run(self, session: Session, call: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` here, on the loop; `call` names it in the log if it overruns."""
        start = time.perf_counter()
        try:
            return fn(*args)
        finally:
            took = time.perf_counter() - start
            if took > self.BUDGET_S:
                self._overran(session, call, took)

    def _overran(self, session: Session, call: str, took: float) -> None:
        session.inline = False
        self.overruns += 1
        budget_ms = self.BUDGET_S * 1000
        logger.warning(
            "%s of %s (declared fast_calls) took %.1f ms on the event loop, past %g ms: "
            "session %s runs its env calls on threads from now on",
            call,
            self.env_id,
            took * 1000,
            budget_ms,
            session.id,
        )
        if self.enabled and self.overruns >= self.OVERRUNS:
            self.enabled = False
            logger.warning(
                "%d env calls of %s overran %g ms on the event loop: every session runs its "
                "env calls on threads from now on (as with --calls threads)",
                self.overruns,
                self.env_id,
                budget_ms,
            )
