"""Starting env servers: ``envgym serve`` in this thread, a thread, or a child process.

`serve` runs an `EnvServer` until interrupted (what ``envgym serve`` calls);
`serve_in_background` runs one on a thread of this process and
`serve_in_subprocess` one in an ``envgym serve`` child process, both for
tests and tools::

    with serve_in_background("envgym/Sokoban-v0", port=0) as address:
        env = RemoteEnv(address)

`serve_command` writes the ``envgym serve`` arguments (for a child process or
a container) and `ready_line` the line ``envgym serve`` prints once it accepts
sessions, which `ServerProcess` waits for. The listening socket and uvicorn
are `envgym.serving`'s; Unix sockets are made owner-only (0o600).
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from envgym.remote.address import ServerAddress
from envgym.remote.config import ServerConfig, ServerStartError
from envgym.remote.protocol import to_jsonable
from envgym.serving import AppServer, ServingError, app_server
from envgym.sockets import ListenError

if TYPE_CHECKING:
    from envgym.remote.server import EnvServer

__all__ = [
    "READY_LINE_PREFIX",
    "ServerProcess",
    "ServerStartError",
    "parse_ready_line",
    "ready_line",
    "serve",
    "serve_command",
    "serve_in_background",
    "serve_in_subprocess",
]

#: `serve` prints one line starting with this, then the address, once it accepts sessions.
READY_LINE_PREFIX = "envgym serve: serving "


def _env_server(config: ServerConfig) -> EnvServer:
    # Imported here: launching a child process (`serve_in_subprocess`, a
    # container's `serve_command`) needs none of the server's packages.
    from envgym.remote.server import EnvServer

    return EnvServer(config)


def _app_server(
    server: EnvServer,
    host: str,
    port: int,
    uds: str | os.PathLike[str] | None,
    log_level: str,
    on_ready: Callable[[ServerAddress], None] | None = None,
) -> AppServer:
    """`server`'s app on a new socket, with the WebSocket settings it needs; a stale
    socket file at `uds` is replaced, a live one is a `ServerStartError`. A Unix
    socket is owner-only: a session holds an env (and, with --send-privileged,
    its answers); another local user has no business connecting."""

    def ready(_url: str) -> None:
        if on_ready is not None:
            on_ready(_address_of(served.sock))

    from envgym.remote.wire import WebSocketProtocol

    try:
        served = app_server(
            server.app,
            host=host,
            port=port,
            uds=uds,
            on_ready=ready,
            log_level=log_level,
            ws=WebSocketProtocol,  # websockets-sansio, reading on while sessions wait
            # Deflate costs more than it saves on short text over a local link.
            ws_per_message_deflate=False,
            ws_ping_interval=server.config.ping_interval_s,
            ws_ping_timeout=server.config.ping_timeout_s,
            # Refused (close 1009) as the frame header arrives, before it is buffered.
            ws_max_size=server.max_message_bytes,
            timeout_graceful_shutdown=5,
            lifespan="on",
        )
    except ListenError as exc:
        raise ServerStartError(str(exc)) from None
    server.on_done = served.stop
    return served


def _address_of(sock: socket.socket) -> ServerAddress:
    if sock.family == socket.AF_UNIX:
        return ServerAddress(uds=sock.getsockname())
    host, port = sock.getsockname()[:2]
    return ServerAddress(host=host, port=port)


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
    max_snapshots: int = 64,
    max_snapshot_bytes: int = 64 * 1024 * 1024,
    snapshot_ttl_s: float = 600.0,
    calls: str = "auto",
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
        max_snapshots=max_snapshots,
        max_snapshot_bytes=max_snapshot_bytes,
        snapshot_ttl_s=snapshot_ttl_s,
        calls=calls,
    )
    _app_server(_env_server(config), host, port, uds, log_level, on_ready).run()


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
    served = _app_server(_env_server(config), host, port, uds, log_level)
    try:
        served.start(startup_timeout_s, thread_name=f"envgym-serve-{env_id}")
    except ServingError as exc:
        raise ServerStartError(f"the server for {env_id} did not start: {exc}") from None
    try:
        yield _address_of(served.sock)
    finally:
        served.close()


def ready_line(env_id: str, address: ServerAddress) -> str:
    """The line ``envgym serve`` prints once it accepts sessions."""
    return f"{READY_LINE_PREFIX}{env_id} at {address}"


def parse_ready_line(line: str) -> ServerAddress | None:
    """The address in a `ready_line`, or None if `line` is not one."""
    if not line.startswith(READY_LINE_PREFIX) or " at " not in line:
        return None
    return ServerAddress.parse(line.rstrip("\r\n").split(" at ", 1)[1])


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
    calls: str | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The arguments after ``envgym`` that serve `env_id` (for a subprocess or a container).

    None leaves a limit at ``envgym serve``'s default; `send_privileged` adds
    ``--send-privileged``; `calls` ``"threads"`` adds ``--calls threads``.
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
    if calls is not None:
        args += ["--calls", calls]
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
    send_privileged, call_timeout_s, calls, extra_args); the port defaults to 0, a free
    one. Yields the `ServerProcess`.
    """
    argv = [sys.executable, "-m", "envgym", *serve_command(env_id, env_kwargs, **options)]
    server = ServerProcess(argv, startup_timeout_s)
    try:
        yield server
    finally:
        server.stop()
