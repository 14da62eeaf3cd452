"""`ServerAddress`: where an envgym env server listens (TCP host and port, or a Unix socket);
`RemoteSnapshot`: a state such a server keeps.

Client and server both use it; it imports only the standard library, so
`RemoteEnv` reads addresses without importing the server's web framework.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["RemoteSnapshot", "ServerAddress"]


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


@dataclass(frozen=True)
class RemoteSnapshot:
    """A state an envgym server keeps, from `RemoteEnv.snapshot`: its handle and the
    server's address, nothing of the state. It restores (`RemoteEnv.restore`) and
    forks (`RemoteEnv.fork`) in any session of that server while the server holds
    it (``--snapshot-ttl``, and no longer than the session that took it). The
    handle is a capability: whoever holds it may restore it, so it is left out
    of the repr."""

    handle: str = field(repr=False)
    server: ServerAddress

    @staticmethod
    def handle_on(snapshot: object, address: ServerAddress, method: str) -> str:
        """`snapshot`'s handle, checked to be a `RemoteSnapshot` of the server at `address`."""
        if not isinstance(snapshot, RemoteSnapshot):
            raise TypeError(
                f"RemoteEnv.{method}() takes a RemoteSnapshot from RemoteEnv.snapshot(), got "
                f"{type(snapshot).__name__}; a local env's snapshot restores in a local env"
            )
        if snapshot.server != address:
            raise ValueError(
                f"this snapshot was taken on the server at {snapshot.server}, not this env's "
                f"({address}); a snapshot restores and forks only on its own server"
            )
        return snapshot.handle
