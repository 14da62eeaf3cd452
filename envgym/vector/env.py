"""`TextVectorEnv` and `make_vec`: the batch a trainer steps.

The rules it keeps (groups, seeds, same-step autoreset, what a lost worker
costs) are in the `envgym.vector` package docstring. This module holds the
bookkeeping on the caller's side; the envs themselves live in workers
(`envgym.vector.workers`), each holding an `EnvChunk`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_differing_spaces, batch_space

from envgym.extras import missing_extra
from envgym.vector.branching import branch_slots
from envgym.vector.in_process import SyncWorkers, ThreadWorkers
from envgym.vector.processes import SubprocessWorkers
from envgym.vector.seeds import SeedQueue, episode_seed, first_seeds
from envgym.vector.sources import EnvSource, env_factories
from envgym.vector.workers import LostWorker, Workers

__all__ = ["WORKER_KINDS", "TextVectorEnv", "make_vec"]

WORKER_KINDS = ("sync", "subprocess", "ray", "remote")


class TextVectorEnv(VectorEnv):
    """A batch of text envs with GRPO groups, same-step autoreset and several
    worker kinds; see the `envgym.vector` docstring for the rules.

    Args:
        envs: an env id, an ``(id, kwargs)`` pair, or a list of them for a
            multi-task batch: the list is repeated over the groups in order
            (group ``g`` runs ``envs[g % len(envs)]``), so every member of a group
            runs the same id. Leave it out when passing ``env_fns``.
        num_envs: envs in the batch (a multiple of ``group_size``). Default: one
            group per listed id, or ``len(env_fns)``.
        group_size: members per group, all given the same task on each reset.
        workers: ``"sync"``, ``"subprocess"``, ``"ray"`` or ``"remote"``.
        env_fns: one factory per env (``() -> gymnasium.Env``), instead of ids.
            Any env works; for ``"subprocess"`` and ``"ray"`` they must survive
            cloudpickle.
        env_kwargs: constructor kwargs added to every id's own kwargs.
        num_workers: processes or actors for ``"subprocess"``/``"ray"``
            (default: one per CPU, at most ``num_envs``); the envs are split
            into that many contiguous chunks.
        step_timeout_s: how long a step or reset may take before the worker is
            replaced and its episodes reported as errored (None: wait forever).
            Not enforced for ``"sync"``.
        start_timeout_s: how long a worker may take to start.
        start_method: multiprocessing start method for ``"subprocess"``
            (default ``"forkserver"``).
        ray_actor_options: options for the Ray actors (``num_cpus``,
            ``resources``, ``runtime_env``, ...).
        prefetch: ``"subprocess"`` only. Each worker keeps a spare copy of each
            env and, whenever it waits for the next step (while the trainer
            generates, or a slower worker finishes), resets the spare to that
            env's next episode seed; the step that ends an episode swaps it in
            instead of resetting there. Results are identical; resets leave the
            step's critical path. It doubles the envs in memory (and sessions,
            for envs that hold one), and suits only envs whose ``reset(seed)``
            does not depend on earlier episodes (no curriculum state): an env
            that was reset with ``options`` gets no spare.
    """

    def __init__(
        self,
        envs: EnvSource | Sequence[EnvSource] | None = None,
        num_envs: int | None = None,
        *,
        group_size: int = 1,
        workers: str = "sync",
        env_fns: Sequence[Callable[[], gym.Env]] | None = None,
        env_kwargs: dict[str, Any] | None = None,
        num_workers: int | None = None,
        step_timeout_s: float | None = 120.0,
        start_timeout_s: float | None = 120.0,
        start_method: str | None = None,
        ray_actor_options: dict[str, Any] | None = None,
        prefetch: bool = False,
    ) -> None:
        self.closed = True  # until the workers are up, close() has nothing to do
        if workers not in WORKER_KINDS:
            raise ValueError(
                f"unknown workers={workers!r}; choose one of {', '.join(map(repr, WORKER_KINDS))}"
            )
        if not isinstance(group_size, int) or group_size < 1:
            raise ValueError(f"group_size must be a positive integer, got {group_size!r}")
        if prefetch and workers != "subprocess":
            raise ValueError(
                f"prefetch=True needs workers='subprocess' (got workers={workers!r}): only a "
                "worker process has idle time of its own to reset envs ahead"
            )
        if num_envs is not None and (not isinstance(num_envs, int) or num_envs < 1):
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        factories, sources = env_factories(envs, env_fns, env_kwargs, num_envs, group_size)
        #: which entry of `envs` each env runs (with ``env_fns``: its own index)
        self.source_index = np.array(sources, dtype=np.int64)
        self.num_envs = len(factories)
        self.group_size = group_size
        self.num_groups = self.num_envs // group_size
        self.workers = workers
        self.step_timeout_s = step_timeout_s
        self.autoreset_mode = AutoresetMode.SAME_STEP

        if workers in ("sync", "remote"):
            count = 1 if workers == "sync" else self.num_envs
        elif num_workers is not None:
            if not isinstance(num_workers, int) or num_workers < 1:
                raise ValueError(f"num_workers must be a positive integer, got {num_workers!r}")
            count = min(num_workers, self.num_envs)
        else:
            count = min(self._default_workers(workers), self.num_envs)
        bounds = np.linspace(0, self.num_envs, count + 1).round().astype(int)
        chunks = [factories[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        #: (worker, index in its chunk) of each env
        self._where = [(w, k) for w, c in enumerate(chunks) for k in range(len(c))]

        if workers == "sync":
            self._workers: Workers = SyncWorkers(chunks)
        elif workers == "remote":
            self._workers = ThreadWorkers(chunks)
        elif workers == "subprocess":
            self._workers = SubprocessWorkers(chunks, start_method, start_timeout_s, prefetch)
        else:
            try:
                from envgym.vector.ray import RayWorkers
            except ModuleNotFoundError as exc:
                if exc.name != "ray":
                    raise
                raise missing_extra("ray", extra="ray", purpose="workers='ray'") from None
            self._workers = RayWorkers(chunks, ray_actor_options, start_timeout_s)
        self.closed = False
        try:
            for w in range(len(chunks)):
                self._workers.start(w)
            described = self._call_all(("describe",), start_timeout_s)
        except BaseException:
            self.close()
            raise
        self._set_spaces([d for w in range(len(chunks)) for d in described[w]])

        self.group_index = np.arange(self.num_envs) // group_size
        #: the seed of the episode each env is on, and how many episodes it began
        self.episode_seeds = np.zeros(self.num_envs, dtype=np.int64)
        self.episode_counts = np.zeros(self.num_envs, dtype=np.int64)
        #: which envs are running an episode (False only for idle envs in task-queue mode)
        self.active = np.ones(self.num_envs, dtype=np.bool_)
        self._next_seeds = np.zeros(self.num_envs, dtype=np.int64)
        self._first_seeds = np.zeros(self.num_envs, dtype=np.int64)
        self._queue: SeedQueue | None = None
        self._last_obs: list[str] = [""] * self.num_envs
        self._infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        self._final_infos: list[dict[str, Any] | None] = [None] * self.num_envs
        self._needs_reset = True

    # ----------------------------------------------------------- set-up
    @staticmethod
    def _default_workers(workers: str) -> int:
        if workers == "ray":
            import ray

            if ray.is_initialized():
                return max(1, int(ray.cluster_resources().get("CPU", 1)))
        return os.cpu_count() or 1

    def _set_spaces(self, described: list[dict[str, Any]]) -> None:
        first = described[0]
        self.metadata = {**first["metadata"], "autoreset_mode": AutoresetMode.SAME_STEP}
        self.render_mode = first["render_mode"]
        self.single_observation_space = first["observation_space"]
        self.single_action_space = first["action_space"]
        obs_spaces = [d["observation_space"] for d in described]
        act_spaces = [d["action_space"] for d in described]
        if all(s == self.single_observation_space for s in obs_spaces):
            self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        else:
            self.observation_space = batch_differing_spaces(obs_spaces)
        if all(s == self.single_action_space for s in act_spaces):
            self.action_space = batch_space(self.single_action_space, self.num_envs)
        else:
            self.action_space = batch_differing_spaces(act_spaces)
        self.env_ids = tuple(d["spec_id"] for d in described)

    # --------------------------------------------------------- messaging
    def _call_all(self, message: tuple[Any, ...], timeout_s: float | None) -> dict[int, Any]:
        """Send one message to every worker; raise if any fails."""
        ws = list(range(len(self._workers.chunks)))
        for w in ws:
            self._workers.send(w, message)
        answers = self._workers.gather(ws, timeout_s)
        out = {}
        for w in ws:
            out[w] = self._unwrap(w, answers[w], message[0])
        return out

    def _unwrap(self, w: int, answer: Any, what: str) -> Any:
        if isinstance(answer, LostWorker):
            self._workers.stop(w)
            self._workers.start(w)
            raise RuntimeError(
                f"env worker {w} failed during {what} ({answer.reason}); it was "
                "restarted, call reset() to start new episodes"
            )
        status, value = answer
        if status == "raise":
            raise value.exception()
        return value

    def _seed_of(self, i: int, episode: int) -> int:
        return episode_seed(int(self._first_seeds[i]), episode)

    # ------------------------------------------------- one env, by index
    def env_info(self, i: int) -> dict[str, Any]:
        """Env `i`'s info dict from its last reset or step, exactly as the env
        returned it (after an autoreset: the new episode's reset info; ``{}``
        while it is idle). ``infos`` batches these, turning numbers into arrays."""
        return self._infos[self._index(i)]

    def final_info(self, i: int) -> dict[str, Any] | None:
        """Env `i`'s last info of the episode that ended in the last step,
        exactly as the env returned it; None if no episode of env `i` ended there."""
        return self._final_infos[self._index(i)]

    def env_attr(self, i: int, name: str) -> Any:
        """An attribute of env `i`'s unwrapped env, read where the env lives
        (a copy, pickled back, for worker processes and Ray actors). For agents
        that read their env (an oracle reads the current problem)."""
        self._check_open()
        w, k = self._where[self._index(i)]
        self._workers.send(w, ("attr", k, name))
        return self._unwrap(w, self._workers.gather([w], self.step_timeout_s)[w], "attr")

    def branch(self, i: int, k: int | Sequence[int]) -> list[int]:
        """Put ``k`` envs into copies of env `i`'s current state; returns their
        indices. An int ``k`` means the ``k`` envs after `i`, wrapping over the
        batch (``i+1 .. i+k`` modulo ``num_envs``); a sequence names them. Each
        copy is made with the env's own ``snapshot()``/``restore()`` where it
        lives; the targets take over `i`'s observation, info, episode seed and
        count, their abandoned episodes end with no ``final_info``, and their
        groups stay as they were. Rules: the `envgym.vector` docstring."""
        return branch_slots(self, i, k)

    def _index(self, i: int) -> int:
        if isinstance(i, bool) or not isinstance(i, int | np.integer) or not 0 <= i < self.num_envs:
            raise IndexError(f"env index must be in 0..{self.num_envs - 1}, got {i!r}")
        return int(i)

    # --------------------------------------------------------- gymnasium
    def reset(
        self,
        *,
        seed: int | Sequence[int] | None = None,
        options: dict[str, Any] | None = None,
        queue: Sequence[int] | Sequence[Sequence[int]] | None = None,
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        """Start every env on a new episode.

        `seed`: an int (group ``g`` starts on ``seed + g``), one seed per env,
        or None (fresh seeds from the vector env's generator). `queue` instead
        turns on task-queue mode (`envgym.vector.seeds.SeedQueue`): each env starts on the
        next seed of its source's queue and, when an episode ends, takes the
        next one left; an env with none left goes idle (``active[i]`` False,
        observation ``""``, its action ignored).
        """
        self._check_open()
        if queue is not None:
            if seed is not None:
                raise ValueError("pass seed or queue to reset(), not both")
            self._queue = SeedQueue.checked(queue, list(self.source_index))
            firsts = [self._queue.take(i) for i in range(self.num_envs)]
            self.active = np.array([s is not None for s in firsts], dtype=np.bool_)
            self._first_seeds = np.array([-1 if s is None else s for s in firsts], dtype=np.int64)
        else:
            self._queue = None
            self._first_seeds = first_seeds(seed, self.num_envs, self.group_index, self.np_random)
            if isinstance(seed, int | np.integer):
                super().reset(seed=int(seed))
            self.active = np.ones(self.num_envs, dtype=np.bool_)
        self.episode_counts[:] = 0
        self.episode_seeds = self._first_seeds.copy()
        if self._queue is None:
            self._next_seeds = np.array([self._seed_of(i, 1) for i in range(self.num_envs)])
        else:  # the queue says what comes next; an idle env's seed is -1
            self._next_seeds = np.zeros(self.num_envs, dtype=np.int64)
        requests: list[list[Any]] = [[] for _ in self._workers.chunks]
        for i, (w, _) in enumerate(self._where):
            if not self.active[i]:
                requests[w].append(None)
            else:
                # In queue mode the next seed is not known yet: no spare is reset ahead.
                after = None if self._queue is not None else int(self._next_seeds[i])
                requests[w].append((int(self.episode_seeds[i]), options, after))
        ws = list(range(len(requests)))
        self._needs_reset = True
        for w in ws:
            self._workers.send(w, ("reset", requests[w]))
        answers = self._workers.gather(ws, self.step_timeout_s)
        # A worker lost since the last step costs no episode here: replace it and
        # reset its envs again (once; a second loss is raised).
        lost = [w for w in ws if isinstance(answers[w], LostWorker)]
        for w in lost:
            self._workers.restart(w)
            self._workers.send(w, ("reset", requests[w]))
        answers.update(self._workers.gather(lost, self.step_timeout_s))
        results = {w: self._unwrap(w, answers[w], "reset") for w in ws}
        infos: dict[str, Any] = {}
        for i, (w, k) in enumerate(self._where):
            obs, info = ("", {}) if results[w][k] is None else results[w][k]
            self._last_obs[i] = obs
            self._infos[i] = info
            self._final_infos[i] = None
            infos = self._add_info(infos, info, i)
        self._needs_reset = False
        return tuple(self._last_obs), infos

    def step(
        self, actions: Sequence[str]
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        self._check_open()
        if self._needs_reset:
            raise gym.error.ResetNeeded("call reset() on the vector env before step()")
        actions = self._check_actions(actions)
        running = [i for i in range(self.num_envs) if self.active[i]]
        if self._queue is not None:
            offers = self._queue.offer(running)
        else:
            offers = {i: int(self._next_seeds[i]) for i in running}
        requests: list[list[Any]] = [[] for _ in self._workers.chunks]
        for i, (w, _) in enumerate(self._where):
            requests[w].append((actions[i], offers[i]) if self.active[i] else None)
        ws = list(range(len(requests)))
        for w in ws:
            self._workers.send(w, ("step", requests[w]))
        answers = self._workers.gather(ws, self.step_timeout_s)
        results: dict[int, list[Any]] = {}
        for w in ws:
            answer = answers[w]
            if isinstance(answer, LostWorker):
                results[w] = self._replace_worker(w, answer.reason, requests[w])
            elif answer[0] == "raise":
                # Only an env that cannot be rebuilt gets here: the batch is broken.
                self._needs_reset = True
                raise answer[1].exception()
            else:
                results[w] = answer[1]

        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=np.bool_)
        truncated = np.zeros(self.num_envs, dtype=np.bool_)
        infos: dict[str, Any] = {}
        ended = []
        for i, (w, k) in enumerate(self._where):
            self._final_infos[i] = None
            if results[w][k] is None:  # idle: nothing ran
                self._last_obs[i], self._infos[i] = "", {}
                continue
            obs, rewards[i], terminated[i], truncated[i], info, final = results[w][k]
            if final is not None:
                final_obs, final_info, error = final
                extra = {
                    "final_obs": self._last_obs[i] if final_obs is None else final_obs,
                    "final_info": final_info,
                }
                if error is not None:
                    extra["error"] = error
                infos = self._add_info(infos, extra, i)
                self._final_infos[i] = final_info
                ended.append(i)
                self.episode_counts[i] += 1
                if offers[i] is None:
                    self.active[i] = False
                else:
                    self.episode_seeds[i] = offers[i]
                if self._queue is None:
                    self._next_seeds[i] = self._seed_of(i, int(self.episode_counts[i]) + 1)
            infos = self._add_info(infos, info, i)
            self._infos[i] = info
            self._last_obs[i] = obs
        if self._queue is not None:
            self._queue.taken(ended)
        return tuple(self._last_obs), rewards, terminated, truncated, infos

    def _replace_worker(self, w: int, reason: str, requests: list[Any]) -> list[Any]:
        """Start a new worker for chunk `w`; each of its envs ends its episode as
        errored and starts the next one."""
        error = f"env worker lost: {reason}"
        self._workers.restart(w)
        self._workers.send(
            w, ("reset", [None if r is None or r[1] is None else (r[1], None) for r in requests])
        )
        answer = self._workers.gather([w], self.step_timeout_s)[w]
        try:
            resets = self._unwrap(w, answer, "reset after a restart")
        except BaseException:
            self._needs_reset = True
            raise
        out: list[Any] = []
        for request, reset in zip(requests, resets, strict=True):
            if request is None:  # it was idle and stays so
                out.append(None)
                continue
            obs, info = reset if reset is not None else ("", {})  # None: queue empty, idle
            out.append((obs, 0.0, False, True, info, (None, {"error": error}, error)))
        return out

    def _check_actions(self, actions: Any) -> list[Any]:
        if isinstance(actions, str | bytes):
            raise TypeError(
                f"step() takes one action per env (a sequence of {self.num_envs} str), "
                "got a single string"
            )
        try:
            actions = list(actions)
        except TypeError:
            raise TypeError(
                f"step() takes a sequence of {self.num_envs} str actions, got {actions!r}"
            ) from None
        if len(actions) != self.num_envs:
            raise ValueError(
                f"step() got {len(actions)} actions for {self.num_envs} envs; "
                "pass exactly one reply per env"
            )
        return [str(a) if isinstance(a, np.str_) else a for a in actions]

    def render(self) -> tuple[Any, ...] | None:
        self._check_open()
        frames = self._call_all(("render",), self.step_timeout_s)
        return tuple(f for w in sorted(frames) for f in frames[w])

    def worker_pids(self) -> list[int]:
        """The process id of each worker (for monitoring, or to test recovery)."""
        self._check_open()
        if self.workers == "ray":
            return list(self._call_all(("pid",), self.step_timeout_s).values())
        return self._workers.pids()

    def close_extras(self, **kwargs: Any) -> None:
        if hasattr(self, "_workers"):
            self._workers.close()

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this TextVectorEnv is closed; make a new one")

    def __enter__(self) -> TextVectorEnv:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self.closed:
                self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        ids = sorted({i for i in getattr(self, "env_ids", ()) if i})
        name = ", ".join(ids) if ids else "env_fns"
        return (
            f"TextVectorEnv({name}, num_envs={self.num_envs}, group_size={self.group_size}, "
            f"workers={self.workers!r})"
        )


def make_vec(
    id: EnvSource | Sequence[EnvSource],
    num_envs: int | None = None,
    group_size: int = 1,
    workers: str = "sync",
    vector_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> TextVectorEnv:
    """`TextVectorEnv` of `id` (or a list of ids): ``kwargs`` go to every env's
    constructor, ``vector_kwargs`` (``num_workers``, ``step_timeout_s``, ...) to
    the vector env."""
    return TextVectorEnv(
        id,
        num_envs,
        group_size=group_size,
        workers=workers,
        env_kwargs=kwargs,
        **(vector_kwargs or {}),
    )
