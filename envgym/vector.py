"""Batches of text envs for RL trainers: grouped resets and same-step autoreset.

`TextVectorEnv` is a `gymnasium.vector.VectorEnv` whose sub-envs speak text::

    import envgym

    with envgym.make_vec("envgym/Sokoban-v0", num_envs=8, group_size=4,
                         workers="subprocess", difficulty="hard") as envs:
        obs, infos = envs.reset(seed=0)       # obs: tuple of 8 str; envs 0-3 alike, 4-7 alike
        obs, rewards, terminated, truncated, infos = envs.step(replies)  # replies: 8 str

Batching follows Gymnasium's own rules for Text spaces: observations come back
as a tuple of str (``batch_space(Text)`` is a ``Tuple`` of Text spaces), rewards
and done flags as numpy arrays, and ``infos`` as a dict of arrays with a ``_key``
mask per key (object arrays for values that are not numbers, nested dicts for
dict values), as ``VectorEnv._add_info`` builds them.

Groups (GRPO, GiGPO). Envs ``g*group_size .. (g+1)*group_size - 1`` form group
``g``. The seed rule:

- ``reset(seed=s)`` starts group ``g`` on seed ``s + g`` (Gymnasium's "seed plus
  index" rule, per group), so ``gym.make(id).reset(seed=s + g)`` replays it.
- ``reset()`` without a seed draws one fresh seed per group from the vector
  env's own generator (seeded by the last ``reset(seed=s)``).
- Autoreset keeps groups aligned by episode count, not by time: the ``j``-th
  episode of every member of group ``g`` is the same task (its seed is derived
  from the group's first seed and ``j``), whenever each member gets there.
  ``episode_seeds`` and ``episode_counts`` say which task each env is on now.
  ``reset()`` starts every group over in step.

Same-step autoreset (``metadata["autoreset_mode"] == AutoresetMode.SAME_STEP``):
the step that ends an episode already returns the next episode's first
observation; the last observation and info of the finished episode are in
``infos["final_obs"]`` and ``infos["final_info"]`` (masks ``_final_obs``,
``_final_info``). No generation is spent on a dead env. Autoresets pass no
``options``.

Workers (``workers=``):

- ``"sync"``: every env in this process, stepped one after another.
- ``"subprocess"``: ``num_workers`` processes (default: one per CPU), each
  holding a contiguous chunk of envs, fed pickled messages over pipes. No
  shared memory: text does not fit fixed buffers. With ``prefetch=True`` a
  worker resets a spare copy of each env to its next episode seed while it
  waits for the next step, and swaps it in when the episode ends.
- ``"ray"``: the same chunks as Ray actors (`envgym.remote.ray`), for one
  machine or a cluster.
- ``"remote"``: envs built in this process by ``env_fns`` (for example
  ``lambda: RemoteEnv(url)``), each step in its own thread, for envs whose work
  happens elsewhere and that mostly wait on I/O.

Failures never hang a batch. A worker that dies (killed, crashed) or does not
answer within ``step_timeout_s`` is replaced; an env whose ``step`` raises is
rebuilt from its factory. Either way the episode it was running ends in that
step with ``truncated=True``, reward 0, ``infos["error"]`` (mask ``_error``)
saying what happened and ``final_info["error"]`` the same, and the env starts
its next episode, so a trainer drops the broken trajectory and carries on.
(``"sync"`` cannot interrupt a step that hangs.) Errors in ``reset()`` that
come from the caller, such as an unknown reset option, are raised.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

import cloudpickle
import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_differing_spaces, batch_space

__all__ = ["WORKER_KINDS", "TextVectorEnv", "make_vec"]

WORKER_KINDS = ("sync", "subprocess", "ray", "remote")

#: How long close() waits for a worker to exit on its own before killing it.
_CLOSE_GRACE_S = 5.0

EnvSource = str | tuple[str, dict[str, Any]]


# ------------------------------------------------------------------ env side
class _MakeEnv:
    """A picklable factory for a registered id (lambdas over ids would do, but
    this one prints well in error messages)."""

    def __init__(self, env_id: str, kwargs: dict[str, Any]) -> None:
        self.env_id = env_id
        self.kwargs = dict(kwargs)

    def __call__(self) -> gym.Env:
        import envgym  # noqa: F401  (registers the ids in a fresh worker process)

        return gym.make(self.env_id, **self.kwargs)

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.kwargs.items())
        return f"gym.make({self.env_id!r}{args})"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class _Raised:
    """An exception from a worker, carried back to be raised in the caller."""

    def __init__(self, exc: BaseException) -> None:
        self.text = "".join(traceback.format_exception(exc))
        try:
            self.payload: bytes | None = pickle.dumps(exc)
        except Exception:
            self.payload = None
        self.summary = _describe(exc)

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

    Messages are tuples: ``("describe",)``, ``("reset", [(seed, options), ...])``,
    ``("step", [(action, next_seed) | None, ...])``, ``("render",)``,
    ``("close",)``; the answer is ``("ok", value)`` or ``("raise", _Raised)``.
    ``next_seed`` is the seed for the autoreset should the step end the episode.
    """

    def __init__(self, factories: Sequence[Callable[[], gym.Env]], prefetch: bool = False) -> None:
        self.factories = list(factories)
        self.envs = [make() for make in self.factories]
        n = len(self.envs)
        #: Prefetching: a spare env per env, reset ahead to that env's next
        #: episode seed while the worker waits, and swapped in when the episode ends.
        self.prefetch = prefetch
        self._next_seeds: list[int | None] = [None] * n
        self._spares: list[_Spare | None] = [None] * n
        # An env that reset with options may differ from a fresh one: no spare for it.
        self._plain = [True] * n
        self._cursor = 0

    def handle(self, message: tuple[Any, ...]) -> tuple[str, Any]:
        kind = message[0]
        try:
            if kind == "describe":
                return "ok", [self._describe_env(env) for env in self.envs]
            if kind == "reset":
                return "ok", [self._reset_one(k, *request) for k, request in enumerate(message[1])]
            if kind == "step":
                return "ok", [
                    None if request is None else self._step_one(k, *request)
                    for k, request in enumerate(message[1])
                ]
            if kind == "render":
                return "ok", [env.render() for env in self.envs]
            if kind == "pid":
                return "ok", os.getpid()
            if kind == "close":
                self.close()
                return "ok", None
            raise ValueError(f"unknown worker message {kind!r}")
        except Exception as exc:
            return "raise", _Raised(exc)

    @staticmethod
    def _describe_env(env: gym.Env) -> dict[str, Any]:
        return {
            "observation_space": env.observation_space,
            "action_space": env.action_space,
            "metadata": dict(env.metadata),
            "render_mode": env.render_mode,
            "spec_id": env.spec.id if env.spec is not None else None,
        }

    def _reset_one(
        self, k: int, seed: int | None, options: dict[str, Any] | None, next_seed: int | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if options:
            self._plain[k] = False
            self._drop_spare(k)
        self._next_seeds[k] = next_seed
        return self.envs[k].reset(seed=seed, options=options)

    def _step_one(self, k: int, action: Any, next_seed: int) -> tuple[Any, ...]:
        """One env's step with same-step autoreset; the last item is None or
        ``(final_obs, final_info, error)``."""
        self._next_seeds[k] = next_seed
        try:
            obs, reward, terminated, truncated, info = self.envs[k].step(action)
        except Exception as exc:
            error = f"env step raised {_describe(exc)}"
            obs, info = self._rebuild(k, next_seed)
            return obs, 0.0, False, True, info, (None, {"error": error}, error)
        if not (terminated or truncated):
            return obs, float(reward), bool(terminated), bool(truncated), info, None
        final = (obs, info, None)
        # The next seed is unknown until the parent's next message says it.
        self._next_seeds[k] = None
        spare = self._spares[k]
        if spare is not None and spare.seed == next_seed:
            # The spare already holds the next episode; the finished env becomes
            # the spare, to be reset ahead again.
            spare.env, self.envs[k] = self.envs[k], spare.env
            obs, info = spare.obs, spare.info
            spare.seed = None
        else:
            try:
                obs, info = self.envs[k].reset(seed=next_seed)
            except Exception:
                obs, info = self._rebuild(k, next_seed)
        return obs, float(reward), bool(terminated), bool(truncated), info, final

    def prefetch_one(self) -> bool:
        """Reset one spare env ahead to its env's next episode seed; False when
        every spare is ready (or prefetching is off)."""
        if not self.prefetch:
            return False
        n = len(self.envs)
        for step in range(n):
            k = (self._cursor + step) % n
            seed = self._next_seeds[k]
            spare = self._spares[k]
            if seed is None or not self._plain[k] or (spare is not None and spare.seed == seed):
                continue
            self._cursor = (k + 1) % n
            try:
                env = spare.env if spare is not None else self.factories[k]()
                obs, info = env.reset(seed=seed)
            except Exception:
                # The normal autoreset path will meet (and report) the same failure.
                self._plain[k] = False
                self._drop_spare(k)
                return True
            self._spares[k] = _Spare(seed, env, obs, info)
            return True
        return False

    def _drop_spare(self, k: int) -> None:
        spare, self._spares[k] = self._spares[k], None
        if spare is not None:
            try:
                spare.env.close()
            except Exception:
                pass

    def _rebuild(self, k: int, seed: int) -> tuple[str, dict[str, Any]]:
        """Replace env `k` (its state is suspect after an exception) and reset it;
        a second failure is raised, since retrying forever would hang the batch."""
        try:
            self.envs[k].close()
        except Exception:
            pass
        self.envs[k] = self.factories[k]()
        return self.envs[k].reset(seed=seed)

    def close(self) -> None:
        for k, env in enumerate(self.envs):
            self._drop_spare(k)
            try:
                env.close()
            except Exception:
                pass


@dataclass
class _Spare:
    seed: int | None  # None once swapped in: the env needs a new reset
    env: gym.Env
    obs: Any
    info: dict[str, Any]


# --------------------------------------------------------------- worker kinds
class _Lost:
    """A worker that did not answer: it died, or it ran past the timeout."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class _Workers:
    """The main process's side of a set of workers, one chunk of envs each."""

    def __init__(self, chunks: list[list[Callable[[], gym.Env]]]) -> None:
        self.chunks = chunks

    def start(self, w: int) -> None:
        raise NotImplementedError

    def send(self, w: int, message: tuple[Any, ...]) -> None:
        raise NotImplementedError

    def gather(self, ws: list[int], timeout_s: float | None) -> dict[int, Any]:
        """Each worker's answer to its last message, or a `_Lost`."""
        raise NotImplementedError

    def stop(self, w: int) -> None:
        """Tear worker `w` down at once (it is lost or being replaced)."""

    def close(self) -> None:
        raise NotImplementedError

    def pids(self) -> list[int]:
        return [os.getpid()] * len(self.chunks)

    def restart(self, w: int) -> None:
        self.stop(w)
        self.start(w)


class _SyncWorkers(_Workers):
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


class _ThreadWorkers(_SyncWorkers):
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
                out[w] = _Lost(f"the env gave no answer within {timeout_s} s")
            else:
                out[w] = box.get("answer", _Lost("the env's thread died"))
        return out

    def stop(self, w: int) -> None:
        # A thread cannot be killed: drop the env and let its thread finish (or not)
        # on its own; close the env in the background in case it holds a socket.
        worker, self.workers[w] = self.workers[w], None
        self.calls.pop(w, None)
        if worker is not None:
            threading.Thread(target=worker.close, daemon=True).start()


def _subprocess_main(conn: Connection, payload: bytes, prefetch: bool = False) -> None:
    # Ctrl-C goes to the whole process group; the parent decides when to stop us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        chunk = EnvChunk(cloudpickle.loads(payload), prefetch=prefetch)
    except Exception as exc:
        conn.send(("raise", _Raised(exc)))
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


class _SubprocessWorkers(_Workers):
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
            # forkserver: children fork from a clean helper with envgym already
            # imported, so (re)starts are fast and never copy the trainer's threads.
            start_method = "forkserver" if "forkserver" in methods else "spawn"
        self.ctx = multiprocessing.get_context(start_method)
        if start_method == "forkserver":
            self.ctx.set_forkserver_preload(["envgym", "envgym.vector"])
        self.start_timeout_s = start_timeout_s
        self.procs: list[Any] = [None] * len(chunks)
        self.conns: list[Connection | None] = [None] * len(chunks)
        self.lost: dict[int, _Lost] = {}

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
        if isinstance(answer, _Lost):
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
            self.lost[w] = _Lost(self._death(w, f"could not send to it ({_describe(exc)})"))

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
                    out[w] = _Lost(
                        f"worker process {self.procs[w].pid} gave no answer within "
                        f"{timeout_s} s (waiting for {waiting_for})"
                    )
                break
            for w in {by_handle[item] for item in ready}:
                conn = pending.pop(w)
                # A dead worker's pipe reads as EOF; one that answered and then died
                # still has its answer in the pipe.
                try:
                    out[w] = conn.recv() if conn.poll() else _Lost(self._death(w, "died"))
                except (EOFError, OSError):
                    out[w] = _Lost(self._death(w, "closed its pipe"))
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
        self.gather(live, _CLOSE_GRACE_S)
        for w in live:
            self.stop(w)

    def pids(self) -> list[int]:
        return [proc.pid if proc is not None else -1 for proc in self.procs]


# --------------------------------------------------------------- vector env
def _normalise_sources(envs: Any) -> list[tuple[str, dict[str, Any]]]:
    is_pair = isinstance(envs, tuple) and len(envs) == 2 and isinstance(envs[1], dict)
    items = [envs] if isinstance(envs, str) or is_pair else list(envs)
    if not items:
        raise ValueError("no env ids given; pass an id, a list of ids, or env_fns=[...]")
    out = []
    for item in items:
        if isinstance(item, str):
            out.append((item, {}))
        elif (
            isinstance(item, tuple)
            and len(item) == 2
            and isinstance(item[0], str)
            and isinstance(item[1], dict)
        ):
            out.append((item[0], dict(item[1])))
        else:
            raise TypeError(
                f"an env is named by an id or an (id, kwargs) pair, got {item!r}; "
                "for arbitrary factories pass env_fns=[...]"
            )
    return out


def _episode_seed(first_seed: int, episode: int) -> int:
    """The seed of a group's `episode`-th episode (0 is the seed reset gave it)."""
    if episode == 0:
        return first_seed
    return int(np.random.SeedSequence([first_seed, episode]).generate_state(1)[0])


class TextVectorEnv(VectorEnv):
    """A batch of text envs with GRPO groups, same-step autoreset and several
    worker kinds; see the module docstring for the rules.

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
        factories = self._factories(envs, env_fns, env_kwargs, num_envs, group_size)
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
            self._workers: _Workers = _SyncWorkers(chunks)
        elif workers == "remote":
            self._workers = _ThreadWorkers(chunks)
        elif workers == "subprocess":
            self._workers = _SubprocessWorkers(chunks, start_method, start_timeout_s, prefetch)
        else:
            try:
                from envgym.remote.ray import RayWorkers
            except ModuleNotFoundError as exc:
                if exc.name != "ray":
                    raise
                raise ImportError("workers='ray' needs Ray: pip install 'envgym[ray]'") from None
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
    def _factories(
        envs: Any,
        env_fns: Sequence[Callable[[], gym.Env]] | None,
        env_kwargs: dict[str, Any] | None,
        num_envs: int | None,
        group_size: int,
    ) -> list[Callable[[], gym.Env]]:
        if env_fns is not None:
            if envs is not None:
                raise ValueError("pass env ids or env_fns, not both")
            fns = list(env_fns)
            if not fns or not all(callable(f) for f in fns):
                raise TypeError("env_fns must be a non-empty list of callables returning an env")
            if num_envs is not None and num_envs != len(fns):
                raise ValueError(f"num_envs={num_envs} but {len(fns)} env_fns were given")
            if len(fns) % group_size:
                raise ValueError(
                    f"{len(fns)} env_fns do not split into groups of group_size={group_size}"
                )
            return fns
        if envs is None:
            raise ValueError("pass an env id (or a list of ids), or env_fns=[...]")
        sources = _normalise_sources(envs)
        if num_envs is None:
            num_envs = len(sources) * group_size
        if num_envs % group_size:
            raise ValueError(
                f"num_envs={num_envs} is not divisible by group_size={group_size}; "
                f"use a multiple of {group_size}"
            )
        groups = num_envs // group_size
        if groups % len(sources):
            raise ValueError(
                f"{groups} groups cannot be shared evenly among {len(sources)} env ids; "
                f"make num_envs / group_size a multiple of {len(sources)}"
            )
        extra = dict(env_kwargs or {})
        made = [_MakeEnv(env_id, {**kwargs, **extra}) for env_id, kwargs in sources]
        for env_id, _ in sources:
            gym.spec(env_id)  # an unknown id fails here, with Gymnasium's suggestions
        return [made[(i // group_size) % len(made)] for i in range(num_envs)]

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
        if isinstance(answer, _Lost):
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
        lost = [w for w in ws if isinstance(answers[w], _Lost)]
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
            if isinstance(answer, _Lost):
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
