"""`AppServer`: one ASGI app served by uvicorn on one listening socket.

The one way envgym runs its HTTP servers: ``envgym serve`` (the env server,
`envgym.remote.launcher`), the retrieval server (`envgym.retrieval.server`),
``envgym shop serve`` (`envgym.envs.shop.site`) and the leaderboard
(`envgym.leaderboard.app`). `app_server` binds the socket (`envgym.sockets`:
TCP on 127.0.0.1 or an owner-only Unix socket) before serving, so that port 0
has picked its port by then, and tells `on_ready` the address.
`AppServer.run` serves in this thread until `stop`, Ctrl-C or SIGTERM (a clean
stop, as ``docker stop`` and ``Popen.terminate`` ask); `AppServer.start`
serves on a background thread until `close`, and `BackgroundServer` wraps that
as a context manager. Either way the socket is closed, and a Unix socket's
file removed, once serving ends.

Imports only the standard library and `envgym.sockets`, and uvicorn when an
`AppServer` is made.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Self

from envgym.sockets import listening_socket

__all__ = ["AppServer", "BackgroundServer", "ServingError", "app_server", "socket_url"]


class ServingError(RuntimeError):
    """A server did not start serving (its app failed at startup, or took too long)."""


def socket_url(sock: socket.socket) -> str:
    """Where `sock` listens: ``http://HOST:PORT`` or ``unix:PATH``."""
    if sock.family == socket.AF_UNIX:
        return f"unix:{sock.getsockname()}"
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class AppServer:
    """`app` served by uvicorn on `sock`, a listening socket this object now owns.

    Args:
        app: an ASGI application (a FastAPI app).
        sock: a listening socket (`envgym.sockets.listening_socket`).
        on_ready: called (on the serving thread) once the server accepts connections.
        log_level: uvicorn's log level.
        uvicorn_options: more `uvicorn.Config` fields (``ws``, ``lifespan``, ...);
            the access log is off unless asked for.
    """

    def __init__(
        self,
        app: Any,
        sock: socket.socket,
        *,
        on_ready: Callable[[], None] | None = None,
        log_level: str = "warning",
        **uvicorn_options: Any,
    ) -> None:
        self.sock = sock
        #: the Unix socket's path, removed once serving ends; None on TCP
        self.uds: str | None = sock.getsockname() if sock.family == socket.AF_UNIX else None
        self.on_ready = on_ready
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._failure: BaseException | None = None
        try:
            self._server = _uvicorn_server(app, log_level, self._ready, uvicorn_options)
        except BaseException:
            self._release_socket()
            raise

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` or ``unix:PATH``."""
        return socket_url(self.sock)

    def run(self) -> None:
        """Serve in this thread until `stop`, Ctrl-C (KeyboardInterrupt) or SIGTERM (a
        clean return, when this is the main thread); the socket is released after."""
        try:
            with _sigterm_as_exception():
                self._server.run(sockets=[self.sock])
        except _Terminated:
            pass  # a clean stop, as asked (docker stop, kill)
        finally:
            self._release_socket()

    def start(self, timeout_s: float = 60.0, thread_name: str = "envgym-server") -> AppServer:
        """Serve on a daemon thread; return once connections are accepted.

        `ServingError` (the server released) if it fails or takes over `timeout_s`.
        """

        def serve() -> None:
            try:
                self._server.run(sockets=[self.sock])
            except BaseException as exc:  # SystemExit from a failed startup included
                self._failure = exc
            finally:
                self._started.set()

        self._thread = threading.Thread(target=serve, name=thread_name, daemon=True)
        self._thread.start()
        if not self._started.wait(timeout_s) or self._failure or not self._server.started:
            self.close()
            why = repr(self._failure) if self._failure else f"not serving within {timeout_s:g} s"
            raise ServingError(why)
        return self

    def stop(self) -> None:
        """Ask the server to stop (from any thread); it finishes open requests first."""
        self._server.should_exit = True

    def close(self) -> None:
        """Stop a server `start` began, wait for its thread, and release the socket."""
        self.stop()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        self._release_socket()

    def __enter__(self) -> AppServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _ready(self) -> None:
        if self.on_ready is not None:
            self.on_ready()
        self._started.set()

    def _release_socket(self) -> None:
        self.sock.close()
        if self.uds is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.uds)


def _uvicorn_server(
    app: Any, log_level: str, on_ready: Callable[[], None], options: dict[str, Any]
) -> Any:
    import uvicorn

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                on_ready()

    return _Server(uvicorn.Config(app, log_level=log_level, **{"access_log": False, **options}))


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
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def app_server(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    uds: str | os.PathLike[str] | None = None,
    on_ready: Callable[[str], None] | None = None,
    log_level: str = "warning",
    **uvicorn_options: Any,
) -> AppServer:
    """`app` on a socket bound here: `host`:`port` (0 or None picks a free port) or
    the Unix socket `uds`. `on_ready(address)` is called once it accepts
    connections, with `socket_url`'s ``http://HOST:PORT`` or ``unix:PATH``.
    An `envgym.sockets.ListenError` (an OSError) says why it cannot listen.

    Make the app before calling this, so that a missing web framework leaves no
    socket behind; `AppServer.run` or `AppServer.start` then serves it.
    """
    sock = listening_socket(host, port, uds)
    address = socket_url(sock)
    return AppServer(
        app,
        sock,
        on_ready=None if on_ready is None else (lambda: on_ready(address)),
        log_level=log_level,
        **uvicorn_options,
    )


class BackgroundServer:
    """An `AppServer` on a background thread of this process, as a context manager
    (tests, benchmarks, notebooks). `address` is where it listens, `url` its
    ``http://127.0.0.1:PORT`` (None on a Unix socket) and `uds` the socket path."""

    thread_name = "envgym-server"

    def __init__(self, server: AppServer, uds: str | Path | None) -> None:
        self._server = server
        self.uds = None if uds is None else str(uds)
        self.address = server.url
        self.url = self.address if self.uds is None else None

    def start(self) -> Self:
        self._server.start(thread_name=self.thread_name)
        return self

    def stop(self) -> None:
        self._server.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
