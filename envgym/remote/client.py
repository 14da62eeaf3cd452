"""`RemoteEnv`: a `gymnasium.Env` whose env runs in an ``envgym serve`` server.

::

    env = RemoteEnv("ws://127.0.0.1:8000")        # or RemoteEnv(uds="/run/envgym.sock")
    obs, info = env.reset(seed=7)
    obs, reward, terminated, truncated, info = env.step("<answer>Up</answer>")
    env.close()

    snap = env.snapshot()                         # a handle; the state stays on the server
    twins = env.fork(2)                           # two more sessions in this state
    env.restore(snap)                             # back to where snap was taken

It keeps one WebSocket connection (one env instance on the server) for its
whole life and gives back what the local env would: the same text, reward,
terminated/truncated and info for the same seeds and actions (info travels as
JSON, so tuples arrive as lists), except that ``info["privileged"]`` is there
only when the server was started with ``--send-privileged``
(`RemoteEnv.privileged_sent` says which). It needs ``websockets`` and
``httpx`` (for ``GET /schema``, where the spaces come from), not the server's
web framework.
"""

from __future__ import annotations

import json
import time
from typing import Any

import gymnasium as gym

from envgym.arguments import check_render_mode
from envgym.core import render_text
from envgym.extras import require
from envgym.remote.address import RemoteSnapshot, ServerAddress
from envgym.remote.protocol import (
    CLOSE_MESSAGE_TOO_BIG,
    CLOSE_TRY_AGAIN_LATER,
    ErrorCode,
    text_space_from_json,
)
from envgym.sockets import http_client

__all__ = [
    "RemoteEnv",
    "RemoteEnvError",
    "RemoteSnapshot",
    "ServerUnreachable",
    "SessionClosed",
    "SessionRejected",
    "fetch_json",
    "wait_for_server",
]


class RemoteEnvError(RuntimeError):
    """The server answered a message with an error; `code` is the protocol's error code."""

    def __init__(self, message: str, code: str = ErrorCode.SESSION_ERROR) -> None:
        super().__init__(message)
        self.code = code


class ServerUnreachable(RemoteEnvError, ConnectionError):
    """No envgym server answers at the address."""


class SessionRejected(RemoteEnvError):
    """The server refused to open a session (its session limit, or the env failed to build)."""


class SessionClosed(RemoteEnvError):
    """The server closed this session (idle or call timeout, shutdown, a dropped connection)."""


# ------------------------------------------------------------------- HTTP
def fetch_json(address: ServerAddress, path: str, timeout_s: float = 10.0) -> Any:
    """``GET path`` from an envgym server, parsed; `ServerUnreachable` if nothing answers."""
    httpx = require("httpx", extra="remote", purpose="RemoteEnv")
    http = http_client(
        None if address.uds is not None else address.base_url,
        uds=address.uds,
        timeout=timeout_s,
        extra="remote",
        purpose="RemoteEnv",
        # An HTTP proxy from the environment has no business on a local link.
        trust_env=False,
    )
    try:
        with http:
            response = http.get(path)
    except httpx.TransportError as exc:
        reason = str(exc) or type(exc).__name__
        raise ServerUnreachable(
            f"no envgym server answers at {address} ({reason}); start one with "
            f"`envgym serve ID {_serve_flag(address)}`",
            ErrorCode.SESSION_ERROR,
        ) from None
    if response.status_code != 200:
        raise ServerUnreachable(
            f"GET {path} at {address} answered HTTP {response.status_code}; "
            "is this an envgym server?"
        )
    try:
        return response.json()
    except ValueError:
        raise ServerUnreachable(
            f"GET {path} at {address} did not return JSON; is this an envgym server?"
        ) from None


def wait_for_server(address: ServerAddress | str, timeout_s: float = 30.0) -> dict[str, Any]:
    """Poll ``GET /health`` until the server answers; its health report.

    For servers started elsewhere (a container on a bind-mounted socket).
    """
    address = _as_address(address, None)
    deadline = time.monotonic() + timeout_s
    delay = 0.02
    while True:
        try:
            return fetch_json(address, "/health", timeout_s=min(5.0, timeout_s))
        except ServerUnreachable:
            if time.monotonic() >= deadline:
                raise ServerUnreachable(
                    f"no envgym server answered at {address} within {timeout_s:g} s"
                ) from None
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def _serve_flag(address: ServerAddress) -> str:
    return f"--uds {address.uds}" if address.uds is not None else f"--port {address.port}"


def _as_address(url: ServerAddress | str | None, uds: str | None) -> ServerAddress:
    if (url is None) == (uds is None):
        raise TypeError("give RemoteEnv a url (ws://HOST:PORT) or uds=PATH, not both")
    if uds is not None:
        return ServerAddress(uds=str(uds))
    if isinstance(url, ServerAddress):
        return url
    return ServerAddress.parse(str(url))


