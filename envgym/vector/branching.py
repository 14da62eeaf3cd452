"""`TextVectorEnv.branch`: copy one env's episode into other envs of the batch.

The env's own ``snapshot()`` runs where the source env lives and its
``restore(snapshot)`` where each target lives (the snapshot is pickled
across processes and Ray actors), so branching works on every worker kind;
then the vector env's bookkeeping for the source (last observation, info,
episode seed and count) is copied to the targets. Tree rollouts (ARPO,
TreeRL) and search build on it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from envgym.vector.workers import LostWorker

__all__ = ["branch_slots", "branch_targets"]


def branch_targets(i: int, k: int | Sequence[int], num_envs: int) -> list[int]:
    """The slots ``branch(i, k)`` writes to: for an int ``k``, the ``k`` slots
    after ``i`` wrapping over the batch (``i+1, ..., i+k`` modulo ``num_envs``;
    inside ``i``'s group whenever the group has room after ``i``); for a
    sequence, those slots. Raises with what to pass instead."""
    if isinstance(i, bool) or not isinstance(i, int | np.integer) or not 0 <= i < num_envs:
        raise IndexError(f"branch() source must be an env index in 0..{num_envs - 1}, got {i!r}")
    i = int(i)
    if isinstance(k, int | np.integer) and not isinstance(k, bool):
        if not 1 <= k < num_envs:
            raise ValueError(
                f"branch({i}, k) takes k in 1..{num_envs - 1} (the batch has {num_envs} envs "
                f"and the source is one of them), got k={int(k)}"
            )
        return [(i + j) % num_envs for j in range(1, int(k) + 1)]
    if isinstance(k, np.ndarray) and k.ndim == 1:
        k = k.tolist()
    if isinstance(k, str | bytes) or not isinstance(k, Sequence):
        raise TypeError(
            f"branch({i}, k) takes an int (how many slots after {i}) or a sequence of env "
            f"indices, got {k!r}"
        )
    targets = []
    for t in k:
        if isinstance(t, bool) or not isinstance(t, int | np.integer) or not 0 <= t < num_envs:
            raise IndexError(
                f"branch() targets must be env indices in 0..{num_envs - 1}, got {t!r}"
            )
        if int(t) == i:
            raise ValueError(
                f"branch({i}, {list(k)}) names the source {i} as a target; leave it out"
            )
        if int(t) in targets:
            raise ValueError(f"branch({i}, {list(k)}) names slot {int(t)} twice; name each once")
        targets.append(int(t))
    if not targets:
        raise ValueError(f"branch({i}, []) names no target; pass at least one env index")
    return targets


def branch_slots(envs: Any, i: int, k: int | Sequence[int]) -> list[int]:
    """Put the targets of ``(i, k)`` (`branch_targets`) of ``envs``, a
    `TextVectorEnv`, into copies of env ``i``'s current state, env and
    bookkeeping alike; returns the targets."""
    envs._check_open()
    targets = branch_targets(i, k, envs.num_envs)
    i = int(i)
    if envs._needs_reset:
        raise RuntimeError("call reset() on the vector env before branch(): no episode is running")
    if envs._queue is not None:
        raise ValueError(
            "branch() does not work in task-queue mode (reset(queue=...)): the queue plays "
            "each seed once; reset with seed= to branch"
        )
    if not envs.active[i]:
        raise ValueError(f"env {i} is idle (no episode running); branch from an active env")

    w, k_source = envs._where[i]
    envs._workers.send(w, ("snapshot", k_source))
    answer = envs._workers.gather([w], envs.step_timeout_s)[w]
    if isinstance(answer, LostWorker):  # its envs come back fresh, with no episode
        envs._needs_reset = True
    snapshot = envs._unwrap(w, answer, "snapshot")

    by_worker: dict[int, list[int]] = {}
    for t in targets:
        tw, tk = envs._where[t]
        by_worker.setdefault(tw, []).append(tk)
    ws = sorted(by_worker)
    for tw in ws:
        envs._workers.send(tw, ("restore", by_worker[tw], snapshot))
    answers = envs._workers.gather(ws, envs.step_timeout_s)
    if envs.workers == "remote":
        # A RemoteEnv's snapshot is a handle holding room on its server (under its
        # --max-snapshots); once restored everywhere it is let go.
        envs._workers.send(w, ("release", k_source, snapshot))
        envs._workers.gather([w], envs.step_timeout_s)
    failed = None
    for tw in ws:
        if isinstance(answers[tw], LostWorker) or answers[tw][0] == "raise":
            # A target may be half restored: the batch's state is unknown.
            envs._needs_reset = True
            try:
                envs._unwrap(tw, answers[tw], "restore")
            except BaseException as exc:
                failed = failed or exc
    if failed is not None:
        raise failed

    for t in targets:
        envs._last_obs[t] = envs._last_obs[i]
        envs._infos[t] = copy.deepcopy(envs._infos[i])
        envs._final_infos[t] = None  # the abandoned episode ends silently
        envs.active[t] = True
        envs.episode_seeds[t] = envs.episode_seeds[i]
        envs.episode_counts[t] = envs.episode_counts[i]
        # Afterwards the target goes on with its own group's tasks, aligned by count.
        envs._next_seeds[t] = envs._seed_of(t, int(envs.episode_counts[t]) + 1)
    return targets
