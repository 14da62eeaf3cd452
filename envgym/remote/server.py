"""The envgym env server: any registered env over OpenEnv's WebSocket protocol.

One WebSocket connection at ``/ws`` is one env instance, made with
``gym.make(env_id, **env_kwargs)`` when the connection opens and closed when
it ends. ``GET /health`` says the server is up and how many sessions it holds;
``GET /schema`` describes the env (id, kwargs, Text spaces, JSON Schemas of
the messages). The wire format is in `envgym.remote.protocol`, its pydantic
models in `envgym.remote.messages`. `EnvServer.app` is the ASGI app;
`envgym.remote.launcher` runs it (``envgym serve``, `serve_in_background`,
`serve_in_subprocess`).

What a server guards:

- Privileged data. Observation frames carry the env's ``info`` without
  ``info["privileged"]`` (gold answers, solutions, an opponent's hidden card):
  any client that reaches the port or socket could read it. A server for a
  trainer that needs it opts in with ``send_privileged=True``
  (``envgym serve ID --send-privileged``); ``GET /schema`` and ``GET /health``
  say which (``send_privileged``), and `RemoteEnv.privileged_sent` reads it.
- The event loop. Env calls (make, reset, step, close) run on threads
  (`envgym.remote.threads`), each session's one at a time and in order, so a
  slow env stalls only its own session. A call that takes
  longer than ``call_timeout_s`` (``--call-timeout``, 60 s by default) is
  answered with a CALL_TIMEOUT error frame and the session is closed (code
  4504): an env stopped mid-call cannot be trusted. Python cannot stop a
  thread, so the call runs on in the background until it returns and then the
  env is closed; ``GET /health`` counts such calls (``calls_past_deadline``).
  Steps of envs that declare ``fast_calls`` run on the loop instead, unless
  the server runs with ``calls="threads"`` (see `envgym.remote.inline`).
- Memory. A client message longer than `max_message_bytes` (the longest
  action the env's space holds plus 64 KiB; ``--max-message-bytes``) closes
  its session with code 1009 before it is read whole (the launcher sets
  uvicorn's limit); other sessions go on.

fastapi is imported only when a server is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from envgym.remote.config import ServerConfig, ServerStartError
from envgym.remote.forks import Forks
from envgym.remote.inline import InlineCalls
from envgym.remote.messages import (
    FORK_REQUESTS,
    BadRequest,
    HealthReply,
    MetadataReply,
    ResetData,
    ResetRequest,
    SchemaReply,
    SessionState,
    StepRequest,
    error_reply,
    observation_reply,
    read_request,
    state_reply,
)
from envgym.remote.protocol import (
    CLOSE_CALL_TIMEOUT,
    CLOSE_IDLE,
    CLOSE_NORMAL,
    CLOSE_SERVER_ERROR,
    CLOSE_TRY_AGAIN_LATER,
    PROTOCOL_VERSION,
    ErrorCode,
    max_message_bytes,
    public_info,
    text_space_to_json,
    to_jsonable,
)
from envgym.remote.sessions import (
    CallTimedOut,
    Session,
    close_env_of,
    close_env_quietly,
    declares_fast_calls,
    env_error,
    env_metadata,
    every_quarter_of,
    make_env,
    open_env,
    timed_out_message,
)
from envgym.remote.threads import EnvThreads
from envgym.version import __version__

if TYPE_CHECKING:
    from fastapi import FastAPI, WebSocket

__all__ = ["EnvServer"]

logger = logging.getLogger("envgym.remote")


class EnvServer:
    """The ASGI app serving one env id; `app` is a FastAPI application.

    Building it makes one env to check the id and kwargs (a `ServerStartError`
    says what is wrong) and to read its spaces for ``/schema``.
    """

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        probe = make_env(config.env_id, config.env_kwargs)
        try:
            self.observation_space = probe.observation_space
            self.action_space = probe.action_space
        finally:
            probe.close()
        #: the longest client message read; a longer one closes its session (1009).
        self.max_message_bytes = config.max_message_bytes or max_message_bytes(self.action_space)
        self.sessions: dict[str, Session] = {}
        self.sessions_served = 0
        self.sessions_refused = 0
        self._closers: set[asyncio.Task[None]] = set()
        #: sessions with an env call in flight, for the deadline watch
        self._calling: set[Session] = set()
        self._threads: EnvThreads | None = None  # made with the loop, in lifespan
        self._inline = InlineCalls(config.env_id, enabled=config.calls == "auto")
        #: called once `config.exit_after_sessions` sessions have ended (stops the server)
        self.on_done: Callable[[], None] | None = None
        #: snapshot handles and forks not yet attached to (``snapshot``, ``restore``, ``fork``)
        self.forks = Forks(config, self._run, self._close_env, self._stop_if_done)
        self.app = self._build_app()

    # -------------------------------------------------------------- routes
    def _build_app(self) -> FastAPI:
        from fastapi import FastAPI

        @contextlib.asynccontextmanager
        async def lifespan(_app: FastAPI):
            self._threads = EnvThreads(asyncio.get_running_loop(), self.config.max_sessions)
            watches = [
                asyncio.create_task(self._reap_idle_sessions()),
                asyncio.create_task(self._expire_late_calls()),
                asyncio.create_task(self.forks.watch()),
            ]
            try:
                yield
            finally:
                for task in watches:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                self.forks.close_pending()
                self._threads.stop()

        app = FastAPI(
            title=f"envgym server: {self.config.env_id}",
            description="An envgym environment over OpenEnv's WebSocket session protocol at /ws.",
            lifespan=lifespan,
        )
        schema = self.schema()

        @app.get("/health")
        async def health() -> HealthReply:
            return HealthReply(
                env_id=self.config.env_id,
                sessions=len(self.sessions),
                max_sessions=self.config.max_sessions,
                sessions_served=self.sessions_served,
                sessions_refused=self.sessions_refused,
                calls_past_deadline=self.calls_past_deadline(),
                send_privileged=self.config.send_privileged,
                snapshots=len(self.forks.store),
                pending_forks=self.forks.pending_count,
            )

        @app.get("/schema")
        async def get_schema() -> SchemaReply:
            return schema

        @app.get("/metadata")
        async def get_metadata() -> MetadataReply:
            return metadata()

        metadata = functools.cache(self.metadata)

        # A plain Starlette route: the session handler needs no dependency injection.
        app.router.add_websocket_route("/ws", self._serve_session)

        return app

    def metadata(self) -> MetadataReply:
        """What ``GET /metadata`` returns (`env_metadata`)."""
        return env_metadata(self.config.env_id)

    def schema(self) -> SchemaReply:
        """What ``GET /schema`` returns: OpenEnv's three JSON Schemas plus envgym's spaces."""
        return SchemaReply.describe(
            text_space_to_json(self.action_space),
            text_space_to_json(self.observation_space),
            self.config.send_privileged,
            env_id=self.config.env_id,
            env_kwargs=to_jsonable(self.config.env_kwargs),
            protocol_version=PROTOCOL_VERSION,
            envgym_version=__version__,
            max_sessions=self.config.max_sessions,
            idle_timeout_s=self.config.idle_timeout,
            call_timeout_s=self.config.call_timeout,
            max_message_bytes=self.max_message_bytes,
            max_snapshots=self.config.max_snapshots,
            max_snapshot_bytes=self.config.max_snapshot_bytes,
            snapshot_ttl_s=self.config.snapshot_ttl_s,
        )

    def calls_past_deadline(self) -> int:
        """Env calls that ran past the call deadline and still run in the background."""
        return 0 if self._threads is None else self._threads.abandoned

    # ------------------------------------------------------------ sessions
    async def _serve_session(self, websocket: WebSocket) -> None:
        from starlette.websockets import WebSocketDisconnect

        token = websocket.query_params.get("fork")
        if token is not None:  # a forked session, its env made and restored already
            forked = self.forks.attach(token)
            if forked is None:
                await self.forks.refuse(websocket)
                return
            session, forked.websocket = forked, websocket
        elif len(self.sessions) + self.forks.pending_count >= self.config.max_sessions:
            self.sessions_refused += 1
            await self._refuse(websocket)
            return
        else:
            session = Session(websocket)
        # Registered before the first await, so concurrent connects count each other.
        self.sessions[session.id] = session
        self.sessions_served += 1
        try:
            await websocket.accept()
            try:
                if session.env is None:
                    await self._run(session, "gym.make()", open_env, session, self.config)
            except ServerStartError as exc:
                await websocket.send_text(error_reply(ErrorCode.FACTORY_ERROR, str(exc)))
                await websocket.close(CLOSE_SERVER_ERROR, "could not make the env")
                return
            session.inline = self._inline.enabled and declares_fast_calls(session.env)
            session.busy = False
            session.last_active = time.monotonic()
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect" or session.closing:
                    break
                session.busy = True
                raw = message.get("text")
                if raw is None:
                    raw = message.get("bytes") or b""
                reply, close = await self._handle(session, raw)
                if reply is not None:
                    await websocket.send_text(reply)
                session.busy = False
                session.last_active = time.monotonic()
                if close:
                    await websocket.close(CLOSE_NORMAL, "session closed by the client")
                    break
        except CallTimedOut as exc:
            await self._close_timed_out(session, str(exc))
        except (WebSocketDisconnect, OSError):
            pass  # the client went away; its env is closed below
        except RuntimeError as exc:
            # Starlette's answer to a send or receive after the close handshake
            # (the reaper closed this session while a message was arriving).
            logger.debug("session %s ended: %s", session.id, exc)
        finally:
            del self.sessions[session.id]
            self.forks.store.drop_owner(session.id)
            await self._close_env(session)
            self._stop_if_done()

    def _stop_if_done(self) -> None:
        """`on_done()` once exit_after_sessions were served and none is open or pending."""
        after, idle = self.config.exit_after_sessions, not self.sessions
        if after is not None and self.sessions_served >= after and idle:
            if not self.forks.pending_count and self.on_done is not None:
                self.on_done()

    async def _refuse(self, websocket: WebSocket) -> None:
        limit = self.config.max_sessions
        message = (
            f"the server already holds its limit of {limit} sessions; close a session or "
            f"start the server with a higher --max-sessions (now {limit})"
        )
        reply = error_reply(
            ErrorCode.CAPACITY_REACHED,
            message,
            active_sessions=len(self.sessions),
            max_sessions=limit,
        )
        reason = f"session limit {limit} reached; raise it with --max-sessions"
        with contextlib.suppress(Exception):  # a client that left before hearing why
            await websocket.accept()
            await websocket.send_text(reply)
            await websocket.close(CLOSE_TRY_AGAIN_LATER, reason)

    async def _close_timed_out(self, session: Session, message: str) -> None:
        timeout = self.config.call_timeout or 0
        with contextlib.suppress(Exception):  # the client may be gone already
            await session.websocket.send_text(error_reply(ErrorCode.CALL_TIMEOUT, message))
            await session.websocket.close(
                CLOSE_CALL_TIMEOUT, f"env call past the --call-timeout of {timeout:g} s"
            )

    async def _close_env(self, session: Session) -> None:
        """Close the session's env on a thread, after any call of its still running."""
        assert self._threads is not None
        late = session.late_call
        if late is not None and self._threads.when_returned(
            late, functools.partial(self._threads.call, close_env_quietly, session)
        ):
            return  # the env closes once the late call returns; nobody waits for it
        try:
            await self._run(session, "env.close()", close_env_of, session)
        except CallTimedOut:
            logger.warning("closing the env of session %s ran past the call deadline", session.id)
        except Exception:  # a failing close must not take the server down
            logger.exception("closing the env of session %s failed", session.id)

    async def _reap_idle_sessions(self) -> None:
        timeout = self.config.idle_timeout
        if timeout is None:
            return
        async for now in every_quarter_of(timeout, shortest=0.05, longest=5.0):
            for session in list(self.sessions.values()):
                if session.busy or session.closing or now - session.last_active < timeout:
                    continue
                session.closing = True
                task = asyncio.create_task(self._close_idle(session, timeout))
                # The loop keeps only weak references to tasks; hold each until it is done.
                self._closers.add(task)
                task.add_done_callback(self._closers.discard)

    async def _close_idle(self, session: Session, timeout: float) -> None:
        message = (
            f"this session sent nothing for {timeout:g} s (the server's --idle-timeout) and "
            "was closed; connect again to start a new one"
        )
        with contextlib.suppress(Exception):  # the client may be gone already
            await session.websocket.send_text(error_reply(ErrorCode.IDLE_TIMEOUT, message))
            await session.websocket.close(CLOSE_IDLE, f"idle for more than {timeout:g} s")

    # ------------------------------------------------------------ messages
    async def _handle(self, session: Session, raw: str | bytes) -> tuple[str | None, bool]:
        """The reply to one message (JSON text), and whether to close the session after it."""
        try:
            request = read_request(raw)
        except BadRequest as exc:
            return error_reply(exc.code, str(exc)), False
        if isinstance(request, StepRequest):
            return await self._step(session, request.data.action), False
        if isinstance(request, ResetRequest):
            return await self._reset(session, request.data or ResetData()), False
        if request.type == "state":
            return state_reply(self._state(session)), False
        if isinstance(request, FORK_REQUESTS):
            free = self.config.max_sessions - len(self.sessions) - self.forks.pending_count
            return await self.forks.handle(session, request, free, self._state), False
        return None, True  # close

    async def _reset(self, session: Session, data: ResetData) -> str:
        assert session.env is not None
        try:
            obs, info = await self._run(
                session, "env.reset()", session.env.reset, seed=data.seed, options=data.options
            )
        except CallTimedOut:
            raise
        except Exception as exc:
            return env_error("reset", exc)
        session.episode_id = data.episode_id or uuid.uuid4().hex
        session.running = True
        session.terminated = session.truncated = False
        session.turn = 0
        session.episode_return = 0.0
        return observation_reply(
            obs,
            self._sent_info(info),
            reward=0.0,
            terminated=False,
            truncated=False,
            episode_id=session.episode_id,
            turn=0,
        )

    async def _step(self, session: Session, action: str) -> str:
        if not session.running:
            if session.episode_id is None:
                text = 'no episode is running in this session; send {"type": "reset"} first'
            else:
                how = "terminated" if session.terminated else "was truncated"
                turns = f"{session.turn} turn" + ("" if session.turn == 1 else "s")
                text = f'the episode {how} after {turns}; send {{"type": "reset"}} to start another'
            return error_reply(ErrorCode.RESET_NEEDED, text)
        assert session.env is not None
        try:
            if self._inline.admits(session, action):
                result = self._inline.run(session, "env.step()", session.env.step, action)
            else:
                result = await self._run(session, "env.step()", session.env.step, action)
            obs, reward, terminated, truncated, info = result
        except CallTimedOut:
            raise
        except gym.error.ResetNeeded as exc:
            session.running = False
            return error_reply(ErrorCode.RESET_NEEDED, str(exc))
        except Exception as exc:
            return env_error("step", exc)
        session.turn += 1
        session.episode_return += float(reward)
        session.terminated, session.truncated = bool(terminated), bool(truncated)
        session.running = not (terminated or truncated)
        return observation_reply(
            obs,
            self._sent_info(info),
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            episode_id=session.episode_id or "",
            turn=session.turn,
        )

    def _state(self, session: Session) -> SessionState:
        return SessionState(
            episode_id=session.episode_id,
            step_count=session.turn,
            env_id=self.config.env_id,
            running=session.running,
            terminated=session.terminated,
            truncated=session.truncated,
            episode_return=session.episode_return,
        )

    def _sent_info(self, info: Mapping[str, Any]) -> Mapping[str, Any]:
        return info if self.config.send_privileged else public_info(info)

    # ----------------------------------------------------------- env calls
    async def _run(
        self, session: Session, call: str, fn: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Any:
        """``fn(*args, **kwargs)`` on an env thread; `CallTimedOut` (naming `call`)
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
        """Fail each env call past the call deadline with `CallTimedOut`.

        One watch for all sessions rather than a timer per call: a step stays a
        queue hand-off. A call fails within a quarter of the deadline (at most a
        second) after it passes.
        """
        timeout = self.config.call_timeout
        if timeout is None:
            return
        async for now in every_quarter_of(timeout, shortest=0.02, longest=1.0):
            for session in list(self._calling):
                call = session.call
                if call is None or call.done() or now - session.call_started < timeout:
                    continue
                call.set_exception(CallTimedOut(timed_out_message(session.call_name, timeout)))
                session.late_call = call
                assert self._threads is not None
                self._threads.abandon(call)
