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
from envgym.vector.in_process import SyncWorkers, ThreadWorkers
from envgym.vector.processes import SubprocessWorkers
from envgym.vector.sources import EnvSource, env_factories
from envgym.vector.workers import LostWorker, Workers

__all__ = ["WORKER_KINDS", "TextVectorEnv", "make_vec"]

WORKER_KINDS = ("sync", "subprocess", "ray", "remote")


def _episode_seed(first_seed: int, episode: int) -> int:
    """The seed of a group's `episode`-th episode (0 is the seed reset gave it)."""
    if episode == 0:
        return first_seed
    return int(np.random.SeedSequence([first_seed, episode]).generate_state(1)[0])


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
        factories = env_factories(envs, env_fns, env_kwargs, num_envs, group_size)
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
        self._next_seeds = np.zeros(self.num_envs, dtype=np.int64)
        self._group_seeds = np.zeros(self.num_groups, dtype=np.int64)
        self._last_obs: list[str] = [""] * self.num_envs
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
        return _episode_seed(int(self._group_seeds[self.group_index[i]]), episode)

    # --------------------------------------------------------- gymnasium
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        self._check_open()
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
                raise TypeError(
                    f"seed must be a non-negative int (group g gets seed + g), got {seed!r}"
                )
            super().reset(seed=int(seed))
            self._group_seeds = int(seed) + np.arange(self.num_groups, dtype=np.int64)
        else:
            self._group_seeds = self.np_random.integers(0, 2**31, size=self.num_groups)
        self.episode_counts[:] = 0
        self.episode_seeds = self._group_seeds[self.group_index].copy()
        self._next_seeds = np.array([self._seed_of(i, 1) for i in range(self.num_envs)])
        requests: list[list[Any]] = [[] for _ in self._workers.chunks]
        for i, (w, _) in enumerate(self._where):
            requests[w].append((int(self.episode_seeds[i]), options, int(self._next_seeds[i])))
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
            obs, info = results[w][k]
            self._last_obs[i] = obs
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
        requests: list[list[Any]] = [[] for _ in self._workers.chunks]
        for i, (w, _) in enumerate(self._where):
            requests[w].append((actions[i], int(self._next_seeds[i])))
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
        for i, (w, k) in enumerate(self._where):
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
                self.episode_counts[i] += 1
                self.episode_seeds[i] = self._next_seeds[i]
                self._next_seeds[i] = self._seed_of(i, int(self.episode_counts[i]) + 1)
            infos = self._add_info(infos, info, i)
            self._last_obs[i] = obs
        return tuple(self._last_obs), rewards, terminated, truncated, infos

    def _replace_worker(self, w: int, reason: str, requests: list[Any]) -> list[Any]:
        """Start a new worker for chunk `w`; each of its envs ends its episode as
        errored and starts the next one."""
        error = f"env worker lost: {reason}"
        self._workers.restart(w)
        self._workers.send(w, ("reset", [(seed, None) for _, seed in requests]))
        answer = self._workers.gather([w], self.step_timeout_s)[w]
        try:
            resets = self._unwrap(w, answer, "reset after a restart")
        except BaseException:
            self._needs_reset = True
            raise
        return [
            (obs, 0.0, False, True, info, (None, {"error": error}, error)) for obs, info in resets
        ]

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
