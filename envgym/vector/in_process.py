"""Workers in the vector env's own process: ``workers="sync"`` and ``"remote"``.

`SyncWorkers` steps every chunk in turn on the caller's thread. `ThreadWorkers`
gives each call its own thread, for envs whose work happens elsewhere (a
`RemoteEnv` waiting on its server): they wait at the same time, and one that
hangs can be abandoned at the step timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from envgym.vector.chunk import EnvChunk
from envgym.vector.workers import LostWorker, Workers

__all__ = ["SyncWorkers", "ThreadWorkers"]


class SyncWorkers(Workers):
    """Each chunk an `EnvChunk` in this process, answering as it is sent to."""

    def __init__(self, chunks: list[list[Callable[[], gym.Env]]]) -> None:
        super().__init__(chunks)
        self.workers: list[EnvChunk | None] = [None] * len(chunks)
        self.answers: dict[int, Any] = {}

    def start(self, w: int) -> None:
        self.workers[w] = EnvChunk(self.chunks[w])

    def send(self, w: int, message: tuple[Any, ...]) -> None:
        worker = self.workers[w]
        assert worker is not None
        self.answers[w] = worker.handle(message)

    def gather(self, ws: list[int], timeout_s: float | None) -> dict[int, Any]:
        return {w: self.answers.pop(w) for w in ws}

    def stop(self, w: int) -> None:
        worker, self.workers[w] = self.workers[w], None
        if worker is not None:
            worker.close()

    def close(self) -> None:
        for w in range(len(self.workers)):
            self.stop(w)


class ThreadWorkers(SyncWorkers):
    """One thread per call, so a step stuck on I/O can be abandoned at the timeout."""

    def __init__(self, chunks: list[list[Callable[[], gym.Env]]]) -> None:
        super().__init__(chunks)
        self.calls: dict[int, tuple[threading.Thread, dict[str, Any]]] = {}

    def send(self, w: int, message: tuple[Any, ...]) -> None:
        worker = self.workers[w]
        assert worker is not None
        box: dict[str, Any] = {}

        def run() -> None:
            box["answer"] = worker.handle(message)

        thread = threading.Thread(target=run, daemon=True, name=f"envgym-env-{w}")
        self.calls[w] = (thread, box)
        thread.start()

    def gather(self, ws: list[int], timeout_s: float | None) -> dict[int, Any]:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        out: dict[int, Any] = {}
        for w in ws:
            thread, box = self.calls.pop(w)
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                out[w] = LostWorker(f"the env gave no answer within {timeout_s} s")
            else:
                out[w] = box.get("answer", LostWorker("the env's thread died"))
        return out

    def stop(self, w: int) -> None:
        # A thread cannot be killed: drop the env and let its thread finish (or not)
        # on its own; close the env in the background in case it holds a socket.
        worker, self.workers[w] = self.workers[w], None
        self.calls.pop(w, None)
        if worker is not None:
            threading.Thread(target=worker.close, daemon=True).start()
