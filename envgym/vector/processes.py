"""Worker processes for ``workers="subprocess"``: one `EnvChunk` per process.

Messages travel pickled over a pipe per worker; there is no shared memory,
since text does not fit fixed buffers. A worker that dies or does not answer
in time comes back from `SubprocessWorkers.gather` as a `LostWorker` saying
why (the signal that killed it, its exit code, or the timeout).
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any

import cloudpickle
import gymnasium as gym

from envgym.registry import register_envs
from envgym.vector.chunk import EnvChunk, RaisedInWorker, describe_error
from envgym.vector.workers import LostWorker, Workers

__all__ = ["SubprocessWorkers"]

#: How long close() waits for a worker to exit on its own before killing it.
CLOSE_GRACE_S = 5.0


def _subprocess_main(conn: Connection, payload: bytes, prefetch: bool = False) -> None:
    # Ctrl-C goes to the whole process group; the parent decides when to stop us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        # A fresh process knows no envgym ids until they are registered, and
        # factories such as ``lambda: gym.make("envgym/...")`` need them.
        register_envs()
        chunk = EnvChunk(cloudpickle.loads(payload), prefetch=prefetch)
    except Exception as exc:
        conn.send(("raise", RaisedInWorker(exc)))
        return
    conn.send(("ok", None))
    while True:
        try:
            # Waiting for the parent (the trainer generating, or a slower worker):
            # reset spares ahead, one env at a time, until a message comes.
            while not conn.poll() and chunk.prefetch_one():
                pass
            message = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            chunk.close()
            return
        answer = chunk.handle(message)
        try:
            conn.send(answer)
        except (BrokenPipeError, OSError):
            chunk.close()
            return
        if message[0] == "close":
            return


class SubprocessWorkers(Workers):
    """One process per chunk, started with `start_method` (default forkserver)."""

    def __init__(
        self,
        chunks: list[list[Callable[[], gym.Env]]],
        start_method: str | None,
        start_timeout_s: float | None,
        prefetch: bool = False,
    ) -> None:
        super().__init__(chunks)
        self.prefetch = prefetch
        methods = multiprocessing.get_all_start_methods()
        if start_method is None:
            # forkserver: children fork from a clean helper that has already
            # imported this module (and so envgym), so (re)starts are fast and
            # never copy the trainer's threads.
            start_method = "forkserver" if "forkserver" in methods else "spawn"
        self.ctx = multiprocessing.get_context(start_method)
        if start_method == "forkserver":
            self.ctx.set_forkserver_preload([__name__])
        self.start_timeout_s = start_timeout_s
        self.procs: list[Any] = [None] * len(chunks)
        self.conns: list[Connection | None] = [None] * len(chunks)
        self.lost: dict[int, LostWorker] = {}

    def start(self, w: int) -> None:
        ours, theirs = self.ctx.Pipe(duplex=True)
        payload = cloudpickle.dumps(self.chunks[w])
        proc = self.ctx.Process(
            target=_subprocess_main,
            args=(theirs, payload, self.prefetch),
            daemon=True,
            name=f"envgym-worker-{w}",
        )
        proc.start()
        theirs.close()
        self.procs[w], self.conns[w] = proc, ours
        self.lost.pop(w, None)
        answer = self.gather([w], self.start_timeout_s, waiting_for="it to start")[w]
        if isinstance(answer, LostWorker):
            self.stop(w)
            raise RuntimeError(
                f"env worker {w} did not start: {answer.reason}. Its error is printed above. "
                f"The {self.ctx.get_start_method()!r} start method re-imports the main "
                "module in each worker: a script must build the vector env under "
                "`if __name__ == '__main__':`"
            )
        if answer[0] == "raise":
            self.stop(w)
            raise answer[1].exception()

    def send(self, w: int, message: tuple[Any, ...]) -> None:
        conn = self.conns[w]
        assert conn is not None
        try:
            conn.send(message)
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            reason = self._death(w, f"could not send to it ({describe_error(exc)})")
            self.lost[w] = LostWorker(reason)

    def _death(self, w: int, fallback: str) -> str:
        proc = self.procs[w]
        proc.join(0.5)
        code = proc.exitcode
        if code is None:
            return f"worker process {proc.pid} {fallback}"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"worker process {proc.pid} was killed by {name}"
        return f"worker process {proc.pid} exited with code {code}"

    def gather(
        self, ws: list[int], timeout_s: float | None, waiting_for: str = "an answer"
    ) -> dict[int, Any]:
        out: dict[int, Any] = {w: self.lost.pop(w) for w in ws if w in self.lost}
        pending = {w: self.conns[w] for w in ws if w not in out}
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            by_handle: dict[Any, int] = {}
            for w, conn in pending.items():
                by_handle[conn] = by_handle[self.procs[w].sentinel] = w
            ready = wait(list(by_handle), timeout=left)
            if not ready:
                for w in pending:
                    out[w] = LostWorker(
                        f"worker process {self.procs[w].pid} gave no answer within "
                        f"{timeout_s} s (waiting for {waiting_for})"
                    )
                break
            for w in {by_handle[item] for item in ready}:
                conn = pending.pop(w)
                # A dead worker's pipe reads as EOF; one that answered and then died
                # still has its answer in the pipe.
                try:
                    out[w] = conn.recv() if conn.poll() else LostWorker(self._death(w, "died"))
                except (EOFError, OSError):
                    out[w] = LostWorker(self._death(w, "closed its pipe"))
        return out

    def stop(self, w: int) -> None:
        proc, conn = self.procs[w], self.conns[w]
        self.procs[w] = self.conns[w] = None
        if conn is not None:
            conn.close()
        if proc is not None:
            if proc.is_alive():
                proc.kill()
            proc.join(5)

    def close(self) -> None:
        live = [w for w, c in enumerate(self.conns) if c is not None]
        for w in live:
            self.send(w, ("close",))
        self.gather(live, CLOSE_GRACE_S)
        for w in live:
            self.stop(w)

    def pids(self) -> list[int]:
        return [proc.pid if proc is not None else -1 for proc in self.procs]
