"""`EnvThreads`: the threads an env server runs env calls on, off its event loop.

Env calls (make, reset, step, close) may take microseconds or minutes; the
event loop that serves every session must never wait for one. This pool keeps
as few threads as keep every call moving (see `EnvThreads`).
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["EnvThreads"]


class EnvThreads:
    """The threads that run env calls off the event loop: as few as keep every call moving.

    Calls wait in one queue. When one has waited `SPAWN_AFTER_S` while every
    thread is at least that long into a call (a sandbox run, a slow search, a
    stuck env), a new thread starts, so a slow env never holds up another
    session's calls for longer than that. A fast env (a step in microseconds)
    stays on one thread: handing a call to a thread that is awake costs
    little, waking a thread per session per call costs a lot (and threads only
    take turns at the GIL). Threads idle for `IDLE_THREAD_S` end, but for one.
    They are daemon threads, so a call that never returns cannot keep the
    process alive once the server has stopped.

    A call given up on (`abandon`) keeps its thread until it returns; then the
    callback given to `when_returned`, if any, runs.
    """

    SPAWN_AFTER_S = 0.005
    IDLE_THREAD_S = 60.0

    def __init__(self, loop: asyncio.AbstractEventLoop, most: int) -> None:
        self._loop = loop
        #: threads at most, not counting those held by abandoned calls
        self._most = most
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._given = 0
        self._taken = 0
        #: when each busy thread began its call (thread id -> time.monotonic())
        self._busy_since: dict[int, float] = {}
        self._check: asyncio.TimerHandle | None = None
        #: calls given up on that still run, and what to do once each returns
        self._abandoned: dict[asyncio.Future[Any], Callable[[], None] | None] = {}

    @property
    def abandoned(self) -> int:
        """Calls given up on that have not returned yet."""
        return len(self._abandoned)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
        """Run ``fn(*args, **kwargs)`` on a thread; its result, as a future of the loop."""
        future = self._loop.create_future()
        self._jobs.put((future, fn, args, kwargs))
        self._given += 1
        if self._threads == 0:
            self._spawn()
        if self._check is None:
            self._check = self._loop.call_later(
                self.SPAWN_AFTER_S, self._spawn_if_stalled, self._given
            )
        return future

    def abandon(self, future: asyncio.Future[Any]) -> None:
        """`future`'s call runs on, but nobody waits for it any more."""
        self._abandoned[future] = None

    def when_returned(self, future: asyncio.Future[Any], then: Callable[[], None]) -> bool:
        """Call `then` once an abandoned call returns; False if it has returned already."""
        if future not in self._abandoned:
            return False
        self._abandoned[future] = then
        return True

    def stop(self) -> None:
        """End every thread once it is done with the calls already given."""
        for _ in range(self._threads):
            self._jobs.put(None)

    # ------------------------------------------------------------ the loop's side
    def _spawn_if_stalled(self, given: int) -> None:
        """Start a thread if a call given `SPAWN_AFTER_S` ago waits behind slow calls only."""
        self._check = None
        if self._taken < given and self._threads - len(self._abandoned) < self._most:
            started = list(self._busy_since.values())
            all_busy = len(started) >= self._threads
            if all_busy and time.monotonic() - max(started, default=0.0) >= self.SPAWN_AFTER_S:
                self._spawn()
        if self._taken < self._given:
            self._check = self._loop.call_later(
                self.SPAWN_AFTER_S, self._spawn_if_stalled, self._given
            )

    def _spawn(self) -> None:
        with self._lock:
            self._threads += 1
        threading.Thread(target=self._work, name="envgym-env", daemon=True).start()

    def _settle(
        self, future: asyncio.Future[Any], result: Any, error: BaseException | None
    ) -> None:
        if future.done():  # given up on: past its deadline, or its session was cancelled
            then = self._abandoned.pop(future, None)
            if then is not None:
                then()
        elif error is None:
            future.set_result(result)
        else:
            future.set_exception(error)

    # ---------------------------------------------------------- the threads' side
    def _work(self) -> None:
        me = threading.get_ident()
        while True:
            try:
                job = self._jobs.get(timeout=self.IDLE_THREAD_S)
            except queue.Empty:
                with self._lock:
                    if self._threads == 1:
                        continue  # the last thread stays
                    self._threads -= 1
                    return
            if job is None:
                with self._lock:
                    self._threads -= 1
                return
            with self._lock:
                self._taken += 1
            future, fn, args, kwargs = job
            self._busy_since[me] = time.monotonic()
            try:
                result, error = fn(*args, **kwargs), None
            except BaseException as exc:
                result, error = None, exc
            del self._busy_since[me]
            try:
                self._loop.call_soon_threadsafe(self._settle, future, result, error)
            except RuntimeError:
                pass  # the loop is closed: the server stopped and nobody waits
