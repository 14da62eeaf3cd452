"""The envgym env server: any registered env over OpenEnv's WebSocket protocol.

One WebSocket connection at ``/ws`` is one env instance, made with
``gym.make(env_id, **env_kwargs)`` when the connection opens and closed when
it ends. ``GET /health`` says the server is up and how many sessions it holds;
``GET /schema`` describes the env (id, kwargs, Text spaces, JSON Schemas of
the messages). The messages are in `envgym.remote.protocol`.

Run it with ``envgym serve ID --port P`` (or ``--uds PATH``), from Python with
`serve` (blocking), or for tests and tools with `serve_in_background` (a
thread in this process) and `serve_in_subprocess` (an ``envgym serve``
process)::

    with serve_in_background("envgym/Sokoban-v0", port=0) as address:
        env = RemoteEnv(address)

What a server guards:

- Privileged data. Observation frames carry the env's ``info`` without
  ``info["privileged"]`` (gold answers, solutions, an opponent's hidden card):
  any client that reaches the port or socket could read it. A server for a
  trainer that needs it opts in with ``send_privileged=True``
  (``envgym serve ID --send-privileged``); ``GET /schema`` and ``GET /health``
  say which (``send_privileged``), and `RemoteEnv.privileged_sent` reads it.
- The event loop. Env calls (make, reset, step, close) run on threads, never
  on the loop, each session's one at a time and in order; a call that waits
  behind slow ones gets a thread of its own within milliseconds, so a slow
  env stalls only its own session. A call that takes longer than
  ``call_timeout_s`` (``--call-timeout``, 60 s by default) is answered with a
  CALL_TIMEOUT error frame and the session is closed (code 4504): an env
  stopped mid-call cannot be trusted. Python cannot stop a thread, so the call
  runs on in the background until it returns and then the env is closed;
  ``GET /health`` counts such calls (``calls_past_deadline``).
- Memory. A client message longer than `max_message_bytes` (the longest
  action the env's space holds plus 64 KiB; ``--max-message-bytes``) closes
  its session with code 1009 before it is read whole; other sessions go on.
- Unix sockets are made owner-only (0o600).

fastapi and uvicorn are imported only when a server is built.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import json
import logging
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from envgym.remote.protocol import (
    CLOSE_CALL_TIMEOUT,
    CLOSE_IDLE,
    CLOSE_NORMAL,
    CLOSE_SERVER_ERROR,
    CLOSE_TRY_AGAIN_LATER,
    PROTOCOL_VERSION,
    ErrorCode,
    encode_frame,
    error_frame,
    max_message_bytes,
    observation_frame,
    public_info,
    text_space_to_json,
    to_jsonable,
)
from envgym.sockets import ListenError, listening_socket

if TYPE_CHECKING:
    from fastapi import FastAPI, WebSocket

__all__ = [
    "EnvServer",
    "READY_LINE_PREFIX",
    "ServerAddress",
    "ServerConfig",
    "ServerProcess",
    "ServerStartError",
    "parse_ready_line",
    "ready_line",
    "serve",
    "serve_command",
    "serve_in_background",
    "serve_in_subprocess",
]

logger = logging.getLogger("envgym.remote")

#: `serve` prints one line starting with this, then the address, once it accepts sessions.
READY_LINE_PREFIX = "envgym serve: serving "


class ServerStartError(RuntimeError):
    """The server could not start: bad env id or kwargs, address in use, ..."""


# ----------------------------------------------------------------- address
@dataclass(frozen=True)
class ServerAddress:
    """Where a server listens: a TCP host and port, or a Unix socket path."""

    host: str | None = None
    port: int | None = None
    uds: str | None = None

    def __post_init__(self) -> None:
        if (self.uds is None) == (self.host is None or self.port is None):
            raise ValueError("a ServerAddress is either host and port, or uds (a socket path)")

    @property
    def ws_url(self) -> str:
        """The session endpoint; for a Unix socket, the URL sent in the handshake."""
        if self.uds is not None:
            return "ws://localhost/ws"
        return f"ws://{_url_host(self.host or '')}:{self.port}/ws"

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT``, what OpenEnv clients take as ``base_url`` (TCP only)."""
        if self.uds is not None:
            raise ValueError(
                f"{self} is a Unix socket; OpenEnv's clients need a TCP address (use --port)"
            )
        return f"http://{_url_host(self.host or '')}:{self.port}"

    def __str__(self) -> str:
        return f"unix:{self.uds}" if self.uds is not None else self.ws_url

    @classmethod
    def parse(cls, text: str) -> ServerAddress:
        """Read ``ws://HOST:PORT[/ws]``, ``http://HOST:PORT``, ``HOST:PORT`` or ``unix:PATH``."""
        text = text.strip()
        if text.startswith("unix:"):
            path = text[len("unix:") :]
            if not path:
                raise ValueError("unix: needs a socket path, e.g. unix:/tmp/envgym.sock")
            return cls(uds=path)
        match = re.fullmatch(r"(?:(?:ws|http)s?://)?(\[[^\]]+\]|[^:/\[\]]+):(\d+)(?:/ws)?/?", text)
        if match is None:
            raise ValueError(
                f"cannot read a server address from {text!r}; expected ws://HOST:PORT, "
                "http://HOST:PORT, HOST:PORT or unix:PATH"
            )
        return cls(host=match.group(1).strip("[]"), port=int(match.group(2)))


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


