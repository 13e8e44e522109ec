"""The one private hook into uvicorn: a subclass of its h11 protocol (``H11Protocol``,
not part of uvicorn's documented API), for what no uvicorn option or ASGI middleware
can do, because each happens before or outside the app:

- a deadline on every request head: uvicorn's ``timeout_keep_alive`` bounds only the
  idle time between requests, and nothing bounds a head sent a byte at a time (a new
  connection's first one from its start, a kept-alive connection's next ones from their
  first byte); past it, 408 and the connection closed;
- JSON in place of uvicorn's plain-text replies to a malformed request head (400, with
  h11's reason, which uvicorn drops) and past ``limit_concurrency`` (503: uvicorn swaps
  in its own plain-text app, so the app never sees the request);
- on shutdown, a half-sent request's connection closed at once (uvicorn waits for its
  response until ``timeout_graceful_shutdown``, then answers 500).

Tested against the installed uvicorn in tests/test_library_hooks.py; pyproject.toml's
uvicorn range covers only the versions it was tested on.
"""

from __future__ import annotations

from http import HTTPStatus

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class _HeadDeadlines:
    """Every request head complete within ``head_timeout`` seconds, else 408."""

    head_timeout: float

    def connection_made(self, transport):
        super().connection_made(transport)
        self.head_of = None  # the cycle after which the head being read comes
        self.loop.call_later(self.head_timeout, self._head_timeout, None)

    def data_received(self, data: bytes) -> None:
        if (
            self.cycle is not None
            and self.cycle.response_complete
            and self.head_of is not self.cycle
        ):
            self.head_of = self.cycle
            self.loop.call_later(self.head_timeout, self._head_timeout, self.cycle)
        super().data_received(data)

    def _head_timeout(self, after):
        if self.cycle is after and not self.transport.is_closing():
            self._send_error(408, f"no complete request head within {self.head_timeout:g} s")


def json_protocol(error_body, head_timeout: float, busy_app):
    """uvicorn's h11 protocol with the behaviours of the module doc. ``error_body(status,
    message)``: the JSON bytes of an error reply; ``busy_app``: the ASGI app that answers
    a request past ``limit_concurrency``."""

    class JsonH11Protocol(_HeadDeadlines, H11Protocol):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.head_timeout = head_timeout
            # uvicorn's own limit test off, made in the app instead (with this task counted)
            self.busy_limit, self.limit_concurrency = self.limit_concurrency, None
            self.app, self.reason = self._bounded(self.app), "Invalid HTTP request received."
            next_event = self.conn.next_event

            def remembering():  # keeps h11's reason for the 400 reply
                try:
                    return next_event()
                except h11.RemoteProtocolError as err:
                    self.reason = f"invalid HTTP request: {err}"
                    raise

            self.conn.next_event = remembering

        def _bounded(self, app):
            async def bounded(scope, receive, send):
                limit = self.busy_limit
                if limit is not None and (
                    len(self.connections) >= limit or len(self.tasks) > limit
                ):
                    return await busy_app(scope, receive, send)
                return await app(scope, receive, send)

            return bounded

        def send_400_response(self, msg: str) -> None:
            self._send_error(400, self.reason)

        def _send_error(self, status: int, message: str) -> None:
            body = error_body(status, message)
            head = (
                f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
                f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
                f"connection: close\r\n\r\n"
            ).encode()
            self.transport.write(head + body)
            self.transport.close()

        def shutdown(self) -> None:
            if self.cycle is not None and not self.cycle.response_started and self.cycle.more_body:
                self.transport.close()  # a half-sent request: nothing to finish
            else:
                super().shutdown()

    return JsonH11Protocol
