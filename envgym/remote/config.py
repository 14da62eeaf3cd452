"""`ServerConfig`, what one env server serves and its limits, and `ServerStartError`.

Shared by the server (`envgym.remote.server`) and its launchers
(`envgym.remote.launcher`); imports only the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CALL_MODES", "ServerConfig", "ServerStartError"]

#: How a server runs env calls: ``auto`` steps envs that declare ``fast_calls``
#: on the event loop and everything else on threads; ``threads`` runs every call
#: on a thread (see `envgym.remote.server`).
CALL_MODES = ("auto", "threads")


class ServerStartError(RuntimeError):
    """The server could not start: bad env id or kwargs, address in use, ..."""


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
    #: snapshot handles one session may hold at once; one more is refused (SNAPSHOT_LIMIT).
    max_snapshots: int = 64
    #: bytes (pickled) the snapshots one session holds may take; more is refused.
    max_snapshot_bytes: int = 64 * 1024 * 1024
    #: seconds a snapshot handle, and a fork not yet attached to, lives.
    snapshot_ttl_s: float = 600.0
    #: one of `CALL_MODES`: ``threads`` keeps even declared-fast envs off the event loop.
    calls: str = "auto"

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
        for name in ("max_snapshots", "max_snapshot_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
        if not isinstance(self.snapshot_ttl_s, int | float) or not self.snapshot_ttl_s > 0:
            raise ValueError(f"snapshot_ttl_s must be > 0 seconds, got {self.snapshot_ttl_s!r}")
        if not isinstance(self.send_privileged, bool):
            raise ValueError(f"send_privileged must be True or False, got {self.send_privileged!r}")
        if self.calls not in CALL_MODES:
            raise ValueError(f"calls must be one of {list(CALL_MODES)}, got {self.calls!r}")

    @property
    def idle_timeout(self) -> float | None:
        return self.idle_timeout_s or None

    @property
    def call_timeout(self) -> float | None:
        return self.call_timeout_s or None
