"""The env server's snapshot store: what a ``snapshot`` handle names, and its bounds.

A handle is an unguessable token (`secrets.token_urlsafe`); what it names, the
env's ``env.unwrapped.snapshot()`` pickled and the session's episode
bookkeeping, stays in the server's memory. Pickling at snapshot time fixes the
state (later steps cannot change it) and gives its size. Whoever holds a
handle may restore or fork it in any session of the server: it is a
capability, as long to guess as a 128-bit key.

Bounds, per session that takes snapshots (`ServerConfig`): at most
``max_snapshots`` handles and ``max_snapshot_bytes`` bytes at once, each living
``snapshot_ttl_s`` seconds and none past the close of its session, so memory
is bounded by sessions times those limits. Past a bound a snapshot is refused
(`SnapshotRefused`, code SNAPSHOT_LIMIT) rather than the oldest evicted behind
the caller's back.

The functions at the end run on the server's env threads.
"""

from __future__ import annotations

import pickle
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from envgym.remote.protocol import ErrorCode

__all__ = [
    "Bookkeeping",
    "SnapshotRefused",
    "SnapshotStore",
    "StoredSnapshot",
    "new_token",
    "restore_env",
    "take_snapshot",
]


def new_token() -> str:
    """An unguessable token (128 random bits, URL-safe): a handle or a fork's session."""
    return secrets.token_urlsafe(16)


class SnapshotRefused(Exception):
    """A snapshot, restore or fork the store refuses; `code` is its `ErrorCode`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Bookkeeping:
    """A session's episode bookkeeping, as it was when a snapshot was taken."""

    episode_id: str | None
    turn: int
    running: bool
    terminated: bool
    truncated: bool
    episode_return: float


@dataclass(frozen=True)
class StoredSnapshot:
    """One handle's state: the env's pickled snapshot and the session's bookkeeping."""

    blob: bytes
    book: Bookkeeping
    owner: str
    expires: float


class SnapshotStore:
    """Snapshot handles by token, bounded per owning session (see the module docstring)."""

    def __init__(self, max_snapshots: int, max_bytes: int, ttl_s: float) -> None:
        self.max_snapshots = max_snapshots
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self._by_handle: dict[str, StoredSnapshot] = {}
        #: each owner's handles, and the bytes they hold
        self._owned: dict[str, dict[str, int]] = {}

    def __len__(self) -> int:
        return len(self._by_handle)

    def check_room(self, owner: str, now: float) -> None:
        """`SnapshotRefused` if `owner` holds ``max_snapshots`` live handles already."""
        for held_handle in list(self._owned.get(owner, ())):
            if self._by_handle[held_handle].expires <= now:
                self._drop(held_handle)
        owned = self._owned.get(owner, {})
        if len(owned) >= self.max_snapshots:
            raise SnapshotRefused(
                ErrorCode.SNAPSHOT_LIMIT,
                f"this session already holds {len(owned)} snapshots, the server's limit "
                f"(--max-snapshots {self.max_snapshots}); release the ones you are done with "
                '({"type": "release"}, RemoteEnv.release), restore or fork sooner, take fewer '
                f"(each lives {self.ttl_s:g} s, --snapshot-ttl), or start the server with a "
                "higher --max-snapshots",
            )

    def put(self, owner: str, blob: bytes, book: Bookkeeping, now: float) -> str:
        """Keep `blob` for `owner`; its new handle, or `SnapshotRefused` past a bound."""
        self.check_room(owner, now)
        held = sum(self._owned.get(owner, {}).values())
        if held + len(blob) > self.max_bytes:
            raise SnapshotRefused(
                ErrorCode.SNAPSHOT_LIMIT,
                f"this snapshot is {len(blob):,} bytes and the session's snapshots hold "
                f"{held:,}; together they pass the server's --max-snapshot-bytes "
                f"{self.max_bytes:,}. Release the ones you are done with, take fewer, let old "
                f"ones expire (--snapshot-ttl {self.ttl_s:g} s), or start the server with a "
                "higher --max-snapshot-bytes",
            )
        handle = new_token()
        self._by_handle[handle] = StoredSnapshot(blob, book, owner, now + self.ttl_s)
        self._owned.setdefault(owner, {})[handle] = len(blob)
        return handle

    def get(self, handle: str, now: float) -> StoredSnapshot:
        """The snapshot `handle` names; `SnapshotRefused` (UNKNOWN_SNAPSHOT) if none is held."""
        stored = self._by_handle.get(handle)
        if stored is not None and stored.expires <= now:
            self._drop(handle)
            stored = None
        if stored is None:
            raise SnapshotRefused(
                ErrorCode.UNKNOWN_SNAPSHOT,
                "this server holds no snapshot with that handle: it was never taken here, its "
                f"time to live ran out (--snapshot-ttl {self.ttl_s:g} s), or the session that "
                'took it closed. Take a new one with {"type": "snapshot"} and restore it sooner',
            )
        return stored

    def release(self, handle: str) -> bool:
        """Forget `handle`; whether the store held it."""
        held = handle in self._by_handle
        self._drop(handle)
        return held

    def drop_owner(self, owner: str) -> None:
        """Forget every handle `owner` took (its session closed)."""
        for handle in list(self._owned.get(owner, ())):
            self._drop(handle)

    def expire(self, now: float) -> None:
        """Forget every handle past its time to live."""
        for handle in [h for h, s in self._by_handle.items() if s.expires <= now]:
            self._drop(handle)

    def _drop(self, handle: str) -> None:
        stored = self._by_handle.pop(handle, None)
        if stored is None:
            return
        owned = self._owned.get(stored.owner)
        if owned is not None:
            owned.pop(handle, None)
            if not owned:
                del self._owned[stored.owner]


# ------------------------------------------------------- on env threads
def take_snapshot(env: gym.Env) -> bytes:
    """``env.unwrapped.snapshot()``, pickled; a TypeError names an env that cannot."""
    snapshot = getattr(env.unwrapped, "snapshot", None)
    if not callable(snapshot) or not callable(getattr(env.unwrapped, "restore", None)):
        raise TypeError(
            f"{type(env.unwrapped).__name__} has no snapshot()/restore(), so its episodes "
            "cannot be snapshot or forked; serve an envgym TextEnv"
        )
    return pickle.dumps(snapshot(), protocol=pickle.HIGHEST_PROTOCOL)


def restore_env(env: gym.Env, blob: bytes, turn: int) -> None:
    """Put `env` into the state `blob` (from `take_snapshot`) holds, `turn` turns in.

    The wrappers ``gym.make`` put around it follow: OrderEnforcing counts the
    episode as reset, a TimeLimit as `turn` steps in.
    """
    env.unwrapped.restore(pickle.loads(blob))  # noqa: S301  (the server's own bytes)
    for layer in _layers(env):
        if hasattr(layer, "_has_reset"):
            layer._has_reset = True
        if isinstance(layer, gym.wrappers.TimeLimit):
            layer._elapsed_steps = turn


def _layers(env: gym.Env) -> Iterator[Any]:
    while isinstance(env, gym.Wrapper):
        yield env
        env = env.env
