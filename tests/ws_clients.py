"""Raw WebSocket clients of an ``envgym serve`` server, as any client would open one,
for the remote tests (`test_remote`, `test_remote_fork`)."""

from __future__ import annotations

import json
import time

from websockets.sync.client import connect, unix_connect

from envgym.remote import ServerAddress


def open_ws(address: ServerAddress, query: str = ""):
    """A raw WebSocket session (a context manager); `query` goes after ``/ws``, e.g.
    ``?fork=TOKEN``."""
    url = address.ws_url + query
    if address.uds is not None:
        return unix_connect(address.uds, url, compression=None)
    return connect(url, compression=None)


def ask(ws, message: dict | str) -> dict:
    """Send one message; the server's reply, parsed."""
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(ws.recv(timeout=30))


def wait_until(predicate, timeout_s: float = 30.0) -> bool:
    """Poll `predicate` every 20 ms until it holds or `timeout_s` passes; whether it held."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()
