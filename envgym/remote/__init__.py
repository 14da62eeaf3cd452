"""Envs over the network: the ``envgym serve`` WebSocket server and `RemoteEnv`.

``envgym serve ID --port P`` (or ``--uds PATH``) serves any envgym env at
``/ws`` in OpenEnv's session protocol; `RemoteEnv` is a `gymnasium.Env` over
one such session. The server needs fastapi and uvicorn, the client websockets
(``pip install 'envgym[remote]'``); they are imported only when used.
"""

from envgym.remote.client import (
    RemoteEnv,
    RemoteEnvError,
    ServerUnreachable,
    SessionClosed,
    SessionRejected,
    wait_for_server,
)
from envgym.remote.server import (
    ServerAddress,
    ServerConfig,
    ServerStartError,
    serve,
    serve_command,
    serve_in_background,
    serve_in_subprocess,
)

__all__ = [
    "RemoteEnv",
    "RemoteEnvError",
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