# ------------------------------------------------------------------ config
@dataclass
class ServerConfig:
    """What one server serves and its limits."""

    env_id: str
    #: keyword arguments for ``gym.make(env_id, ...)``, the same for every session.
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    #: sessions served at once; one more is refused with a CAPACITY_REACHED error.
    max_sessions: int = 256
    #: close sessions with no message for this long (seconds); None or 0: never.
    idle_timeout_s: float | None = 3600.0
    #: send ``info["privileged"]`` (gold answers, solutions) to clients; only for
    #: a trainer that needs it, on an address only it can reach.
    send_privileged: bool = False
    #: close a session whose env call (make, reset, step) takes longer than this
    #: (seconds), with a CALL_TIMEOUT error frame; None or 0: no limit.
    call_timeout_s: float | None = 60.0
    #: refuse client messages longer than this (bytes, close code 1009); None:
    #: `protocol.max_message_bytes` of the env's action space.
    max_message_bytes: int | None = None
    #: WebSocket keep-alive pings; a peer silent for ping_timeout_s after one is dropped.
    ping_interval_s: float | None = 20.0
    ping_timeout_s: float | None = 20.0
    #: stop the server once it has served this many sessions and none is open
    #: (a server for one client, which may die without a word); None: never.
    exit_after_sessions: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_sessions, int) or self.max_sessions < 1:
            raise ValueError(f"max_sessions must be a whole number >= 1, got {self.max_sessions!r}")
        after = self.exit_after_sessions
        if after is not None and (not isinstance(after, int) or after < 1):
            raise ValueError(f"exit_after_sessions must be a whole number >= 1, got {after!r}")
        if self.idle_timeout_s is not None and self.idle_timeout_s < 0:
            raise ValueError(f"idle_timeout_s must be >= 0, got {self.idle_timeout_s!r}")
        if self.call_timeout_s is not None and self.call_timeout_s < 0:
            raise ValueError(f"call_timeout_s must be >= 0, got {self.call_timeout_s!r}")
        limit = self.max_message_bytes
        if limit is not None and (not isinstance(limit, int) or limit < 1024):
            raise ValueError(f"max_message_bytes must be a whole number >= 1024, got {limit!r}")
        if not isinstance(self.send_privileged, bool):
            raise ValueError(f"send_privileged must be True or False, got {self.send_privileged!r}")

    @property
    def idle_timeout(self) -> float | None:
        return self.idle_timeout_s or None

    @property
    def call_timeout(self) -> float | None:
        return self.call_timeout_s or None


