"""SandboxPool: warm sandboxes leased to many envs at once.

Sandboxes start ahead of use (in parallel), a lease hands one out for any
number of jobs, and every job starts in an emptied work directory, so envs
sharing a pool never see each other's files. A sandbox that dies or
misbehaves is replaced by the sandbox itself before its next job.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from envgym.sandbox.base import ExecResult, Limits, RunnerSandbox, SandboxError


class SandboxPool:
    """``size`` warm sandboxes of one backend.

    >>> with SandboxPool(size=4, backend="docker") as pool:      # doctest: +SKIP
    ...     r = pool.run("print(1)")                              # any free sandbox
    ...     with pool.lease() as box:                             # one sandbox, many jobs
    ...         box.run("open('a', 'w').write('x')"); box.run("print(open('a').read())")
    """

    def __init__(
        self,
        size: int = 4,
        backend: str = "auto",
        limits: Limits | None = None,
        lease_timeout_s: float = 300.0,
        **backend_kwargs,
    ) -> None:
        from envgym.sandbox.backends import make_sandbox, resolve_backend

        if size < 1:
            raise ValueError(f"SandboxPool size must be at least 1, got {size}")
        self.backend = resolve_backend(backend)
        if self.backend == "docker":
            from envgym.sandbox.backends import gc

            gc(only_dead_owners=True)
        self.size = size
        self.lease_timeout_s = lease_timeout_s
        factory: Callable[[], RunnerSandbox] = lambda: make_sandbox(  # noqa: E731
            self.backend, limits=limits, **backend_kwargs
        )
        self._all: list[RunnerSandbox] = [factory() for _ in range(size)]
        with ThreadPoolExecutor(max_workers=min(size, 8)) as ex:
            list(ex.map(lambda box: box.start(), self._all))
        self._free: queue.Queue[RunnerSandbox] = queue.Queue()
        for box in self._all:
            self._free.put(box)
        self._closed = False
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def lease(self, timeout_s: float | None = None) -> Iterator[RunnerSandbox]:
        if self._closed:
            raise SandboxError("this SandboxPool is closed")
        wait = self.lease_timeout_s if timeout_s is None else timeout_s
        try:
            box = self._free.get(timeout=wait)
        except queue.Empty:
            raise SandboxError(
                f"no sandbox free after {wait:.0f} s: all {self.size} are leased; "
                "make the pool bigger or return leases sooner"
            ) from None
        try:
            yield box
        finally:
            self._free.put(box)

    def run(self, code: str, **kwargs) -> ExecResult:
        """Run one job on any free sandbox."""
        with self.lease() as box:
            return box.run(code, **kwargs)

    @property
    def restarts(self) -> int:
        return sum(box.restarts for box in self._all)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with ThreadPoolExecutor(max_workers=min(self.size, 8)) as ex:
            list(ex.map(lambda box: box.close(), self._all))

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: Sandboxes in the pool that envs running code share when given none.
SHARED_POOL_SIZE = 4
_shared: tuple[int, SandboxPool] | None = None
_shared_lock = threading.Lock()


def shared_pool() -> SandboxPool:
    """The one pool (backend "auto", `SHARED_POOL_SIZE` sandboxes) that every
    env of this process which runs code uses when it is given none, started on
    first use; a forked child starts its own rather than use its parent's."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared[0] != os.getpid() or _shared[1]._closed:
            _shared = (os.getpid(), SandboxPool(size=SHARED_POOL_SIZE, backend="auto"))
        return _shared[1]


#: The function schema (OpenAI style, for ``info["tools"]``) of one Python run
#: in a pool's sandbox, shared by every env that lets the agent run code.
RUN_PYTHON_TOOL: dict = {
    "type": "function",
    "function": {
        "name": "run_python",
        "description": (
            "Run a Python 3 program in a sandbox (no network, a fresh empty folder each run). "
            "Returns its exit status, stdout and stderr inside <output>...</output>."
        ),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The whole program."}},
            "required": ["code"],
        },
    },
}
