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
- A step on the loop that works longer than `InlineCalls.BUDGET_S` (CPU
  time) or blocks longer than `InlineCalls.BLOCKED_S` (sleep, I/O, a lock)
  has held every session that long: its session runs its calls on threads
  from then on, and after `InlineCalls.OVERRUNS` such steps every session
  does (both logged as warnings). Time the process merely lost the CPU to
  others (a loaded machine) is not the env's doing and does not count; the
  blocked budget is longer because a step can wait for the GIL while an env
  thread runs a reset, which is not the env's doing either. Where the system
  cannot give one thread's CPU time (not Linux), the wall clock counts.
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

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

__all__ = ["InlineCalls"]

logger = logging.getLogger("envgym.remote")


class InlineCalls:
    """Which steps run on the event loop, and the bookkeeping that moves them off it."""

    #: a step runs on the loop only when its action is at most this long (characters)
    ACTION_CHARS = 16_384
    #: a step on the loop that works longer (CPU seconds) moves its session to threads
    BUDGET_S = 0.010
    #: ... and one that blocks longer (seconds off the CPU of its own accord)
    BLOCKED_S = 0.100
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
        usage = _usage()
        start = time.perf_counter()
        try:
            return fn(*args)
        finally:
            took = time.perf_counter() - start
            if took > self.BUDGET_S and self._env_took(took, usage):
                self._overran(session, call, took)

    def _env_took(self, took: float, before: Any) -> bool:
        """Whether a call that took `took` seconds of wall clock worked or blocked
        past its budget, rather than lost the CPU to other processes."""
        after = _usage()
        if before is None or after is None:
            return True
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        blocked = after.ru_nvcsw > before.ru_nvcsw  # it gave up the CPU itself
        return cpu > self.BUDGET_S or (blocked and took - cpu > self.BLOCKED_S)

    def _overran(self, session: Session, call: str, took: float) -> None:
        session.inline = False
        self.overruns += 1
        budget = f"{self.BUDGET_S * 1000:g} ms of CPU or {self.BLOCKED_S * 1000:g} ms blocked"
        logger.warning(
            "%s of %s (declared fast_calls) took %.1f ms on the event loop, past its budget "
            "(%s): session %s runs its env calls on threads from now on",
            call,
            self.env_id,
            took * 1000,
            budget,
            session.id,
        )
        if self.enabled and self.overruns >= self.OVERRUNS:
            self.enabled = False
            logger.warning(
                "%d env calls of %s overran their budget on the event loop (%s): every "
                "session runs its env calls on threads from now on (as with --calls threads)",
                self.overruns,
                self.env_id,
                budget,
            )


def _usage() -> Any:
    """This thread's resource usage (CPU time, context switches); None where the
    system cannot say for one thread."""
    if _RUSAGE_THREAD is None:
        return None
    return resource.getrusage(_RUSAGE_THREAD)


#: getrusage's "this thread" (Linux); None elsewhere
_RUSAGE_THREAD: int | None = getattr(resource, "RUSAGE_THREAD", None)
