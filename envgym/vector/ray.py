"""Env workers as Ray actors, for `TextVectorEnv(workers="ray")` on one machine or a cluster.

Each actor holds a contiguous chunk of the batch's envs and answers the same
messages as a subprocess worker (`envgym.vector.EnvChunk`), so results are the
same as with ``workers="sync"`` for the same seeds and actions. `RayWorkers`
is a kind of worker like any other: it implements `envgym.vector.Workers` and
uses nothing private of the vector env. Ray is imported only when this module
is, and this module only when ``workers="ray"`` is asked for.

One machine::

    import ray, envgym
    ray.init(num_cpus=8, include_dashboard=False)   # or let Ray start itself
    envs = envgym.make_vec("envgym/Sokoban-v0", num_envs=64, group_size=8,
                           workers="ray", vector_kwargs={"num_workers": 8})

A multi-node cluster: start Ray on every node (``ray start --head`` on one,
``ray start --address=HEAD:6379`` on the others), make envgym importable on
every node (install it there, or ship it with a ``runtime_env``), then connect
the trainer to the running cluster before building the batch::

    ray.init(address="auto")                 # on a cluster node
    envs = envgym.make_vec(
        "envgym/Household-v0", num_envs=512, group_size=8, workers="ray",
        vector_kwargs={
            "num_workers": 64,               # actors; Ray spreads them over the nodes
            "ray_actor_options": {"num_cpus": 1, "runtime_env": {"pip": ["envgym"]}},
        },
    )

Ray does the placement; envgym schedules nothing itself. Actors are created
with ``max_restarts=0``: when one dies (its node is lost, its process killed)
the batch notices at the next step, starts a fresh actor for that chunk and
reports the chunk's running episodes as errored (``infos["error"]``), as with
subprocess workers. A step that runs past ``step_timeout_s`` gets its actor
killed and replaced the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import cloudpickle
import gymnasium as gym
import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayError

from envgym.vector.chunk import EnvChunk
from envgym.vector.workers import LostWorker, Workers

__all__ = ["EnvWorker", "RayWorkers"]


class _EnvWorker:
    """A Ray actor holding some envs; the factories arrive cloudpickled, since
    they may be closures (``lambda: RemoteEnv(url)``)."""

    def __init__(self, payload: bytes) -> None:
        self.chunk = EnvChunk(cloudpickle.loads(payload))

    def handle(self, message: tuple[Any, ...]) -> tuple[str, Any]:
        return self.chunk.handle(message)

    def pid(self) -> int:
        return os.getpid()


#: The actor class (``EnvWorker.options(...).remote(payload)``).
EnvWorker = ray.remote(max_restarts=0, max_task_retries=0)(_EnvWorker)


class RayWorkers(Workers):
    """The vector env's side of the actors, one per chunk of envs."""

    def __init__(
        self,
        chunks: list[list[Callable[[], gym.Env]]],
        actor_options: dict[str, Any] | None,
        start_timeout_s: float | None,
    ) -> None:
        super().__init__(chunks)
        if not ray.is_initialized():
            # The same default Ray would pick on first use, minus the dashboard.
            ray.init(include_dashboard=False)
        self.actor_options = {"num_cpus": 1, **(actor_options or {})}
        self.start_timeout_s = start_timeout_s
        self.actors: list[Any] = [None] * len(chunks)
        self.refs: dict[int, Any] = {}

    def start(self, w: int) -> None:
        actor = EnvWorker.options(**self.actor_options).remote(cloudpickle.dumps(self.chunks[w]))
        self.actors[w] = actor
        # The first call returns once the envs are built (or the constructor failed).
        try:
            ray.get(actor.pid.remote(), timeout=self.start_timeout_s)
        except GetTimeoutError:
            self.stop(w)
            raise RuntimeError(
                f"Ray actor for env chunk {w} did not start within {self.start_timeout_s} s; "
                "is the cluster out of CPUs? (see ray status)"
            ) from None
        except RayActorError as exc:
            self.stop(w)
            raise RuntimeError(f"Ray actor for env chunk {w} failed to start: {exc}") from exc

    def send(self, w: int, message: tuple[Any, ...]) -> None:
        self.refs[w] = self.actors[w].handle.remote(message)

    def gather(self, ws: list[int], timeout_s: float | None) -> dict[int, Any]:
        refs = {self.refs.pop(w): w for w in ws}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout_s)
        out: dict[int, Any] = {}
        for ref, w in refs.items():
            if ref not in ready:
                out[w] = LostWorker(f"Ray actor gave no answer within {timeout_s} s")
                continue
            try:
                out[w] = ray.get(ref)
            except RayActorError as exc:
                out[w] = LostWorker(f"Ray actor died ({type(exc).__name__})")
            except RayError as exc:
                out[w] = LostWorker(f"Ray call failed: {exc}")
        return out

    def stop(self, w: int) -> None:
        actor, self.actors[w] = self.actors[w], None
        self.refs.pop(w, None)
        if actor is not None:
            ray.kill(actor, no_restart=True)

    def close(self) -> None:
        live = [w for w, actor in enumerate(self.actors) if actor is not None]
        for w in live:
            self.send(w, ("close",))
        try:
            ray.wait([self.refs[w] for w in live], num_returns=len(live), timeout=5)
        except RayError:
            pass
        for w in live:
            self.stop(w)
