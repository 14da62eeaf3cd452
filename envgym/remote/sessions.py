"""One env server session: its env, its episode's bookkeeping, and the env calls made for it.

`envgym.remote.server` keeps one `Session` per WebSocket connection; the
functions here run on its env threads (`envgym.remote.threads`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from envgym.registry import EnvCreationError, get_spec, load_entry_point, make_text_env
from envgym.remote.config import ServerConfig, ServerStartError
from envgym.remote.messages import MetadataReply, error_reply
from envgym.remote.protocol import ErrorCode
from envgym.version import __version__

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

__all__ = [
    "CallTimedOut",
    "Session",
    "close_env_of",
    "close_env_quietly",
    "declares_fast_calls",
    "env_error",
    "env_metadata",
    "every_quarter_of",
    "make_env",
    "open_env",
    "timed_out_message",
]

logger = logging.getLogger("envgym.remote")


class CallTimedOut(Exception):
    """An env call ran past the server's call deadline; the session must close."""


class Session:
    """One connection's env and episode bookkeeping. A fork's session has no
    connection (`websocket` None) until its client attaches."""

    def __init__(self, websocket: WebSocket | None) -> None:
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


def env_metadata(env_id: str) -> MetadataReply:
    """What ``GET /metadata`` returns: the registry's description of the env and
    its manual (the env class's docstring), never anything of a session. An env
    registered with gymnasium alone has its docstring's first line as description."""
    try:
        spec = get_spec(env_id)
        description, entry_point = spec.description, spec.entry_point
    except KeyError:
        description, entry_point = "", gym.spec(env_id).entry_point
    if isinstance(entry_point, str):
        entry_point = load_entry_point(entry_point)
    manual = inspect.getdoc(entry_point)
    return MetadataReply(
        name=env_id,
        description=description or (manual or env_id).splitlines()[0],
        readme_content=manual,
        version=f"envgym {__version__}",
        author="envgym",
    )


async def every_quarter_of(
    timeout: float, *, shortest: float, longest: float
) -> AsyncIterator[float]:
    """The monotonic time, yielded every quarter of `timeout` (kept within
    `shortest` and `longest` seconds), forever: the beat of a watch that fails
    (or expires) what ran past `timeout` within a quarter of it."""
    interval = min(max(timeout / 4, shortest), longest)
    while True:
        await asyncio.sleep(interval)
        yield time.monotonic()


def env_error(call: str, exc: Exception, then: str = "") -> str:
    """The EXECUTION_ERROR frame for an env call (`call`, e.g. ``env.step()``) that
    raised `exc`; `then` says what to do next, when there is more than retrying."""
    return error_reply(
        ErrorCode.EXECUTION_ERROR,
        f"{call} raised {type(exc).__name__}: {exc}" + (f"; {then}" if then else ""),
        exception=type(exc).__name__,
    )
