"""`EnvChunk`: the envs one worker holds, and the messages that drive them.

Every worker kind (sync, thread, subprocess, Ray actor) wraps an `EnvChunk` and
passes it the vector env's messages unchanged, so the kinds differ only in
where the chunk lives, never in what a step does.
"""

from __future__ import annotations

import os
import pickle
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

from envgym.vector.spares import Spares

__all__ = ["EnvChunk", "RaisedInWorker", "describe_error"]


def describe_error(exc: BaseException) -> str:
    """One line naming an exception, for ``infos["error"]`` and lost-worker reasons."""
    return f"{type(exc).__name__}: {exc}"


class RaisedInWorker:
    """An exception from a worker, carried back to be raised in the caller.

    Exceptions do not all pickle, so this keeps the traceback as text and the
    exception itself only when it survives pickling.
    """

    def __init__(self, exc: BaseException) -> None:
        self.text = "".join(traceback.format_exception(exc))
        try:
            self.payload: bytes | None = pickle.dumps(exc)
        except Exception:
            self.payload = None
        self.summary = describe_error(exc)

    def exception(self) -> BaseException:
        exc: BaseException | None = None
        if self.payload is not None:
            try:
                exc = pickle.loads(self.payload)
            except Exception:
                exc = None
        if exc is None:
            exc = RuntimeError(self.summary)
        exc.add_note(f"raised in an env worker:\n{self.text}")
        return exc


class EnvChunk:
    """Some envs and the protocol to drive them, the same in every kind of worker.

    Messages are tuples: ``("describe",)``, ``("reset", [(seed, options,
    next_seed) | None, ...])``, ``("step", [(action, next_seed) | None, ...])``,
    ``("attr", k, name)``, ``("snapshot", k)``, ``("restore", [k, ...],
    snapshot)``, ``("release", k, snapshot)``, ``("render",)``, ``("pid",)``,
    ``("close",)``; the answer is ``("ok", value)`` or ``("raise", RaisedInWorker)``. ``next_seed``
    is the seed for the autoreset should the step end the episode; None there
    means no autoreset (the env goes idle, its observation ``""``). A None
    request leaves that env alone (it is idle) and answers None.

    With ``prefetch=True`` the chunk keeps a spare env per env (`Spares`); a
    worker calls `prefetch_one` while it waits for a message, and a step that
    ends an episode swaps the ready spare in instead of resetting.
    """

    def __init__(self, factories: Sequence[Callable[[], gym.Env]], prefetch: bool = False) -> None:
        self.factories = list(factories)
        self.envs = [make() for make in self.factories]
        self.prefetch = prefetch
        self.spares = Spares(self.factories) if prefetch else None

    def handle(self, message: tuple[Any, ...]) -> tuple[str, Any]:
        kind = message[0]
        try:
            if kind == "describe":
                return "ok", [self._describe_env(env) for env in self.envs]
            if kind == "reset":
                return "ok", [
                    None if request is None else self._reset_one(k, *request)
                    for k, request in enumerate(message[1])
                ]
            if kind == "step":
                return "ok", [
                    None if request is None else self._step_one(k, *request)
                    for k, request in enumerate(message[1])
                ]
            if kind == "attr":
                _, k, name = message
                return "ok", getattr(self.envs[k].unwrapped, name)
            if kind == "snapshot":
                return "ok", self._forking(message[1], "snapshot")()
            if kind == "restore":
                _, ks, snapshot = message
                for k in ks:
                    self._forking(k, "restore")(snapshot)
                return "ok", None
            if kind == "release":
                # Snapshots that hold room elsewhere (a RemoteEnv's handle on its
                # server) are let go once every target has restored.
                release = getattr(self.envs[message[1]].unwrapped, "release", None)
                return "ok", release(message[2]) if callable(release) else None
            if kind == "render":
                return "ok", [env.render() for env in self.envs]
            if kind == "pid":
                return "ok", os.getpid()
            if kind == "close":
                self.close()
                return "ok", None
            raise ValueError(f"unknown worker message {kind!r}")
        except Exception as exc:
            return "raise", RaisedInWorker(exc)

    @staticmethod
    def _describe_env(env: gym.Env) -> dict[str, Any]:
        return {
            "observation_space": env.observation_space,
            "action_space": env.action_space,
            "metadata": dict(env.metadata),
            "render_mode": env.render_mode,
            "spec_id": env.spec.id if env.spec is not None else None,
        }

    def _forking(self, k: int, name: str) -> Callable[..., Any]:
        """Env `k`'s own ``snapshot`` or ``restore`` (on its unwrapped env, as
        `envgym.core.TextEnv` and `RemoteEnv` define them)."""
        env = self.envs[k].unwrapped
        method = getattr(env, name, None)
        if not callable(method):
            raise TypeError(
                f"{type(env).__name__} has no {name}() method, so its episodes cannot be "
                "branched; branch() needs envs that fork (envgym's TextEnv subclasses, or a "
                "RemoteEnv whose server supports snapshots)"
            )
        return method

    def _reset_one(
        self, k: int, seed: int | None, options: dict[str, Any] | None, next_seed: int | None = None
    ) -> tuple[Any, dict[str, Any]]:
        spares = self.spares
        if spares is not None:
            if options:
                spares.exclude(k)
            spares.next_seeds[k] = next_seed
        return self.envs[k].reset(seed=seed, options=options)

    def _step_one(self, k: int, action: Any, next_seed: int | None) -> tuple[Any, ...]:
        """One env's step with same-step autoreset (none when `next_seed` is
        None); the last item is None or ``(final_obs, final_info, error)``."""
        spares = self.spares
        if spares is not None:
            spares.next_seeds[k] = next_seed
        try:
            obs, reward, terminated, truncated, info = self.envs[k].step(action)
        except Exception as exc:
            error = f"env step raised {describe_error(exc)}"
            obs, info = self._rebuild(k, next_seed)
            return obs, 0.0, False, True, info, (None, {"error": error}, error)
        if not (terminated or truncated):
            return obs, float(reward), bool(terminated), bool(truncated), info, None
        final = (obs, info, None)
        if next_seed is None:
            return "", float(reward), bool(terminated), bool(truncated), {}, final
        swapped = None if spares is None else spares.swap_in(k, self.envs[k], next_seed)
        if swapped is not None:
            self.envs[k], obs, info = swapped
        else:
            try:
                obs, info = self.envs[k].reset(seed=next_seed)
            except Exception:
                obs, info = self._rebuild(k, next_seed)
        return obs, float(reward), bool(terminated), bool(truncated), info, final

    def prefetch_one(self) -> bool:
        """Reset one spare env ahead to its env's next episode seed; False when
        every spare is ready (or prefetching is off)."""
        return self.spares is not None and self.spares.prefetch_one()

    def _rebuild(self, k: int, seed: int | None) -> tuple[str, dict[str, Any]]:
        """Replace env `k` (its state is suspect after an exception) and reset it
        (unless `seed` is None: it goes idle); a second failure is raised, since
        retrying forever would hang the batch."""
        try:
            self.envs[k].close()
        except Exception:
            pass
        self.envs[k] = self.factories[k]()
        if seed is None:
            return "", {}
        return self.envs[k].reset(seed=seed)

    def close(self) -> None:
        for env in self.envs:
            try:
                env.close()
            except Exception:
                pass
        if self.spares is not None:
            self.spares.close()
