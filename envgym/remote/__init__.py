"""Envs over the network: the ``envgym serve`` WebSocket server and `RemoteEnv`.

``envgym serve ID --port P`` (or ``--uds PATH``) serves any envgym env at
``/ws`` in OpenEnv's session protocol; `RemoteEnv` is a `gymnasium.Env` over
one such session. The client needs websockets and httpx, the server fastapi
and uvicorn (``pip install 'envgym[remote]'``). Importing this package needs
none of them: the server's names (`serve`, `serve_in_background`, ...) load
their modules when first used.

- `envgym.remote.client`: `RemoteEnv` and its errors.
- `envgym.remote.address`: `ServerAddress`, `RemoteSnapshot`.
- `envgym.remote.protocol`, `envgym.remote.messages`: the wire format, and its
  pydantic models.
- `envgym.remote.server`: the ASGI app (`EnvServer`), on `envgym.remote.threads`;
  its ``snapshot``/``restore``/``fork`` messages in `envgym.remote.forks`, on the
  bounded store of `envgym.remote.snapshots`.
- `envgym.remote.launcher`: `serve`, `serve_in_background`, `serve_in_subprocess`.
- `envgym.remote.container`: `DockerEnv` and `ContainerServer`, on the runtime
  image of `envgym.remote.image`.
"""

from __future__ import annotations

import importlib
from typing import Any

from envgym.remote.address import RemoteSnapshot, ServerAddress
from envgym.remote.client import (
    RemoteEnv,
    RemoteEnvError,
    ServerUnreachable,
    SessionClosed,
    SessionRejected,
    wait_for_server,
)
from envgym.remote.config import ServerConfig, ServerStartError

__all__ = [
    "ContainerServer",
    "DockerEnv",
    "RemoteEnv",
    "RemoteEnvError",
    "RemoteSnapshot",
    "ServerAddress",
    "ServerConfig",
    "ServerStartError",
    "ServerUnreachable",
    "SessionClosed",
    "SessionRejected",
    "serve",
    "serve_command",
    "serve_in_background",
    "serve_in_subprocess",
    "wait_for_server",
]

#: Names whose modules need the server's packages (or docker), by module.
_LAZY = {
    "serve": "envgym.remote.launcher",
    "serve_command": "envgym.remote.launcher",
    "serve_in_background": "envgym.remote.launcher",
    "serve_in_subprocess": "envgym.remote.launcher",
    "ContainerServer": "envgym.remote.container",
    "DockerEnv": "envgym.remote.container",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'envgym.remote' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
