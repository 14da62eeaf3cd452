"""`WebSocketProtocol`: uvicorn's websockets-sansio protocol, minus two system calls a message.

uvicorn's protocol stops reading a connection's socket as each message
arrives and starts again once the app has taken it (back pressure), which
is an epoll unregister and register per message: about a tenth of the env
server's CPU per step of a fast env. A session sends one message and waits
for the reply, so the server need not stop reading until messages pile up:
this protocol stops once `WebSocketProtocol.PAUSE_AT` messages wait unread,
which still bounds what a client that floods its session makes the server
hold (a few messages of at most ``--max-message-bytes`` each). Used by
`envgym.remote.launcher` for ``envgym serve``; needs uvicorn and websockets.
"""

from __future__ import annotations

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

__all__ = ["WebSocketProtocol"]


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websockets-sansio protocol, pausing reads only once messages pile up."""

    #: stop reading the socket once this many messages wait for the app
    PAUSE_AT = 4

    def send_receive_event_to_app(self) -> None:
        paused = self.read_paused
        self.read_paused = True  # so that uvicorn's own code does not pause reading
        try:
            super().send_receive_event_to_app()
        finally:
            self.read_paused = paused
        if not self.read_paused and self.queue.qsize() >= self.PAUSE_AT:
            self.read_paused = True
            self.transport.pause_reading()
