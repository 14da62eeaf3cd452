"""Which seed each env of a `TextVectorEnv` plays: the seed rules and the task queue.

`first_seeds` reads ``reset(seed=...)`` (an int, one seed per env, or None),
`episode_seed` derives the seeds of later episodes, and `SeedQueue` is the
task-queue mode.

``reset(queue=...)`` gives each env source (an entry of the vector env's
``envs`` list; with ``env_fns``, each env) a list of seeds to play, each once.
Every env starts on the next seed of its source's queue, and an env whose
episode ends takes the next one left; an env that finds its queue empty goes
idle. So N seeds on k envs need no bookkeeping by the caller, and each seed is
played exactly once whatever order the episodes end in.

The autoreset happens in the worker, in the same step that ends an episode, so
every running env is offered a seed before each step: the running envs of a
source, in index order, are offered the first seeds left in its queue, and
only the seeds of the episodes that did end are taken out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["SeedQueue", "episode_seed", "first_seeds", "is_seed"]


def episode_seed(first_seed: int, episode: int) -> int:
    """The seed of an env's `episode`-th episode (0 is the seed reset gave it)."""
    if episode == 0:
        return first_seed
    return int(np.random.SeedSequence([first_seed, episode]).generate_state(1)[0])


def first_seeds(
    seed: Any, num_envs: int, group_index: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Each env's first seed for ``reset(seed=...)``: `seed` is an int (group
    ``g`` starts on ``seed + g``), one seed per env, or None (one fresh seed per
    group from `rng`)."""
    num_groups = int(group_index[-1]) + 1
    if seed is None:
        return rng.integers(0, 2**31, size=num_groups)[group_index]
    if isinstance(seed, Sequence | np.ndarray) and not isinstance(seed, str | bytes):
        seeds = list(seed)
        if len(seeds) != num_envs or not all(is_seed(s) for s in seeds):
            raise TypeError(
                f"seed as a list needs one non-negative int per env ({num_envs}), got {seed!r}"
            )
        return np.array([int(s) for s in seeds], dtype=np.int64)
    if not is_seed(seed):
        raise TypeError(
            "seed must be a non-negative int (group g gets seed + g) or a list of one "
            f"per env, got {seed!r}"
        )
    return (int(seed) + np.arange(num_groups, dtype=np.int64))[group_index]


class SeedQueue:
    """Seeds left to play, one list per env source."""

    def __init__(self, queues: Sequence[Sequence[int]], sources: Sequence[int]) -> None:
        self.sources = list(sources)
        self.left = [list(q) for q in queues]
        self._offers: dict[int, tuple[int, int]] = {}

    @classmethod
    def checked(
        cls, queue: Sequence[int] | Sequence[Sequence[int]], sources: Sequence[int]
    ) -> SeedQueue:
        """A queue from ``reset(queue=...)``: one list of seeds, shared by every
        env when there is one source, or one list per source."""
        if isinstance(queue, str | bytes) or not isinstance(queue, Sequence | np.ndarray):
            raise TypeError(
                f"queue must be a list of seeds (or one list per env source), got {queue!r}"
            )
        count = max(sources) + 1
        items = list(queue)
        if items and all(is_seed(s) for s in items):
            if count != 1:
                raise ValueError(
                    f"this vector env runs {count} env sources; pass queue as one list of "
                    "seeds per source (queue[s] for the envs running envs[s])"
                )
            queues = [items]
        else:
            queues = [list(q) if isinstance(q, Sequence | np.ndarray) else q for q in items]
            if len(queues) != count or not all(
                isinstance(q, list) and all(is_seed(s) for s in q) for q in queues
            ):
                raise ValueError(
                    f"queue must hold one list of non-negative int seeds per env source "
                    f"({count} here), got {queue!r}"
                )
        return cls([[int(s) for s in q] for q in queues], sources)

    def take(self, i: int) -> int | None:
        """The next seed for env `i` (taken out of its queue), or None: none is left."""
        left = self.left[self.sources[i]]
        return left.pop(0) if left else None

    def offer(self, running: Sequence[int]) -> dict[int, int | None]:
        """The seed each running env starts if its episode ends in this step."""
        self._offers = {}
        rank = [0] * len(self.left)
        out: dict[int, int | None] = {}
        for i in running:
            s = self.sources[i]
            if rank[s] < len(self.left[s]):
                self._offers[i] = (s, rank[s])
                out[i] = self.left[s][rank[s]]
                rank[s] += 1
            else:
                out[i] = None
        return out

    def taken(self, ended: Sequence[int]) -> None:
        """Take out the seeds offered to the envs whose episodes `ended`."""
        gone = sorted((self._offers[i] for i in ended if i in self._offers), reverse=True)
        for s, position in gone:
            del self.left[s][position]
        self._offers = {}

    def remaining(self) -> int:
        return sum(len(q) for q in self.left)


def is_seed(value: object) -> bool:
    """True for a non-negative int (numpy ints included), the seeds Gymnasium takes."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= 0
