"""SessionPool: started sessions kept warm, so an episode's reset takes one at once.

::

    with SessionPool(backend="bwrap", limits=SessionLimits(), size=4) as pool:
        session = pool.take(files=tree)      # a fresh started session holding `tree`
        ...
        session.close()                      # a taken session is never handed out again

Background threads start sessions until ``size`` wait ready; `take` pops one
(or, when none is ready, waits for the next), puts the episode's files in it
and the threads start a replacement. A session is handed out once: nothing
of one episode (files, variables, processes) can reach another's.
"""

from __future__ import annotations

import collections
import threading
import time

from envgym.sandbox.backends import gc, resolve_backend
from envgym.sandbox.base import SandboxError
from envgym.sandbox.session import (
    Session,
    SessionError,
    SessionLimits,
    open_session,
    tree_of,
)

__all__ = ["SessionPool"]

#: Seconds a refill thread waits after a session failed to start, before it tries again.
RETRY_S = 1.0


class SessionPool:
    """``size`` warm sessions of one backend, each handed out once by `take`."""

    def __init__(
        self,
        backend: str = "auto",
        limits: SessionLimits | None = None,
        size: int = 4,
        starters: int | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"SessionPool size must be at least 1, got {size}")
        self.backend = resolve_backend(backend)
        if self.backend == "process":
            raise ValueError("sessions need an isolating backend: use 'docker' or 'bwrap'")
        if self.backend == "docker":
            gc(only_dead_owners=True)
        self.limits = limits or SessionLimits()
        self.size = size
        self._ready: collections.deque[Session] = collections.deque()
        self._starting = 0
        self._closed = False
        self._error: BaseException | None = None
        self._cond = threading.Condition()
        self._threads = [
            threading.Thread(target=self._refill, name=f"envgym-session-pool-{i}", daemon=True)
            for i in range(starters or min(size, 4))
        ]
        for thread in self._threads:
            thread.start()

    def _refill(self) -> None:
        while True:
            with self._cond:
                while not self._closed and len(self._ready) + self._starting >= self.size:
                    self._cond.wait()
                if self._closed:
                    return
                self._starting += 1
            session = error = None
            try:
                session = open_session(self.backend, self.limits)
            except BaseException as exc:  # told to the next take
                error = exc
            with self._cond:
                self._starting -= 1
                if session is not None and not self._closed:
                    self._ready.append(session)
                    self._error = None
                elif error is not None:
                    self._error = error
                self._cond.notify_all()
            if session is not None and self._closed:
                session.close()
            if error is not None:
                time.sleep(RETRY_S)

    def take(
        self, files: bytes | dict[str, str | bytes] | None = None, timeout_s: float = 120.0
    ) -> Session:
        """A started session no one has used, holding ``files`` (a tar archive
        of the work directory, or relative name -> content) in /work.

        A waiting session can die before it is taken (its container removed
        by ``envgym sandbox gc``, its process killed): loading the files, or an
        empty tree, is one round trip that proves it alive, and a dead one is
        dropped for the next."""
        deadline = time.monotonic() + timeout_s
        tree = tree_of(files) if isinstance(files, dict) else files or tree_of({})
        while True:
            with self._cond:
                while not self._ready:
                    if self._closed:
                        raise SandboxError("this SessionPool is closed")
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        why = f": the last start failed: {self._error}" if self._error else ""
                        raise SandboxError(f"no session started in {timeout_s:g} s{why}")
                    self._cond.wait(min(remaining, 1.0))
                session = self._ready.popleft()
                self._cond.notify_all()
            try:
                session.restore(tree)
            except SessionError:
                continue  # it died while it waited (restore closed it): the next one
            except BaseException:
                session.close()
                raise
            return session

    @property
    def ready(self) -> int:
        """How many started sessions wait to be taken."""
        with self._cond:
            return len(self._ready)

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Block until all ``size`` sessions are started (a benchmark's warm-up)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while len(self._ready) < self.size and time.monotonic() < deadline:
                self._cond.wait(min(1.0, max(0.0, deadline - time.monotonic())))

    def close(self) -> None:
        """Close every session not yet taken; taken ones are their taker's to close."""
        with self._cond:
            self._closed = True
            waiting = list(self._ready)
            self._ready.clear()
            self._cond.notify_all()
        for session in waiting:
            session.close()
        for thread in self._threads:
            thread.join(timeout=90)

    def __enter__(self) -> SessionPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
