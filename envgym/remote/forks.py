"""Fork anywhere: the env server's ``snapshot``, ``restore`` and ``fork`` messages.

`Forks` holds a server's `SnapshotStore` and its pending forks: sessions made
by a ``fork`` whose env is already restored mid-episode, each waiting for a
client to open ``/ws?fork=<token>``. A pending fork counts against the
server's session limit; one not attached within ``snapshot_ttl_s`` is closed.
Env calls go through the server's ``_run`` (its env threads and call
deadline), given as `run`. What is sent back is a token, never state: the
pickled snapshots stay here, and a forked session's frames leave
``info["privileged"]`` out like any other's (the server's ``_sent_info``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from envgym.remote.config import ServerConfig, ServerStartError
from envgym.remote.messages import (
    ForkData,
    ForkRequest,
    ReleaseData,
    ReleaseReply,
    ReleaseRequest,
    RestoreRequest,
    SessionState,
    SnapshotRequest,
    error_reply,
    fork_reply,
    snapshot_reply,
    state_reply,
)
from envgym.remote.protocol import CLOSE_UNKNOWN_FORK, ErrorCode
from envgym.remote.sessions import (
    CallTimedOut,
    Session,
    close_env_quietly,
    env_error,
    every_quarter_of,
    open_env,
)
from envgym.remote.snapshots import (
    Bookkeeping,
    SnapshotRefused,
    SnapshotStore,
    new_token,
    restore_env,
    take_snapshot,
)

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

__all__ = ["Forks"]

logger = logging.getLogger("envgym.remote")

Run = Callable[..., Awaitable[Any]]


class Forks:
    """A server's snapshots and pending forks, and the handlers of the three messages.

    `run(session, call_name, fn, *args)` runs an env call for a session (the
    server's ``_run``); `close_env(session)` closes a session's env;
    `on_expired()` is called after forks expire unattached (a server that
    stops after its last session checks whether that was it).
    """

    def __init__(
        self,
        config: ServerConfig,
        run: Run,
        close_env: Callable[[Session], Awaitable[None]],
        on_expired: Callable[[], None] = lambda: None,
    ) -> None:
        self.config = config
        self.store = SnapshotStore(
            config.max_snapshots, config.max_snapshot_bytes, config.snapshot_ttl_s
        )
        #: forked sessions waiting for their client, by token, with when they expire
        self.pending: dict[str, tuple[Session, float]] = {}
        #: sessions a fork in progress is making (they count against the limit too)
        self.making = 0
        self._run = run
        self._close_env = close_env
        self._on_expired = on_expired

    @property
    def pending_count(self) -> int:
        """Sessions that count against the limit without a connection yet."""
        return len(self.pending) + self.making

    # ---------------------------------------------------------- messages
    async def handle(
        self,
        session: Session,
        request: SnapshotRequest | RestoreRequest | ForkRequest | ReleaseRequest,
        free: int,
        state: Callable[[Session], SessionState],
    ) -> str:
        """The reply to one of the four messages; `free`: sessions the server may still
        open; `state(session)`: the session's state, the reply to a restore."""
        if isinstance(request, SnapshotRequest):
            return await self.snapshot(session)
        if isinstance(request, RestoreRequest):
            error = await self.restore(session, request.data.handle)
            return error or state_reply(state(session))
        if isinstance(request, ReleaseRequest):
            released = self.store.release(request.data.handle)
            return ReleaseReply(data=ReleaseData(released=released)).model_dump_json()
        data = request.data or ForkData()
        return await self.fork(session, data.handle, data.n, free)

    async def snapshot(self, session: Session) -> str:
        """The reply to ``snapshot``: a handle to the session's current state."""
        if not session.running:
            return error_reply(ErrorCode.RESET_NEEDED, _no_episode("snapshot", session))
        try:  # refused before the env's state is copied, not after
            self.store.check_room(session.id, time.monotonic())
        except SnapshotRefused as exc:
            return error_reply(exc.code, str(exc))
        blob = await self._state_of(session)
        if isinstance(blob, str):
            return blob  # an error frame
        try:
            handle = self.store.put(session.id, blob, _book(session), time.monotonic())
        except SnapshotRefused as exc:
            return error_reply(exc.code, str(exc))
        return snapshot_reply(handle, session.turn, self.config.snapshot_ttl_s)

    async def restore(self, session: Session, handle: str) -> str | None:
        """Put the session into the state `handle` names; None when done, else an error frame."""
        try:
            stored = self.store.get(handle, time.monotonic())
        except SnapshotRefused as exc:
            return error_reply(exc.code, str(exc))
        assert session.env is not None
        try:
            await self._run(
                session, "env.restore()", restore_env, session.env, stored.blob, stored.book.turn
            )
        except CallTimedOut:
            raise
        except Exception as exc:
            session.running = False  # half restored: only a reset is safe
            return env_error("env.restore()", exc, "send a reset to go on")
        _set_book(session, stored.book)
        return None

    async def fork(self, session: Session, handle: str | None, n: int, free: int) -> str:
        """The reply to ``fork``: `n` pending sessions in the state `handle` names (the
        session's current state when None). `free`: sessions the server may still open,
        counted with no await since, so the `n` are held before any other message runs."""
        if n > free:
            limit = self.config.max_sessions
            return error_reply(
                ErrorCode.CAPACITY_REACHED,
                f"a fork into {n} session(s) needs {n} free and the server has {free} "
                f"(--max-sessions {limit}, counting forks not yet attached); fork into fewer, "
                "close sessions, or start the server with a higher --max-sessions",
                free_sessions=free,
                max_sessions=limit,
            )
        self.making += n  # held from here, so concurrent forks and connects count them
        try:
            return await self._fork(session, handle, n)
        finally:
            self.making -= n

    async def _fork(self, session: Session, handle: str | None, n: int) -> str:
        if handle is None:
            if not session.running:
                return error_reply(ErrorCode.RESET_NEEDED, _no_episode("fork", session))
            blob = await self._state_of(session)
            if isinstance(blob, str):
                return blob
            book = _book(session)
        else:
            try:
                stored = self.store.get(handle, time.monotonic())
            except SnapshotRefused as exc:
                return error_reply(exc.code, str(exc))
            blob, book = stored.blob, stored.book
        made: list[Session] = []
        try:
            for _ in range(n):
                forked = Session(None)
                made.append(forked)
                await self._run(forked, "fork", _open_restored, forked, self.config, blob, book)
        except Exception as exc:
            for forked in made:
                await self._close_env(forked)
            if isinstance(exc, ServerStartError):
                return error_reply(ErrorCode.FACTORY_ERROR, str(exc))
            return env_error("making a forked env", exc)
        # Registered just before `fork` releases `making`, with no await between, so no
        # other message sees these sessions counted twice (or not at all).
        expires = time.monotonic() + self.config.snapshot_ttl_s
        tokens = []
        for forked in made:
            token = new_token()
            self.pending[token] = (forked, expires)
            tokens.append(token)
        return fork_reply(tokens, self.config.snapshot_ttl_s)

    # ------------------------------------------------------------ forks
    async def refuse(self, websocket: WebSocket) -> None:
        """Answer ``/ws?fork=TOKEN`` with a token no pending fork has: an error, then close."""
        message = (
            "no forked session waits under that token: it was never given, was attached to "
            f"already, or was not attached within --snapshot-ttl ({self.config.snapshot_ttl_s:g} "
            's); send {"type": "fork"} again and attach to each token once, sooner'
        )
        with contextlib.suppress(Exception):  # a client that left before hearing why
            await websocket.accept()
            await websocket.send_text(error_reply(ErrorCode.UNKNOWN_FORK, message))
            await websocket.close(CLOSE_UNKNOWN_FORK, "unknown fork token")

    def attach(self, token: str) -> Session | None:
        """The pending session `token` names, now no longer pending; None if none is."""
        found = self.pending.pop(token, None)
        if found is None:
            return None
        session, expires = found
        if expires <= time.monotonic():
            self._close_later(session)
            return None
        return session

    async def watch(self) -> None:
        """Run `expire` every quarter of the time to live (0.05 s to 5 s), forever."""
        async for now in every_quarter_of(self.config.snapshot_ttl_s, shortest=0.05, longest=5.0):
            self.expire(now)

    def expire(self, now: float) -> None:
        """Forget snapshots past their time to live and close forks not attached in time."""
        self.store.expire(now)
        expired = [t for t, (_, expires) in self.pending.items() if expires <= now]
        for token in expired:
            session, _ = self.pending.pop(token)
            self._close_later(session)
        if expired:
            self._on_expired()

    def close_pending(self) -> None:
        """Close every pending fork's env now (the server is stopping)."""
        for session, _ in self.pending.values():
            close_env_quietly(session)
        self.pending.clear()

    def _close_later(self, session: Session) -> None:
        task = asyncio.get_running_loop().create_task(self._close_env(session))
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    async def _state_of(self, session: Session) -> bytes | str:
        """The session's env state, pickled, or an error frame."""
        assert session.env is not None
        try:
            return await self._run(session, "env.snapshot()", take_snapshot, session.env)
        except CallTimedOut:
            raise
        except Exception as exc:
            return env_error("env.snapshot()", exc)


#: closes in flight; the loop keeps only weak references to tasks
_closing: set[asyncio.Task[None]] = set()


def _open_restored(session: Session, config: ServerConfig, blob: bytes, book: Bookkeeping) -> None:
    """Make a forked session's env and restore it (on an env thread)."""
    open_env(session, config)
    assert session.env is not None
    try:
        restore_env(session.env, blob, book.turn)
    except BaseException:
        with contextlib.suppress(Exception):
            session.env.close()
        session.env = None
        raise
    _set_book(session, book)


def _book(session: Session) -> Bookkeeping:
    return Bookkeeping(
        episode_id=session.episode_id,
        turn=session.turn,
        running=session.running,
        terminated=session.terminated,
        truncated=session.truncated,
        episode_return=session.episode_return,
    )


def _set_book(session: Session, book: Bookkeeping) -> None:
    session.episode_id = book.episode_id
    session.turn = book.turn
    session.running = book.running
    session.terminated = book.terminated
    session.truncated = book.truncated
    session.episode_return = book.episode_return


def _no_episode(what: str, session: Session) -> str:
    if session.episode_id is None:
        return (
            f"no episode is running in this session, so there is nothing to {what}; "
            'send {"type": "reset"} first'
        )
    return (
        f"the episode has ended, so there is nothing to {what}; {what} before its last step, "
        'or send {"type": "reset"} to start another'
    )