# ---------------------------------------------------------------- the env
class RemoteEnv(gym.Env[str, str]):
    """A `gymnasium.Env` over one session of an ``envgym serve`` server.

    Args:
        url: ``ws://HOST:PORT`` (``/ws`` optional), ``http://HOST:PORT``,
            ``unix:PATH``, or a `ServerAddress`.
        uds: a Unix socket path, instead of `url`.
        connect_timeout_s: how long to wait for the server to answer at all.
        step_timeout_s: how long one reset or step may take on the server
            (None: no limit; keep-alive pings still notice a dead server).
        render_mode: "ansi" or "human" render the last observation text.

    The env's kwargs are the server's (``envgym serve ID --kwarg ...``);
    ``reset(seed=..., options=...)`` and ``step(action)`` are the local env's.
    Errors: `ServerUnreachable` (nothing listening), `SessionRejected` (the
    server's session limit), `SessionClosed` (the server ended the session,
    e.g. an env call past its ``--call-timeout``; the next ``reset()``
    reconnects), ``gymnasium.error.ResetNeeded`` (step before reset or after
    the end), ``ValueError``/``TypeError`` re-raised from the env (a bad reset
    option) or for a message longer than the server takes (the session goes
    on), else `RemoteEnvError`.

    Attributes read from the server's ``GET /schema``: `env_id`, the spaces,
    `privileged_sent` (True when observation info carries
    ``info["privileged"]``, i.e. the server runs with ``--send-privileged``;
    a server too old to say sent it) and `max_message_bytes` (the longest
    message the server reads).
    """

    metadata = {"render_modes": ["ansi", "human"]}

    def __init__(
        self,
        url: ServerAddress | str | None = None,
        *,
        uds: str | None = None,
        connect_timeout_s: float = 10.0,
        step_timeout_s: float | None = None,
        render_mode: str | None = None,
    ) -> None:
        check_render_mode(self, render_mode)
        require("websockets.sync.client", extra="remote", purpose="RemoteEnv")
        address = _as_address(url, uds)
        schema = fetch_json(address, "/schema", connect_timeout_s)
        if "action_space" not in schema or "env_id" not in schema:
            raise ServerUnreachable(
                f"the server at {address} is not an envgym server (its /schema has no "
                "action_space); RemoteEnv talks to `envgym serve`"
            )
        self._setup(address, schema, connect_timeout_s, step_timeout_s, render_mode)
        self._connect()

    def _setup(
        self,
        address: ServerAddress,
        schema: dict[str, Any],
        connect_timeout_s: float,
        step_timeout_s: float | None,
        render_mode: str | None,
    ) -> None:
        self.address = address
        self.render_mode = render_mode
        self.connect_timeout_s = connect_timeout_s
        self.step_timeout_s = step_timeout_s
        self.schema: dict[str, Any] = schema
        self.env_id: str = self.schema["env_id"]
        self.action_space = text_space_from_json(self.schema["action_space"])
        self.observation_space = text_space_from_json(self.schema["observation_space"])
        #: whether the server puts info["privileged"] in observations (--send-privileged)
        self.privileged_sent: bool = bool(self.schema.get("send_privileged", True))
        #: the longest message the server reads (bytes); None: it does not say
        self.max_message_bytes: int | None = self.schema.get("max_message_bytes")
        self.episode_id: str | None = None
        self._last_obs = ""
        self._ws: Any = None
        self._closed = False
        #: the last observation at each snapshot this env took (for render after a restore)
        self._seen: dict[str, str] = {}

    # ------------------------------------------------------------ gymnasium
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if self._closed:
            raise RemoteEnvError("this RemoteEnv is closed; make a new one")
        if self._ws is None:
            self._connect()  # the server ended the last session; a new episode gets a new one
        data: dict[str, Any] = {"seed": seed}
        if options is not None:
            data["options"] = options
        reply = self._request({"type": "reset", "data": data})
        self.episode_id = reply["metadata"].get("episode_id")
        observation = reply["observation"]
        self._last_obs = observation["text"]
        if self.render_mode == "human":
            self.render()
        return observation["text"], observation["info"]

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._ws is None:
            if self._closed:
                raise RemoteEnvError("this RemoteEnv is closed; make a new one")
            raise gym.error.ResetNeeded(
                "this RemoteEnv has no open session (the server closed it); call reset() first"
            )
        if not isinstance(action, str):
            from envgym.text import coerce_action

            action = coerce_action(action)
        reply = self._request({"type": "step", "data": {"action": action}})
        observation, meta = reply["observation"], reply["metadata"]
        self._last_obs = observation["text"]
        if self.render_mode == "human":
            self.render()
        return (
            observation["text"],
            float(reply["reward"]),
            bool(meta["terminated"]),
            bool(meta["truncated"]),
            observation["info"],
        )

    def state(self) -> dict[str, Any]:
        """The server's view of this session: episode id, step count, return so far."""
        if self._ws is None:
            raise SessionClosed("this RemoteEnv has no open session; call reset() first")
        return self._request({"type": "state"}, expect="state")

    # ------------------------------------------------------------ forking
    def snapshot(self) -> RemoteSnapshot:
        """Keep this session's current state on the server; a `RemoteSnapshot` names it.

        Only mid-episode (else ``gymnasium.error.ResetNeeded``). Past the server's
        ``--max-snapshots`` or ``--max-snapshot-bytes`` for this session, a
        `RemoteEnvError` with code SNAPSHOT_LIMIT says which flag to raise.
        """
        if self._ws is None:
            raise gym.error.ResetNeeded("this RemoteEnv has no open session; call reset() first")
        data = self._request({"type": "snapshot"}, expect="snapshot")
        snap = RemoteSnapshot(str(data["handle"]), self.address)
        if len(self._seen) >= 1024:  # a bound on what render() remembers
            self._seen.pop(next(iter(self._seen)))
        self._seen[snap.handle] = self._last_obs
        return snap

    def restore(self, snapshot: RemoteSnapshot) -> None:
        """Put this session into the state `snapshot` names, taken by any session of
        this server; the server's episode bookkeeping (turn, return) follows.
        `RemoteEnvError` (code UNKNOWN_SNAPSHOT) once the server no longer holds it."""
        handle = RemoteSnapshot.handle_on(snapshot, self.address, "restore")
        if self._closed:
            raise RemoteEnvError("this RemoteEnv is closed; make a new one")
        if self._ws is None:
            self._connect()
        state = self._request({"type": "restore", "data": {"handle": handle}}, expect="state")
        self.episode_id = state.get("episode_id")
        self._last_obs = self._seen.get(handle, "")

    def release(self, snapshot: RemoteSnapshot) -> bool:
        """Drop `snapshot` on the server before its ``--snapshot-ttl`` runs out, which
        frees its room under ``--max-snapshots``; whether the server still held it."""
        handle = RemoteSnapshot.handle_on(snapshot, self.address, "release")
        self._seen.pop(handle, None)
        if self._ws is None:
            return False  # the session, and the handles it took, are gone
        data = self._request({"type": "release", "data": {"handle": handle}}, expect="release")
        return bool(data.get("released"))

    def fork(self, n: int = 1, snapshot: RemoteSnapshot | None = None) -> list[RemoteEnv]:
        """`n` new `RemoteEnv` sessions of this server in the state `snapshot` names
        (this session's current state when None), each mid-episode: ``step`` works
        at once. They are independent sessions: closing one closes none of the others.

        Past the server's ``--max-sessions`` a `SessionRejected` (CAPACITY_REACHED)
        says so, and no session is made.
        """
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"fork() makes n >= 1 sessions, got n={n!r}")
        data: dict[str, Any] = {"n": n}
        last_obs = self._last_obs
        if snapshot is not None:
            data["handle"] = RemoteSnapshot.handle_on(snapshot, self.address, "fork")
            last_obs = self._seen.get(data["handle"], "")
        if self._ws is None:
            raise gym.error.ResetNeeded("this RemoteEnv has no open session; call reset() first")
        reply = self._request({"type": "fork", "data": data}, expect="fork")
        forks: list[RemoteEnv] = []
        try:
            for token in reply["sessions"]:
                forks.append(self._attached(str(token), last_obs))
        except BaseException:
            for env in forks:
                env.close()
            raise
        return forks

    def _attached(self, token: str, last_obs: str) -> RemoteEnv:
        """A `RemoteEnv` on the forked session `token` (no ``GET /schema``: it is ours)."""
        env = RemoteEnv.__new__(RemoteEnv)
        env._setup(
            self.address, self.schema, self.connect_timeout_s, self.step_timeout_s, self.render_mode
        )
        env._connect(fork=token)
        env._last_obs = last_obs
        return env

    def render(self) -> str | None:
        return render_text(self.render_mode, lambda: self._last_obs)

    def close(self) -> None:
        if self._ws is not None:
            ws, self._ws = self._ws, None
            try:
                ws.send(json.dumps({"type": "close"}))
            except Exception:
                pass  # the server may be gone; closing is best effort
            try:
                ws.close()
            except Exception:
                pass
        self._closed = True
        super().close()

    # ------------------------------------------------------------ transport
    def _connect(self, fork: str | None = None) -> None:
        """Open a session; with `fork`, attach to the forked session that token names."""
        from websockets.sync.client import connect, unix_connect

        options: dict[str, Any] = {
            "open_timeout": self.connect_timeout_s,
            "compression": None,
            "max_size": None,
            # Keep the connection alive through long generations between steps.
            "ping_interval": 20.0,
            "ping_timeout": 60.0,
        }
        url = self.address.ws_url if fork is None else f"{self.address.ws_url}?fork={fork}"
        try:
            if self.address.uds is not None:
                opener = unix_connect(self.address.uds, url, **options)
            else:
                opener = connect(url, **options)
            # websockets 17 wants connect() used as a context manager; the connection
            # lives as long as this env, so enter it here and close it in close().
            self._ws = opener.__enter__()
        except (OSError, TimeoutError) as exc:
            raise ServerUnreachable(
                f"cannot open a session at {self.address}: {exc}; is `envgym serve` running "
                f"there ({_serve_flag(self.address)})?"
            ) from None
        except Exception as exc:  # a handshake the server refused
            raise SessionRejected(
                f"the server at {self.address} refused the session: {exc}"
            ) from None
        # The server refuses a session (its limit, an env that fails to build, a
        # fork token it does not know) with an error frame right after the
        # handshake; ask once so it shows here.
        state = self._request({"type": "state"}, expect="state")
        self.episode_id = state.get("episode_id")

    def _request(self, message: dict[str, Any], expect: str = "observation") -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        text = json.dumps(message)  # ASCII: its length is its size in bytes
        self._check_size(text, message["type"])
        try:
            self._ws.send(text)
            raw = self._ws.recv(timeout=self.step_timeout_s)
        except ConnectionClosed as exc:
            # The server sends an error frame saying why before it closes; read it if it came.
            try:
                raw = self._ws.recv(timeout=0)
            except Exception:
                self._ws = None
                raise self._closed_error(exc, message["type"]) from None
        except TimeoutError:
            # The reply may still come; it would answer the next request, so drop the session.
            self._drop()
            raise RemoteEnvError(
                f"the server took more than {self.step_timeout_s:g} s to answer {message['type']};"
                " the session was dropped (reset() opens a new one)"
            ) from None
        frame = json.loads(raw)
        kind, data = frame.get("type"), frame.get("data") or {}
        if kind == expect:
            return data
        if kind == "error":
            self._raise_error(data, message["type"])
        raise RemoteEnvError(f"unexpected reply {kind!r} to {message['type']}")

    def _check_size(self, text: str, kind: str) -> None:
        """A ValueError, before sending, for a message the server would close the session for."""
        limit = self.max_message_bytes
        if limit is None or len(text) <= limit:
            return
        raise ValueError(
            f"this {kind} message is {len(text):,} bytes as JSON, more than the {limit:,} the "
            f"server at {self.address} reads (the action space holds "
            f"{self.action_space.max_length:,} characters); send a shorter "
            + ("reply" if kind == "step" else "message")
            + " or start the server with a higher --max-message-bytes"
        )

    def _drop(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                ws.close()
            except Exception:
                pass

    def _closed_error(self, exc: Any, during: str) -> RemoteEnvError:
        # The server sends an error frame before closing; it says why.
        received = getattr(exc, "rcvd", None)
        reason = f" (code {received.code}: {received.reason})" if received is not None else ""
        if received is not None and received.code == CLOSE_TRY_AGAIN_LATER:
            return SessionRejected(
                f"the server at {self.address} refused the session{reason}", "CAPACITY_REACHED"
            )
        if received is not None and received.code == CLOSE_MESSAGE_TOO_BIG:
            return SessionClosed(
                f"the server at {self.address} closed the session: the {during} message was "
                f"longer than it reads{reason}; send a shorter one or start the server with a "
                "higher --max-message-bytes. reset() opens a new session"
            )
        return SessionClosed(
            f"the server at {self.address} closed the session during {during}{reason}; "
            "reset() opens a new one"
        )

    def _raise_error(self, data: dict[str, Any], during: str) -> None:
        code = str(data.get("code", ErrorCode.SESSION_ERROR))
        message = str(data.get("message", "unknown error"))
        if code == ErrorCode.RESET_NEEDED:
            raise gym.error.ResetNeeded(message)
        if code == ErrorCode.EXECUTION_ERROR:
            exception = {"ValueError": ValueError, "TypeError": TypeError}.get(
                str(data.get("exception"))
            )
            if exception is not None:
                raise exception(message)
        if code in (ErrorCode.CAPACITY_REACHED, ErrorCode.FACTORY_ERROR, ErrorCode.UNKNOWN_FORK):
            if during != "fork":  # a fork past the limit leaves this session as it was
                self._drop()
            raise SessionRejected(message, code)
        if code in (ErrorCode.IDLE_TIMEOUT, ErrorCode.CALL_TIMEOUT):
            self._drop()
            raise SessionClosed(message, code)
        raise RemoteEnvError(f"{message} (code {code})", code)
