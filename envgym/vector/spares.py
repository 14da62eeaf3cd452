"""Prefetching: a spare env per env, reset ahead to that env's next episode seed.

A worker with ``prefetch=True`` resets spares while it waits for the next
message (the trainer generating, or a slower worker finishing), and the step
that ends an episode swaps the ready spare in instead of resetting there, so
resets leave the step's critical path. Results are identical to resetting in
place, for envs whose ``reset(seed)`` does not depend on earlier episodes; an
env reset with ``options`` may differ from a fresh copy, so it gets no spare.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

__all__ = ["Spare", "Spares"]


@dataclass
class Spare:
    """A spare env and the first observation and info of its reset."""

    seed: int | None  # None once swapped in: the env needs a new reset
    env: gym.Env
    obs: Any
    info: dict[str, Any]


class Spares:
    """The spare envs of one `EnvChunk`, one slot per env of the chunk."""

    def __init__(self, factories: Sequence[Callable[[], gym.Env]]) -> None:
        self.factories = list(factories)
        n = len(self.factories)
        #: The seed each env's next episode starts on, or None while unknown;
        #: the chunk sets it on every reset and step (the parent's messages say it).
        self.next_seeds: list[int | None] = [None] * n
        self.slots: list[Spare | None] = [None] * n
        # An env that reset with options may differ from a fresh one: no spare for it.
        self.plain = [True] * n
        self._cursor = 0

    def exclude(self, k: int) -> None:
        """Give env `k` no spare from now on: it was reset with options, or its
        spare failed to reset."""
        self.plain[k] = False
        self.drop(k)

    def swap_in(
        self, k: int, env: gym.Env, seed: int
    ) -> tuple[gym.Env, Any, dict[str, Any]] | None:
        """``(spare env, obs, info)`` if env `k`'s spare is already reset to
        `seed`, and the finished `env` becomes the spare, to be reset ahead
        again; None if the caller must reset `env` itself."""
        # The seed after this one is unknown until the parent's next message says it.
        self.next_seeds[k] = None
        spare = self.slots[k]
        if spare is None or spare.seed != seed:
            return None
        swapped = spare.env, spare.obs, spare.info
        spare.env, spare.seed = env, None
        return swapped

    def prefetch_one(self) -> bool:
        """Reset one spare ahead to its env's next episode seed; False when
        every spare is ready."""
        n = len(self.slots)
        for step in range(n):
            k = (self._cursor + step) % n
            seed = self.next_seeds[k]
            spare = self.slots[k]
            if seed is None or not self.plain[k] or (spare is not None and spare.seed == seed):
                continue
            self._cursor = (k + 1) % n
            try:
                env = spare.env if spare is not None else self.factories[k]()
                obs, info = env.reset(seed=seed)
            except Exception:
                # The normal autoreset path will meet (and report) the same failure.
                self.exclude(k)
                return True
            self.slots[k] = Spare(seed, env, obs, info)
            return True
        return False

    def drop(self, k: int) -> None:
        spare, self.slots[k] = self.slots[k], None
        if spare is not None:
            try:
                spare.env.close()
            except Exception:
                pass

    def close(self) -> None:
        for k in range(len(self.slots)):
            self.drop(k)