# ----------------------------------------------------------------- session
class _EnvThreads:
    """The threads that run env calls off the event loop: as few as keep every call moving.

    Calls wait in one queue. When one has waited `SPAWN_AFTER_S` while every
    thread is at least that long into a call (a sandbox run, a slow search, a
    stuck env), a new thread starts, so a slow env never holds up another
    session's calls for longer than that. A fast env (a step in microseconds)
    stays on one thread: handing a call to a thread that is awake costs
    little, waking a thread per session per call costs a lot (and threads only
    take turns at the GIL). Threads idle for `IDLE_THREAD_S` end, but for one.
    They are daemon threads, so a call that never returns cannot keep the
    process alive once the server has stopped.

    A call given up on (`abandon`) keeps its thread until it returns; then the
    callback given to `when_returned`, if any, runs.
    """

    SPAWN_AFTER_S = 0.005
    IDLE_THREAD_S = 60.0

    def __init__(self, loop: asyncio.AbstractEventLoop, most: int) -> None:
        self._loop = loop
        #: threads at most, not counting those held by abandoned calls
        self._most = most
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._given = 0
        self._taken = 0
        #: when each busy thread began its call (thread id -> time.monotonic())
        self._busy_since: dict[int, float] = {}
        self._check: asyncio.TimerHandle | None = None
        #: calls given up on that still run, and what to do once each returns
        self._abandoned: dict[asyncio.Future[Any], Callable[[], None] | None] = {}

    @property
    def abandoned(self) -> int:
        """Calls given up on that have not returned yet."""
        return len(self._abandoned)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
        """Run ``fn(*args, **kwargs)`` on a thread; its result, as a future of the loop."""
        future = self._loop.create_future()
        self._jobs.put((future, fn, args, kwargs))
        self._given += 1
        if self._threads == 0:
            self._spawn()
        if self._check is None:
            self._check = self._loop.call_later(
                self.SPAWN_AFTER_S, self._spawn_if_stalled, self._given
            )
        return future

    def abandon(self, future: asyncio.Future[Any]) -> None:
        """`future`'s call runs on, but nobody waits for it any more."""
        self._abandoned[future] = None

    def when_returned(self, future: asyncio.Future[Any], then: Callable[[], None]) -> bool:
        """Call `then` once an abandoned call returns; False if it has returned already."""
        if future not in self._abandoned:
            return False
        self._abandoned[future] = then
        return True

    def stop(self) -> None:
        """End every thread once it is done with the calls already given."""
        for _ in range(self._threads):
            self._jobs.put(None)

    # ------------------------------------------------------------ the loop's side
    def _spawn_if_stalled(self, given: int) -> None:
        """Start a thread if a call given `SPAWN_AFTER_S` ago waits behind slow calls only."""
        self._check = None
        if self._taken < given and self._threads - len(self._abandoned) < self._most:
            started = list(self._busy_since.values())
            all_busy = len(started) >= self._threads
            if all_busy and time.monotonic() - max(started, default=0.0) >= self.SPAWN_AFTER_S:
                self._spawn()
        if self._taken < self._given:
            self._check = self._loop.call_later(
                self.SPAWN_AFTER_S, self._spawn_if_stalled, self._given
            )

    def _spawn(self) -> None:
        with self._lock:
            self._threads += 1
        threading.Thread(target=self._work, name="envgym-env", daemon=True).start()

    def _settle(
        self, future: asyncio.Future[Any], result: Any, error: BaseException | None
    ) -> None:
        if future.done():  # given up on: past its deadline, or its session was cancelled
            then = self._abandoned.pop(future, None)
            if then is not None:
                then()
        elif error is None:
            future.set_result(result)
        else:
            future.set_exception(error)

    # ---------------------------------------------------------- the threads' side
    def _work(self) -> None:
        me = threading.get_ident()
        while True:
            try:
                job = self._jobs.get(timeout=self.IDLE_THREAD_S)
            except queue.Empty:
                with self._lock:
                    if self._threads == 1:
                        continue  # the last thread stays
                    self._threads -= 1
                    return
            if job is None:
                with self._lock:
                    self._threads -= 1
                return
            with self._lock:
                self._taken += 1
            future, fn, args, kwargs = job
            self._busy_since[me] = time.monotonic()
            try:
                result, error = fn(*args, **kwargs), None
            except BaseException as exc:
                result, error = None, exc
            del self._busy_since[me]
            try:
                self._loop.call_soon_threadsafe(self._settle, future, result, error)
            except RuntimeError:
                pass  # the loop is closed: the server stopped and nobody waits


class _CallTimedOut(Exception):
    """An env call ran past the server's call deadline; the session must close."""


class _Session:
    """One connection's env and episode bookkeeping."""

    def __init__(self, websocket: WebSocket) -> None:
        self.id = uuid.uuid4().hex
        self.websocket = websocket
        self.env: gym.Env | None = None
        self.episode_id: str | None = None
        self.running = False
        self.terminated = False
        self.truncated = False
        self.turn = 0
        self.episode_return = 0.0
        self.busy = True  # until the env exists
        self.closing = False
        #: the env call in flight, what it is, and when it began
        self.call: asyncio.Future[Any] | None = None
        self.call_name = ""
        self.call_started = 0.0
        #: a call that ran past its deadline and may still be running
        self.late_call: asyncio.Future[Any] | None = None
        self.last_active = time.monotonic()


_RESET_KEYS = ("seed", "options", "episode_id")
_STEP_KEYS = ("action", "metadata")


