"""Listening sockets for envgym's servers (``envgym serve``, ``envgym search serve``),
and the HTTP client that talks to one of them.

Servers listen on a TCP port of 127.0.0.1 (by default) or on a Unix socket
path. A socket file left by a server that is gone is replaced; a path where a
server still listens, or that is not a socket, is refused with a message that
says what to do. `http_client` connects to either kind of address
(``http://HOST:PORT`` or ``unix:PATH``); it imports httpx when called.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
from pathlib import Path
from typing import Any

from envgym.extras import require

__all__ = ["ListenError", "http_client", "listening_socket"]

#: The base URL of a client over a Unix socket: the host part is not used to connect.
UDS_BASE_URL = "http://localhost"


class ListenError(OSError):
    """A server cannot listen where it was asked to; the message says what to do."""


def listening_socket(
    host: str = "127.0.0.1",
    port: int | None = 0,
    uds: str | os.PathLike[str] | None = None,
    *,
    uds_mode: int = 0o600,
    backlog: int = 2048,
) -> socket.socket:
    """A socket listening on `host`:`port` (0 or None picks a free port) or, when
    `uds` is given, at that Unix socket path with permissions `uds_mode`
    (owner-only by default; it is set before the socket listens, so no one
    connects while it is wider)."""
    if uds is not None:
        return _unix_socket(Path(uds), uds_mode, backlog)
    port = 0 if port is None else port
    # proto=IPPROTO_TCP: asyncio turns Nagle off only on sockets that say they are
    # TCP; with Nagle on, a small response can wait ~40 ms for a delayed ACK.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        hint = "; pick another --port (0 picks a free one)" if exc.errno == errno.EADDRINUSE else ""
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}") from None
    sock.listen(backlog)
    return sock


def _unix_socket(path: Path, mode: int, backlog: int) -> socket.socket:
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise ListenError(f"{path} exists and is not a socket; pick another --uds path")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # left by a server that is gone
        else:
            raise ListenError(
                f"another server is already listening on {path}; stop it or pick another --uds"
            )
        finally:
            probe.close()
    # A folder made here for the socket is its owner's alone, like the socket.
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    os.chmod(path, mode)
    sock.listen(backlog)
    return sock


def http_client(
    url: str | None = None,
    *,
    uds: str | os.PathLike[str] | None = None,
    timeout: Any = 30.0,
    extra: str,
    purpose: str,
    **options: Any,
) -> Any:
    """An ``httpx.Client`` for the server at `url` (``http(s)://HOST:PORT``, or
    ``unix:PATH``) or at the Unix socket `uds`; give exactly one.

    Requests take paths relative to the server (``client.get("/health")``). Over
    plain HTTP, Nagle's algorithm is off: httpx writes a request's headers and
    body separately, and a small request would otherwise wait ~40 ms for a
    delayed ACK. An ``https://`` server gets httpx's own transport, so the
    environment's proxy and certificate settings apply to it. `extra` and
    `purpose` name what to install when httpx is missing (`envgym.extras.require`);
    `options` go to ``httpx.Client`` (``headers``, ``trust_env``, ...), except
    ``limits``, which goes to the transport.
    """
    if url is not None and uds is not None:
        raise ValueError("give a url (http://HOST:PORT or unix:PATH) or uds=PATH, not both")
    if url is not None and url.startswith("unix:"):
        url, uds = None, url.removeprefix("unix:")
    if url is None and uds is None:
        raise ValueError("give a url (http://HOST:PORT or unix:PATH) or uds=PATH")
    if url is not None and not url.startswith(("http://", "https://")):
        raise ValueError(f"{url!r} is not a server address; give http://HOST:PORT or unix:PATH")
    httpx = require("httpx", extra=extra, purpose=purpose)
    transport_options: dict[str, Any] = {}
    if "limits" in options:  # a client's limits do not reach a transport passed to it
        transport_options["limits"] = options.pop("limits")
    if uds is not None:
        transport = httpx.HTTPTransport(uds=os.fspath(uds), **transport_options)
        base_url = UDS_BASE_URL
    elif url.startswith("http://"):
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        transport = httpx.HTTPTransport(socket_options=nodelay, **transport_options)
        base_url = url.rstrip("/")
    else:
        transport, base_url = None, url.rstrip("/")
        options.update(transport_options)
    return httpx.Client(base_url=base_url, transport=transport, timeout=timeout, **options)
