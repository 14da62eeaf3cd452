"""The worker interface: what a kind of worker implements for `TextVectorEnv`.

A vector env splits its envs into contiguous chunks and gives each chunk to a
worker. `Workers` is the vector env's side of all of them; the worker at the
other end holds an `EnvChunk` and answers each message with
``chunk.handle(message)``. A new worker kind subclasses `Workers`:

- ``start(w)``: build worker `w` (and its envs) from ``self.chunks[w]``;
  raise if it cannot start.
- ``send(w, message)``: hand worker `w` a message without waiting.
- ``gather(ws, timeout_s)``: each worker's answer to its last message, as
  `EnvChunk.handle` returned it, or a `LostWorker` where none came (the
  worker died, or `timeout_s` passed). ``gather`` itself never raises for a
  lost worker: the vector env decides what to do.
- ``stop(w)``: tear worker `w` down at once; ``close()``: stop them all,
  giving each a chance to close its envs.
- ``pids()`` (optional): each worker's process id.

The vector env sends every worker its message before gathering any answer,
so workers that run elsewhere step at the same time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym

__all__ = ["LostWorker", "Workers"]


class LostWorker:
    """Stands in for the answer of a worker that did not answer: it died, or it
    ran past the timeout. `reason` says which, for ``infos["error"]``."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"LostWorker({self.reason!r})"


class Workers:
    """The vector env's side of a set of workers, one chunk of envs each.

    ``chunks[w]`` is the list of env factories worker `w` holds; see the module
    docstring for what each method must do.
    """

    def __init__(self, chunks: list[list[Callable[[], gym.Env]]]) -> None:
        self.chunks = chunks

    def start(self, w: int) -> None:
        """Start worker `w` with the envs of ``chunks[w]``."""
        raise NotImplementedError

    def send(self, w: int, message: tuple[Any, ...]) -> None:
        """Hand worker `w` a message for its `EnvChunk`; do not wait for the answer."""
        raise NotImplementedError

    def gather(self, ws: list[int], timeout_s: float | None) -> dict[int, Any]:
        """Each worker's answer to its last message, or a `LostWorker`."""
        raise NotImplementedError

    def stop(self, w: int) -> None:
        """Tear worker `w` down at once (it is lost or being replaced)."""

    def close(self) -> None:
        """Stop every worker, letting each close its envs first."""
        raise NotImplementedError

    def pids(self) -> list[int]:
        """The process id of each worker."""
        return [os.getpid()] * len(self.chunks)

    def restart(self, w: int) -> None:
        """Replace worker `w` with a fresh one holding the same envs."""
        self.stop(w)
        self.start(w)