# ------------------------------------------------------------------ server
class EnvServer:
    """The ASGI app serving one env id; `app` is a FastAPI application.

    Building it makes one env to check the id and kwargs (a `ServerStartError`
    says what is wrong) and to read its spaces for ``/schema``.
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        probe = _make_env(config.env_id, config.env_kwargs)
        try:
            self.observation_space = probe.observation_space
            self.action_space = probe.action_space
        finally:
            probe.close()
        #: the longest client message read; a longer one closes its session (1009).
        self.max_message_bytes = config.max_message_bytes or max_message_bytes(self.action_space)
        self.sessions: dict[str, _Session] = {}
        self.sessions_served = 0
        self.sessions_refused = 0
        self._closers: set[asyncio.Task[None]] = set()
        #: sessions with an env call in flight, for the deadline watch
        self._calling: set[_Session] = set()
        self._threads: _EnvThreads | None = None  # made with the loop, in lifespan
        #: called once `config.exit_after_sessions` sessions have ended (stops uvicorn)
        self.on_done: Callable[[], None] | None = None
        self.app = self._build_app()

    # -------------------------------------------------------------- routes
    def _build_app(self) -> FastAPI:
        from fastapi import FastAPI

        @contextlib.asynccontextmanager
        async def lifespan(_app: FastAPI):
            self._threads = _EnvThreads(asyncio.get_running_loop(), self.config.max_sessions)
            watches = [
                asyncio.create_task(self._reap_idle_sessions()),
                asyncio.create_task(self._expire_late_calls()),
            ]
            try:
                yield
            finally:
                for task in watches:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                self._threads.stop()

        app = FastAPI(
            title=f"envgym server: {self.config.env_id}",
            description="An envgym environment over OpenEnv's WebSocket session protocol at /ws.",
            lifespan=lifespan,
        )

        @app.get("/health")
        async def health() -> dict[str, Any]:
            return {
                "status": "healthy",
                "env_id": self.config.env_id,
                "sessions": len(self.sessions),
                "max_sessions": self.config.max_sessions,
                "sessions_served": self.sessions_served,
                "sessions_refused": self.sessions_refused,
                "calls_past_deadline": self.calls_past_deadline(),
                "send_privileged": self.config.send_privileged,
            }

        @app.get("/schema")
        async def schema() -> dict[str, Any]:
            return self.schema()

        # A plain Starlette route: the session handler needs no dependency injection.
        app.router.add_websocket_route("/ws", self._serve_session)

        return app

    def schema(self) -> dict[str, Any]:
        """What ``GET /schema`` returns: OpenEnv's three JSON Schemas plus envgym's spaces."""
        import envgym

        action = text_space_to_json(self.action_space)
        observation = text_space_to_json(self.observation_space)
        return {
            "action": {
                "type": "object",
                "properties": {
                    "action": {
                        "type": "string",
                        "maxLength": action["max_length"],
                        "description": "the model's whole reply, e.g. <answer>Up</answer>",
                    },
                },
                "required": ["action"],
            },
            "observation": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "maxLength": observation["max_length"]},
                    "info": {
                        "type": "object",
                        "description": "the env's info dict"
                        + ("" if self.config.send_privileged else ", without 'privileged'"),
                    },
                },
                "required": ["text", "info"],
            },
            "state": {
                "type": "object",
                "properties": {
                    "episode_id": {"type": ["string", "null"]},
                    "step_count": {"type": "integer"},
                    "env_id": {"type": "string"},
                    "running": {"type": "boolean"},
                    "terminated": {"type": "boolean"},
                    "truncated": {"type": "boolean"},
                    "episode_return": {"type": "number"},
                },
            },
            "env_id": self.config.env_id,
            "env_kwargs": to_jsonable(self.config.env_kwargs),
            "action_space": action,
            "observation_space": observation,
            "protocol_version": PROTOCOL_VERSION,
            "envgym_version": envgym.__version__,
            "max_sessions": self.config.max_sessions,
            "idle_timeout_s": self.config.idle_timeout,
            "call_timeout_s": self.config.call_timeout,
            "max_message_bytes": self.max_message_bytes,
            "send_privileged": self.config.send_privileged,
        }

    def calls_past_deadline(self) -> int:
        """Env calls that ran past the call deadline and still run in the background."""
        return 0 if self._threads is None else self._threads.abandoned

    # ------------------------------------------------------------ sessions
    async def _serve_session(self, websocket: WebSocket) -> None:
        from starlette.websockets import WebSocketDisconnect

        if len(self.sessions) >= self.config.max_sessions:
            self.sessions_refused += 1
            await self._refuse(websocket)
            return
        session = _Session(websocket)
        # Registered before the first await, so concurrent connects count each other.
        self.sessions[session.id] = session
        self.sessions_served += 1
        try:
            await websocket.accept()
            try:
                await self._run(session, "gym.make()", _open_env, session, self.config)
            except ServerStartError as exc:
                await self._send(session, error_frame(ErrorCode.FACTORY_ERROR, str(exc)))
                await websocket.close(CLOSE_SERVER_ERROR, "could not make the env")
                return
            session.busy = False
            session.last_active = time.monotonic()
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect" or session.closing:
                    break
                session.busy = True
                raw = message.get("text")
                if raw is None:
                    raw = (message.get("bytes") or b"").decode("utf-8", errors="replace")
                reply, close = await self._handle(session, raw)
                if reply is not None:
                    await self._send(session, reply)
                session.busy = False
                session.last_active = time.monotonic()
                if close:
                    await websocket.close(CLOSE_NORMAL, "session closed by the client")
                    break
        except _CallTimedOut as exc:
            await self._close_timed_out(session, str(exc))
        except (WebSocketDisconnect, OSError):
            pass  # the client went away; its env is closed below
        except RuntimeError as exc:
            # Starlette's answer to a send or receive after the close handshake
            # (the reaper closed this session while a message was arriving).
            logger.debug("session %s ended: %s", session.id, exc)
        finally:
            del self.sessions[session.id]
            await self._close_env(session)
            after = self.config.exit_after_sessions
            if after is not None and self.sessions_served >= after and not self.sessions:
                if self.on_done is not None:
                    self.on_done()

    async def _refuse(self, websocket: WebSocket) -> None:
        limit = self.config.max_sessions
        message = (
            f"the server already holds its limit of {limit} sessions; close a session or "
            f"start the server with a higher --max-sessions (now {limit})"
        )
        frame = error_frame(
            ErrorCode.CAPACITY_REACHED,
            message,
            active_sessions=len(self.sessions),
            max_sessions=limit,
        )
        reason = f"session limit {limit} reached; raise it with --max-sessions"
        with contextlib.suppress(Exception):  # a client that left before hearing why
            await websocket.accept()
            await websocket.send_text(encode_frame(frame))
            await websocket.close(CLOSE_TRY_AGAIN_LATER, reason)

    async def _send(self, session: _Session, frame: dict[str, Any]) -> None:
        await session.websocket.send_text(encode_frame(frame))

    async def _close_timed_out(self, session: _Session, message: str) -> None:
        timeout = self.config.call_timeout or 0
        with contextlib.suppress(Exception):  # the client may be gone already
            await self._send(session, error_frame(ErrorCode.CALL_TIMEOUT, message))
            await session.websocket.close(
                CLOSE_CALL_TIMEOUT, f"env call past the --call-timeout of {timeout:g} s"
            )

    async def _close_env(self, session: _Session) -> None:
        """Close the session's env on a thread, after any call of its still running."""
        assert self._threads is not None
        late = session.late_call
        if late is not None and self._threads.when_returned(
            late, functools.partial(self._threads.call, _close_env_quietly, session)
        ):
            return  # the env closes once the late call returns; nobody waits for it
        try:
            await self._run(session, "env.close()", _close_env_of, session)
        except _CallTimedOut:
            logger.warning("closing the env of session %s ran past the call deadline", session.id)
        except Exception:  # a failing close must not take the server down
            logger.exception("closing the env of session %s failed", session.id)

    async def _reap_idle_sessions(self) -> None:
        timeout = self.config.idle_timeout
        if timeout is None:
            return
        interval = min(max(timeout / 4, 0.05), 5.0)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if session.busy or session.closing or now - session.last_active < timeout:
                    continue
                session.closing = True
                task = asyncio.create_task(self._close_idle(session, timeout))
                # The loop keeps only weak references to tasks; hold each until it is done.
                self._closers.add(task)
                task.add_done_callback(self._closers.discard)

    async def _close_idle(self, session: _Session, timeout: float) -> None:
        message = (
            f"this session sent nothing for {timeout:g} s (the server's --idle-timeout) and "
            "was closed; connect again to start a new one"
        )
        with contextlib.suppress(Exception):  # the client may be gone already
            await self._send(session, error_frame(ErrorCode.IDLE_TIMEOUT, message))
            await session.websocket.close(CLOSE_IDLE, f"idle for more than {timeout:g} s")

    # ------------------------------------------------------------ messages
    async def _handle(self, session: _Session, raw: str) -> tuple[dict[str, Any] | None, bool]:
        """The reply to one message, and whether to close the session after it."""
        try:
            message = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
            return _invalid_json(raw, exc), False
        if not isinstance(message, dict):
            return error_frame(
                ErrorCode.VALIDATION_ERROR,
                f"expected a JSON object with a 'type' field, got {type(message).__name__}",
            ), False
        kind = message.get("type")
        data = message.get("data")
        if data is None:
            data = {}
        if not isinstance(data, dict):
            return error_frame(
                ErrorCode.VALIDATION_ERROR,
                f"'data' must be a JSON object, got {type(data).__name__}",
            ), False
        if kind == "step":
            return await self._step(session, data), False
        if kind == "reset":
            return await self._reset(session, data), False
        if kind == "state":
            return {"type": "state", "data": self._state(session)}, False
        if kind == "close":
            return None, True
        return error_frame(
            ErrorCode.UNKNOWN_TYPE,
            f"unknown message type {kind!r}; send one of 'reset', 'step', 'state', 'close'",
        ), False

    async def _reset(self, session: _Session, data: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(data) - set(_RESET_KEYS))
        if unknown:
            return error_frame(
                ErrorCode.VALIDATION_ERROR,
                f"unknown reset field(s) {unknown}; reset takes 'seed' (int >= 0), "
                "'options' (object) and 'episode_id' (string)",
            )
        seed, options, episode_id = data.get("seed"), data.get("options"), data.get("episode_id")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
            return error_frame(
                ErrorCode.VALIDATION_ERROR, f"seed must be an integer >= 0 or null, got {seed!r}"
            )
        if options is not None and not isinstance(options, dict):
            return error_frame(
                ErrorCode.VALIDATION_ERROR, f"options must be an object or null, got {options!r}"
            )
        if episode_id is not None and not isinstance(episode_id, str):
            return error_frame(
                ErrorCode.VALIDATION_ERROR, f"episode_id must be a string, got {episode_id!r}"
            )
        assert session.env is not None
        try:
            obs, info = await self._run(
                session, "env.reset()", session.env.reset, seed=seed, options=options
            )
        except _CallTimedOut:
            raise
        except Exception as exc:
            return _env_error("reset", exc)
        session.episode_id = episode_id or uuid.uuid4().hex
        session.running = True
        session.terminated = session.truncated = False
        session.turn = 0
        session.episode_return = 0.0
        return observation_frame(
            obs,
            self._sent_info(info),
            reward=0.0,
            terminated=False,
            truncated=False,
            episode_id=session.episode_id,
            turn=0,
        )

    async def _step(self, session: _Session, data: dict[str, Any]) -> dict[str, Any]:
        action = data.get("action")
        if not isinstance(action, str) or set(data) - set(_STEP_KEYS):
            return error_frame(
                ErrorCode.VALIDATION_ERROR,
                'a step message is {"type": "step", "data": {"action": "<the model\'s reply>"}}'
                f"; got data with fields {sorted(data)}"
                + ("" if action is None or isinstance(action, str) else " and a non-text action"),
            )
        if not session.running:
            if session.episode_id is None:
                text = 'no episode is running in this session; send {"type": "reset"} first'
            else:
                how = "terminated" if session.terminated else "was truncated"
                turns = f"{session.turn} turn" + ("" if session.turn == 1 else "s")
                text = f'the episode {how} after {turns}; send {{"type": "reset"}} to start another'
            return error_frame(ErrorCode.RESET_NEEDED, text)
        assert session.env is not None
        try:
            obs, reward, terminated, truncated, info = await self._run(
                session, "env.step()", session.env.step, action
            )
        except _CallTimedOut:
            raise
        except gym.error.ResetNeeded as exc:
            session.running = False
            return error_frame(ErrorCode.RESET_NEEDED, str(exc))
        except Exception as exc:
            return _env_error("step", exc)
        session.turn += 1
        session.episode_return += float(reward)
        session.terminated, session.truncated = bool(terminated), bool(truncated)
        session.running = not (terminated or truncated)
        return observation_frame(
            obs,
            self._sent_info(info),
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            episode_id=session.episode_id or "",
            turn=session.turn,
        )

    def _state(self, session: _Session) -> dict[str, Any]:
        return {
            "episode_id": session.episode_id,
            "step_count": session.turn,
            "env_id": self.config.env_id,
            "running": session.running,
            "terminated": session.terminated,
            "truncated": session.truncated,
            "episode_return": session.episode_return,
        }

    def _sent_info(self, info: Mapping[str, Any]) -> Mapping[str, Any]:
        return info if self.config.send_privileged else public_info(info)

    # ----------------------------------------------------------- env calls
    async def _run(
        self, session: _Session, call: str, fn: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Any:
        """``fn(*args, **kwargs)`` on an env thread; `_CallTimedOut` (naming `call`)
        once it runs past the call deadline (see `_expire_late_calls`). A session
        makes one call at a time, so its calls run in order."""
        assert self._threads is not None
        session.call = self._threads.call(fn, *args, **kwargs)
        session.call_name, session.call_started = call, time.monotonic()
        self._calling.add(session)
        try:
            return await session.call
        except asyncio.CancelledError:
            if session.call.cancelled():  # still running: the env closes after it
                session.late_call = session.call
                self._threads.abandon(session.call)
            raise
        finally:
            session.call = None
            self._calling.discard(session)

    async def _expire_late_calls(self) -> None:
        """Fail each env call past the call deadline with `_CallTimedOut`.

        One watch for all sessions rather than a timer per call: a step stays a
        queue hand-off. A call fails within a quarter of the deadline (at most a
        second) after it passes.
        """
        timeout = self.config.call_timeout
        if timeout is None:
            return
        interval = min(max(timeout / 4, 0.02), 1.0)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for session in list(self._calling):
                call = session.call
                if call is None or call.done() or now - session.call_started < timeout:
                    continue
                call.set_exception(_CallTimedOut(_timed_out_message(session.call_name, timeout)))
                session.late_call = call
                assert self._threads is not None
                self._threads.abandon(call)


def _open_env(session: _Session, config: ServerConfig) -> None:
    """Make the session's env (on its thread, so a late close still finds it)."""
    session.env = _make_env(config.env_id, config.env_kwargs, checked=False)


def _close_env_of(session: _Session) -> None:
    if session.env is not None:
        session.env.close()


def _close_env_quietly(session: _Session) -> None:
    try:
        _close_env_of(session)
    except Exception:
        logger.exception("closing the env of session %s failed", session.id)


def _timed_out_message(call: str, timeout_s: float) -> str:
    return (
        f"{call} did not return within {timeout_s:g} s (the server's --call-timeout), so the "
        "server closed this session: an env stopped mid-call cannot be trusted. Open a new "
        "session (RemoteEnv: reset()) to go on; if the env is just slow, start the server "
        "with a higher --call-timeout"
    )


def _make_env(env_id: str, env_kwargs: Mapping[str, Any], checked: bool = True) -> gym.Env:
    """`gym.make`, with errors that say what to fix.

    Session envs go without Gymnasium's passive env checker: the probe env made
    at start-up had it, and after a first reset that raises (a bad option from
    a client) the checker breaks the next step (gymnasium 1.4).
    """
    from envgym.evaluation import EvaluationError, make_text_env

    if not checked:
        env_kwargs = {**env_kwargs, "disable_env_checker": True}
    try:
        return make_text_env(env_id, env_kwargs)
    except KeyError as exc:
        raise ServerStartError(exc.args[0] if exc.args else str(exc)) from None
    except EvaluationError as exc:
        raise ServerStartError(str(exc)) from None


def _invalid_json(raw: str, exc: Exception) -> dict[str, Any]:
    shown = raw if len(raw) <= 80 else raw[:77] + "..."
    return error_frame(
        ErrorCode.INVALID_JSON,
        f"message is not valid JSON ({exc}): {shown!r}; send one JSON object per text frame, "
        'e.g. {"type": "reset", "data": {"seed": 0}}',
    )


def _env_error(method: str, exc: Exception) -> dict[str, Any]:
    return error_frame(
        ErrorCode.EXECUTION_ERROR,
        f"env.{method}() raised {type(exc).__name__}: {exc}",
        exception=type(exc).__name__,
    )


# ----------------------------------------------------------------- serving
def _bind(host: str, port: int, uds: str | os.PathLike[str] | None) -> socket.socket:
    """A listening socket; a stale socket file at `uds` is replaced, a live one is an error."""
    try:
        # Owner-only: a session holds an env (and, with --send-privileged, its
        # answers); another local user has no business connecting.
        return listening_socket(host, port, uds, uds_mode=0o600)
    except ListenError as exc:
        raise ServerStartError(str(exc)) from None


def _address_of(sock: socket.socket) -> ServerAddress:
    if sock.family == socket.AF_UNIX:
        return ServerAddress(uds=sock.getsockname())
    host, port = sock.getsockname()[:2]
    return ServerAddress(host=host, port=port)


def _uvicorn_server(server: EnvServer, log_level: str, on_ready: Callable[[], None] | None) -> Any:
    import uvicorn

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and on_ready is not None:
                on_ready()

    config = uvicorn.Config(
        server.app,
        log_level=log_level,
        access_log=False,
        ws="websockets-sansio",
        # Deflate costs more than it saves on short text over a local link.
        ws_per_message_deflate=False,
        ws_ping_interval=server.config.ping_interval_s,
        ws_ping_timeout=server.config.ping_timeout_s,
        # Refused (close 1009) as the frame header arrives, before it is buffered.
        ws_max_size=server.max_message_bytes,
        timeout_graceful_shutdown=5,
        lifespan="on",
    )
    uv = _Server(config)
    server.on_done = functools.partial(setattr, uv, "should_exit", True)
    return uv


def serve(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    uds: str | os.PathLike[str] | None = None,
    max_sessions: int = 256,
    idle_timeout_s: float | None = 3600.0,
    send_privileged: bool = False,
    call_timeout_s: float | None = 60.0,
    max_message_bytes: int | None = None,
    ping_interval_s: float | None = 20.0,
    ping_timeout_s: float | None = 20.0,
    exit_after_sessions: int | None = None,
    log_level: str = "warning",
    on_ready: Callable[[ServerAddress], None] | None = None,
) -> None:
    """Serve `env_id` until interrupted (SIGINT/SIGTERM when run in the main thread).

    Listens on `uds` when given, else on `host`:`port` (port 0 picks a free
    one). `on_ready(address)` is called once sessions are accepted. The other
    arguments are `ServerConfig`'s fields.
    """
    config = ServerConfig(
        env_id=env_id,
        env_kwargs=dict(env_kwargs or {}),
        max_sessions=max_sessions,
        idle_timeout_s=idle_timeout_s,
        send_privileged=send_privileged,
        call_timeout_s=call_timeout_s,
        max_message_bytes=max_message_bytes,
        ping_interval_s=ping_interval_s,
        ping_timeout_s=ping_timeout_s,
        exit_after_sessions=exit_after_sessions,
    )
    server = EnvServer(config)
    sys.setswitchinterval(float(os.environ.get("X_SWITCH", "0.005")))  # EXPERIMENT
    sock = _bind(host, port, uds)
    address = _address_of(sock)
    ready = None if on_ready is None else functools.partial(on_ready, address)
    with _sigterm_as_exception():
        try:
            _uvicorn_server(server, log_level, ready).run(sockets=[sock])
        except _Terminated:
            pass  # a clean stop, as asked (docker stop, kill)
        finally:
            sock.close()
            if address.uds is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(address.uds)


class _Terminated(Exception):
    pass


def _raise_terminated(_signum: int, _frame: Any) -> None:
    raise _Terminated


@contextlib.contextmanager
def _sigterm_as_exception() -> Iterator[None]:
    """Make SIGTERM an exception while serving, so the socket file is removed.

    uvicorn handles SIGTERM itself (a graceful shutdown), then raises the signal
    again for the previous handler; with the default one the process would die
    before cleaning up.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    import signal

    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def ready_line(env_id: str, address: ServerAddress) -> str:
    """The line ``envgym serve`` prints once it accepts sessions."""
    return f"{READY_LINE_PREFIX}{env_id} at {address}"


def parse_ready_line(line: str) -> ServerAddress | None:
    """The address in a `ready_line`, or None if `line` is not one."""
    if not line.startswith(READY_LINE_PREFIX) or " at " not in line:
        return None
    return ServerAddress.parse(line.rstrip("\r\n").split(" at ", 1)[1])


@contextlib.contextmanager
def serve_in_background(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    uds: str | os.PathLike[str] | None = None,
    log_level: str = "warning",
    startup_timeout_s: float = 60.0,
    **options: Any,
) -> Iterator[ServerAddress]:
    """Run a server in a thread of this process while the block runs; yields its address.

    `options` are `ServerConfig` fields (max_sessions, idle_timeout_s,
    send_privileged, call_timeout_s, ...).
    """
    config = ServerConfig(env_id=env_id, env_kwargs=dict(env_kwargs or {}), **options)
    server = EnvServer(config)
    sock = _bind(host, port, uds)
    address = _address_of(sock)
    started = threading.Event()
    failure: list[BaseException] = []
    uv = _uvicorn_server(server, log_level, started.set)

    def run() -> None:
        try:
            uv.run(sockets=[sock])
        except BaseException as exc:  # SystemExit from a failed startup included
            failure.append(exc)
        finally:
            started.set()

    thread = threading.Thread(target=run, name=f"envgym-serve-{env_id}", daemon=True)
    thread.start()
    try:
        if not started.wait(startup_timeout_s) or failure or not uv.started:
            raise ServerStartError(
                f"the server for {env_id} did not start"
                + (f": {failure[0]!r}" if failure else f" within {startup_timeout_s:g} s")
            )
        yield address
    finally:
        uv.should_exit = True
        thread.join(timeout=30)
        sock.close()
        if address.uds is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(address.uds)


def serve_command(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    uds: str | os.PathLike[str] | None = None,
    max_sessions: int | None = None,
    idle_timeout_s: float | None = None,
    exit_after_sessions: int | None = None,
    send_privileged: bool = False,
    call_timeout_s: float | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The arguments after ``envgym`` that serve `env_id` (for a subprocess or a container).

    None leaves a limit at ``envgym serve``'s default; `send_privileged` adds
    ``--send-privileged``.
    """
    args = ["serve", env_id]
    if uds is not None:
        args += ["--uds", os.fspath(uds)]
    else:
        args += ["--host", host, "--port", str(0 if port is None else port)]
    if max_sessions is not None:
        args += ["--max-sessions", str(max_sessions)]
    if idle_timeout_s is not None:
        args += ["--idle-timeout", f"{idle_timeout_s:g}"]
    if exit_after_sessions is not None:
        args += ["--exit-after", str(exit_after_sessions)]
    if call_timeout_s is not None:
        args += ["--call-timeout", f"{call_timeout_s:g}"]
    if send_privileged:
        args += ["--send-privileged"]
    if env_kwargs:
        args += ["--kwargs", json.dumps(to_jsonable(dict(env_kwargs)))]
    return args + list(extra_args)


class ServerProcess:
    """An ``envgym serve`` child process; `address` is set once it accepts sessions."""

    def __init__(self, argv: Sequence[str], startup_timeout_s: float = 60.0) -> None:
        self.argv = list(argv)
        self.output: collections.deque[str] = collections.deque(maxlen=200)
        self.process = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        found = threading.Event()
        self._address: ServerAddress | None = None

        def read() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self.output.append(line.rstrip("\n"))
                if self._address is None:
                    self._address = parse_ready_line(line)
                    if self._address is not None:
                        found.set()
            found.set()

        self._reader = threading.Thread(target=read, name="envgym-serve-output", daemon=True)
        self._reader.start()
        if not found.wait(startup_timeout_s) or self._address is None:
            self.stop()
            said = "\n".join(self.output) or "(no output)"
            raise ServerStartError(
                f"`envgym {' '.join(self.argv[3:])}` did not start; it printed:\n{said}"
            )

    @property
    def address(self) -> ServerAddress:
        assert self._address is not None
        return self._address

    def stop(self, timeout_s: float = 15.0) -> int | None:
        """SIGTERM, then SIGKILL if it has not exited after `timeout_s`; the exit status."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=5)
        return self.process.returncode


@contextlib.contextmanager
def serve_in_subprocess(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    startup_timeout_s: float = 60.0,
    **options: Any,
) -> Iterator[ServerProcess]:
    """Run ``envgym serve`` (this interpreter, ``-m envgym``) while the block runs.

    `options` are `serve_command`'s (host, port, uds, max_sessions, idle_timeout_s,
    send_privileged, call_timeout_s, extra_args); the port defaults to 0, a free
    one. Yields the `ServerProcess`.
    """
    argv = [sys.executable, "-m", "envgym", *serve_command(env_id, env_kwargs, **options)]
    server = ServerProcess(argv, startup_timeout_s)
    try:
        yield server
    finally:
        server.stop()
