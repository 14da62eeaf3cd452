"""Listening sockets for envgym's servers (``envgym serve``, ``envgym search serve``).

Servers listen on a TCP port of 127.0.0.1 (by default) or on a Unix socket
path. A socket file left by a server that is gone is replaced; a path where a
server still listens, or that is not a socket, is refused with a message that
says what to do.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
from pathlib import Path

__all__ = ["ListenError", "listening_socket"]


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
