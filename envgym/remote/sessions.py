"""One env server session: its env, its episode's bookkeeping, and the env calls made for it.

`envgym.remote.server` keeps one `Session` per WebSocket connection; the
functions here run on its env threads (`envgym.remote.threads`).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from envgym.registry import EnvCreationError, make_text_env
from envgym.remote.config import ServerConfig, ServerStartError

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

__all__ = [
    "CallTimedOut",
    "Session",
    "close_env_of",
    "close_env_quietly",
    "declares_fast_calls",
    "make_env",
    "open_env",
    "timed_out_message",
]

logger = logging.getLogger("envgym.remote")


class CallTimedOut(Exception):
    """An env call ran past the server's call deadline; the session must close."""


class Session:
    """One connection's env and episode bookkeeping."""

    def __init__(self, websocket: WebSocket) -> None:
        self.id = uuid.uuid4().hex
        self.websocket = websocket
        self.env: gym.Env | None = None
        self.episode_id: str | None = None
        self.running = False
        self.terminated = False
        self.truncated = False
        self.turn = 0
        self.episode_return = 0.0
        self.busy = True  # until the env exists
        self.closing = False
        #: the env call in flight, what it is, and when it began
        self.call: asyncio.Future[Any] | None = None
        self.call_name = ""
        self.call_started = 0.0
        #: a call that ran past its deadline and may still be running
        self.late_call: asyncio.Future[Any] | None = None
        self.last_active = time.monotonic()
        #: steps run on the event loop (the env declares fast calls and has not overrun)
        self.inline = False


def open_env(session: Session, config: ServerConfig) -> None:
    """Make the session's env (on its thread, so a late close still finds it)."""
    session.env = make_env(config.env_id, config.env_kwargs, checked=False)


def declares_fast_calls(env: gym.Env) -> bool:
    """Whether `env` (under its wrappers) promises short, bounded calls (``fast_calls``)."""
    return getattr(env.unwrapped, "fast_calls", False) is True


def close_env_of(session: Session) -> None:
    if session.env is not None:
        session.env.close()


def close_env_quietly(session: Session) -> None:
    try:
        close_env_of(session)
    except Exception:
        logger.exception("closing the env of session %s failed", session.id)


def timed_out_message(call: str, timeout_s: float) -> str:
    return (
        f"{call} did not return within {timeout_s:g} s (the server's --call-timeout), so the "
        "server closed this session: an env stopped mid-call cannot be trusted. Open a new "
        "session (RemoteEnv: reset()) to go on; if the env is just slow, start the server "
        "with a higher --call-timeout"
    )


def make_env(env_id: str, env_kwargs: Mapping[str, Any], checked: bool = True) -> gym.Env:
    """`make_text_env` (``gym.make`` with errors that say what to fix), its errors as
    `ServerStartError`.

    Session envs go without Gymnasium's passive env checker: the probe env made
    at start-up had it, and after a first reset that raises (a bad option from
    a client) the checker breaks the next step (gymnasium 1.4).
    """
    if not checked:
        env_kwargs = {**env_kwargs, "disable_env_checker": True}
    try:
        return make_text_env(env_id, env_kwargs)
    except KeyError as exc:
        raise ServerStartError(exc.args[0] if exc.args else str(exc)) from None
    except EnvCreationError as exc:
        raise ServerStartError(str(exc)) from None
