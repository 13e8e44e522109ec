"""JSON over HTTP for the project's small stdlib servers (the judge's /classify server
and the OpenAI-compatible chat server).

:class:`JsonServer` reads requests in one event loop (``serve_forever``) and hands only
*complete* requests (head and body) to a fixed pool of worker threads. A slow or
half-sent client therefore never holds a thread: it waits in the loop and is cut after
``read_timeout`` seconds (408). The pool has ``workers`` threads whatever the number of
clients; its queue holds at most one request per connection, and connections are
bounded by ``max_connections`` (past it a client gets a quick 503 instead of waiting
unseen in the kernel's backlog) and their buffered bytes by ``max_buffered_bytes``.
With ``api_key`` every route but ``/health`` needs ``Authorization: Bearer <key>``
(401 otherwise), as vLLM's ``--api-key``. Every error reply is JSON.

Closing (``shutdown`` then ``server_close``) ends idle keep-alive connections, lets
the requests in progress finish and joins the workers: no handler thread outlives
the server (one left in a keep-alive read at interpreter exit can abort the process).
"""
from __future__ import annotations

import collections
import hmac
import http.client
import io
import json
import re
import selectors
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer

MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_HEAD_BYTES = 64 * 1024
OPEN_ROUTES = frozenset({"/health"})  # answered without the api key (probes)
LINGER_SECONDS = 2.0  # after a reply with "Connection: close", input is read and dropped
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_DIGITS = re.compile(r"[0-9]+")


class BodyError(ValueError):
    """A request body that cannot be read; ``status`` is the HTTP status that says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def body_length(headers, limit: int = MAX_BODY_BYTES) -> int:
    """The request's checked Content-Length (BodyError: 411 missing, 400 invalid, 413
    over ``limit``). Chunked bodies are refused: the servers need the length up front."""
    if headers.get("Transfer-Encoding") is not None:
        raise BodyError(411, "chunked bodies are not accepted: send the JSON body with a Content-Length")
    values = {v.strip() for v in headers.get_all("Content-Length") or []}
    if not values:
        raise BodyError(411, "a Content-Length header is required with the JSON body")
    if len(values) > 1:
        raise BodyError(400, "conflicting Content-Length headers")
    value = values.pop()
    if not _DIGITS.fullmatch(value):
        raise BodyError(400, f"invalid Content-Length {value[:40]!r}: a number of bytes is required")
    length = int(value) if len(value) < 20 else limit + 1
    if length > limit:
        raise BodyError(413, f"the body is too large: {value[:40]} bytes, the limit is {limit} "
                             f"bytes ({limit / 2**20:g} MiB)")
    return length


def bearer_ok(authorization: str | None, key: str) -> bool:
    """Whether an Authorization header carries ``Bearer <key>`` (constant-time compare)."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        token.strip().encode("latin-1", "replace"), key.encode("utf-8"))


def route_of(path: str) -> str:
    return path.split("?")[0].rstrip("/")


def _framing(head: bytes, limit: int, api_key: str | None) -> tuple[int, bool, bool]:
    """(body bytes to wait for, close after the reply, client waits for 100 Continue)
    from a request head. A head the handler will refuse (a 4xx, a 401 included) has no
    body to wait for: its body is never buffered."""
    line, _, rest = head.partition(b"\n")
    try:
        headers = http.client.parse_headers(io.BytesIO(rest))
    except http.client.HTTPException:
        return 0, True, False
    words = line.decode("latin-1").split()
    if api_key and not (len(words) > 1 and route_of(words[1]) in OPEN_ROUTES) \
            and not bearer_ok(headers.get("Authorization"), api_key):
        return 0, True, False
    if headers.get("Content-Length") is None and headers.get("Transfer-Encoding") is None:
        return 0, False, False
    try:
        length = body_length(headers, limit)
    except BodyError:
        return 0, True, False
    expect = (headers.get("Expect") or "").lower() == "100-continue"
    return length, False, expect


class _Writer(io.BufferedIOBase):
    """The handler's ``wfile``: every write is sent whole (``sendall``)."""

    def __init__(self, sock: socket.socket):
        self._sock = sock

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._sock.sendall(data)
        return len(data)


class _Connection:
    __slots__ = ("sock", "address", "buffer", "scanned", "need", "close_after", "deadline",
                 "lingering", "request")

    def __init__(self, sock: socket.socket, address, deadline: float):
        self.sock, self.address, self.deadline = sock, address, deadline
        self.buffer = bytearray()
        self.scanned, self.need, self.close_after, self.lingering = 0, None, False, False
        self.request = b""


class JsonHandler(BaseHTTPRequestHandler):
    """Handles one complete request that :class:`JsonServer` has already read."""

    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet unless asked: a line per request floods a run
        if getattr(self.server, "verbose", False):
            super().log_message(fmt, *args)

    @classmethod
    def error_payload(cls, status: int, message: str) -> dict:
        """The JSON of an error reply (vLLM's format; a server may override it)."""
        kind = "AuthenticationError" if status == 401 else \
            HTTPStatus(status).phrase.title().replace(" ", "").replace("-", "") + "Error"
        return {"object": "error", "message": message, "type": kind, "code": status}

    @property
    def route(self) -> str:
        return route_of(self.path)

    def setup(self):
        conn: _Connection = self.request
        self.connection = conn.sock
        self.rfile = io.BytesIO(conn.request)
        self.wfile = _Writer(conn.sock)
        self._responded = False
        self.command, self.path, self.request_version = "", "", "HTTP/1.1"

    def handle(self):
        self.close_connection = True
        try:
            self.handle_one_request()
        except Exception as err:  # a bug in a route: a 500 for the client, one line here
            self.close_connection = True
            print(f"{type(self.server).__name__}: {self.command} {self.path}: "
                  f"{type(err).__name__}: {err}", file=sys.stderr, flush=True)
            if not self._responded:
                self.send_error(500, f"internal error: {type(err).__name__}: {err}")

    def handle_expect_100(self):  # the server has sent it (the body is already read)
        return True

    def parse_request(self) -> bool:
        if not self.raw_requestline.strip():
            self.send_error(400, "the request line is empty")
            return False
        if not super().parse_request():
            return False
        if self.request_version == "HTTP/0.9":
            self.send_error(400, "HTTP/0.9 requests are not supported")
            return False
        key = getattr(self.server, "api_key", None)
        if key and self.route not in OPEN_ROUTES and not bearer_ok(self.headers.get("Authorization"), key):
            self.send_json(401, self.error_payload(401, "a valid API key is required: send "
                                                   "'Authorization: Bearer <key>'"),
                           headers={"WWW-Authenticate": "Bearer"})
            return False
        return True

    def send_response(self, code, message=None):
        self._responded = True
        super().send_response(code, message)

    def send_error(self, code, message=None, explain=None):
        """Every error reply is JSON, also those of the base class (400, 414, 431, 501...)."""
        self.close_connection = True
        if self.request_version in ("HTTP/0.9", ""):
            self.request_version = "HTTP/1.1"  # a status line, whatever the request was
        short, long = self.responses.get(code, ("error", "error"))
        self.log_error("code %d, message %s", code, message or short)
        self.send_json(int(code), self.error_payload(int(code), message or long))

    def send_json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection or self.request.close_after:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_json(self) -> dict:
        """The request's JSON object. BodyError (a ValueError) with the status fit for the
        reply (``err.status``: 411, 413, 400) and a message that says what is wrong."""
        try:
            length = body_length(self.headers, getattr(self.server, "max_body_bytes", MAX_BODY_BYTES))
        except BodyError:
            self.close_connection = True  # the body, if any, was not read
            raise
        raw = self.rfile.read(length)
        if not raw:
            raise BodyError(400, "the body is empty: a JSON object is required")
        if len(raw) < length:
            raise BodyError(400, f"the body ended after {len(raw)} of its {length} bytes")
        try:
            body = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as err:
            raise BodyError(400, f"the body is not UTF-8 (byte {err.start})") from None
        except RecursionError:
            raise BodyError(400, "the body is not JSON this server reads: nested too deeply") from None
        except ValueError as err:
            raise BodyError(400, f"the body is not JSON: {err}") from None
        if not isinstance(body, dict):
            raise BodyError(400, f"the body must be a JSON object, not {type(body).__name__}")
        return body

    def read_json_or_reply(self) -> dict | None:
        """:meth:`read_json`, or None after replying with its error (status and JSON)."""
        try:
            return self.read_json()
        except BodyError as err:
            self.send_json(err.status, self.error_payload(err.status, str(err)))
            return None


class JsonServer(HTTPServer):
    """See the module's docstring. Serve with ``serve_forever`` (one thread), stop with
    ``shutdown()`` from another thread, then ``server_close()``."""

    max_body_bytes = MAX_BODY_BYTES
    request_queue_size = 1024  # the listen backlog: a burst of clients is accepted, not dropped

    def __init__(self, address, handler, *, api_key: str | None = None,
                 read_timeout: float = 30.0, workers: int = 16, max_connections: int = 1024,
                 max_buffered_bytes: int = 1024 * 1024 * 1024):
        if read_timeout <= 0 or workers < 1 or max_connections < 1:
            raise ValueError("read_timeout, workers and max_connections must be positive")
        if api_key is not None or "api_key" not in self.__dict__:  # a subclass may set it first
            self.api_key = api_key or None
        self.read_timeout, self.workers = float(read_timeout), workers
        self.max_connections, self.max_buffered_bytes = max_connections, max_buffered_bytes
        self._pool: ThreadPoolExecutor | None = None
        self._selector: selectors.BaseSelector | None = None
        self._waiting: set[_Connection] = set()
        self._returns: collections.deque = collections.deque()
        self._lock = threading.Lock()
        self._stop_request = False
        self._stopped = threading.Event()
        self._count = self._buffered = 0
        self._next_expiry = 0.0
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        super().__init__(address, handler)

    # -- the loop -----------------------------------------------------------------
    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._stopped.clear()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="json-server")
        self.socket.setblocking(False)
        selector = selectors.DefaultSelector()
        selector.register(self.socket, selectors.EVENT_READ, "accept")
        selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        with self._lock:
            self._selector = selector
        try:
            while not self._stop_request:
                for key, _ in selector.select(min(poll_interval, 0.1)):
                    if key.data == "accept":
                        self._accept()
                    elif key.data == "wake":
                        self._drain_wake()
                    else:
                        self._on_readable(key.data)
                self._take_returns()
                self._expire()
                self.service_actions()
        finally:
            with self._lock:
                self._selector = None
            for conn in list(self._waiting):  # idle keep-alive and half-sent clients
                self._close(conn)
            selector.close()
            self._stop_request = False
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop ``serve_forever`` (called from another thread) and wait for it."""
        self._stop_request = True
        self._wake()
        self._stopped.wait()

    def server_close(self) -> None:
        """Close the listening socket, let requests in progress finish, join the workers
        and close every connection."""
        if self._selector is not None:
            JsonServer.shutdown(self)  # not a subclass's, which may call server_close
        super().server_close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._take_returns()
        for sock in (self._wake_r, self._wake_w):
            sock.close()

    def serve_until_interrupted(self, banner: str) -> int:
        """Serve in the foreground (a command line server) until Ctrl+C, then close."""
        print(banner, flush=True)
        try:
            self.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.server_close()
        return 0

    @property
    def open_connections(self) -> int:
        return self._count

    # -- connections ----------------------------------------------------------------
    def _accept(self) -> None:
        for _ in range(128):  # a burst at a time; the loop comes back for more
            try:
                sock, address = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as err:  # e.g. out of file descriptors: say so, keep serving
                print(f"{type(self).__name__}: accept failed: {err}", file=sys.stderr, flush=True)
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # replies go in two writes
            self._count += 1
            conn = _Connection(sock, address, time.monotonic() + self.read_timeout)
            if self._count > self.max_connections:
                self._refuse(conn, 503, f"the server is busy ({self.max_connections} connections); "
                                        "retry later")
            else:
                self._wait(conn)

    def _wait(self, conn: _Connection) -> None:
        self._waiting.add(conn)
        self._selector.register(conn.sock, selectors.EVENT_READ, conn)

    def _on_readable(self, conn: _Connection) -> None:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the client has gone (or closed its side after our reply)
            self._close(conn)
            return
        if conn.lingering:
            return
        if not conn.buffer:  # a new request: its whole head and body get read_timeout
            conn.deadline = time.monotonic() + self.read_timeout
        if self._buffered + len(data) > self.max_buffered_bytes:
            self._refuse(conn, 503, "the server is busy (too much request data pending); retry later")
            return
        conn.buffer += data
        self._buffered += len(data)
        self._advance(conn)

    def _advance(self, conn: _Connection) -> None:
        """Hand the connection's next request to a worker once all of it has arrived."""
        if conn.need is None:
            if conn.buffer[:1] in (b"\r", b"\n"):  # blank lines before a request are allowed
                stripped = conn.buffer.lstrip(b"\r\n")
                self._buffered -= len(conn.buffer) - len(stripped)
                conn.buffer = stripped
            match = _HEAD_END.search(conn.buffer, max(0, conn.scanned - 3))
            conn.scanned = len(conn.buffer)
            if match is None:
                if len(conn.buffer) > MAX_HEAD_BYTES:
                    self._refuse(conn, 431, f"the request head is over {MAX_HEAD_BYTES} bytes")
                return
            body, conn.close_after, expect = _framing(bytes(conn.buffer[:match.end()]),
                                                      self.max_body_bytes, self.api_key)
            conn.need = match.end() + body
            if expect and len(conn.buffer) < conn.need:
                self._send_quietly(conn.sock, b"HTTP/1.1 100 Continue\r\n\r\n")
        if len(conn.buffer) >= conn.need:
            self._dispatch(conn)

    def _dispatch(self, conn: _Connection) -> None:
        self._waiting.discard(conn)
        self._selector.unregister(conn.sock)
        conn.request = bytes(conn.buffer[:conn.need])
        del conn.buffer[:conn.need]
        conn.need, conn.scanned = None, 0
        try:
            self._pool.submit(self._work, conn)
        except RuntimeError:  # the interpreter is shutting down
            self._close(conn)

    def _work(self, conn: _Connection) -> None:
        """In a worker: run the handler on one complete request."""
        keep = False
        try:
            conn.sock.settimeout(self.read_timeout)  # bounds the writes of the reply
            handler = self.RequestHandlerClass(conn, conn.address, self)
            keep = not (handler.close_connection or conn.close_after)
        except Exception as err:  # e.g. the client went away mid-reply
            if not isinstance(err, OSError):
                print(f"{type(self).__name__}: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
        with self._lock:
            self._returns.append((conn, keep))
            running = self._selector is not None
        if running:
            self._wake()

    def _take_returns(self) -> None:
        """In the loop: connections back from the workers wait for their next request."""
        while True:
            with self._lock:
                if not self._returns:
                    return
                conn, keep = self._returns.popleft()
            self._buffered -= len(conn.request)
            conn.request = b""
            if self._selector is None:
                self._close(conn)
                continue
            conn.sock.setblocking(False)
            conn.deadline = time.monotonic() + self.read_timeout
            if keep:
                self._wait(conn)
                if conn.buffer:  # a pipelined request may be complete already
                    self._advance(conn)
            else:
                self._linger(conn)

    def _expire(self) -> None:
        now = time.monotonic()
        if now < self._next_expiry:
            return
        self._next_expiry = now + 0.05
        for conn in [c for c in self._waiting if c.deadline < now]:
            if conn.buffer and not conn.lingering:
                self._refuse(conn, 408, f"the request did not arrive in full within "
                                        f"{self.read_timeout:g} s")
            else:
                self._close(conn)

    def _refuse(self, conn: _Connection, status: int, message: str) -> None:
        """Reply with an error from the loop, then close (without waiting on a worker)."""
        body = json.dumps(self.RequestHandlerClass.error_payload(status, message)).encode()
        head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        self._send_quietly(conn.sock, head + body)
        if conn not in self._waiting:
            self._wait(conn)
        self._linger(conn)

    def _linger(self, conn: _Connection) -> None:
        """Close our side, then read and drop what the client still sends for a while, so
        that closing with unread input does not reset the connection before the client
        has read the reply."""
        self._buffered -= len(conn.buffer)
        conn.buffer, conn.lingering = bytearray(), True
        conn.deadline = time.monotonic() + LINGER_SECONDS
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        if conn not in self._waiting:
            self._wait(conn)

    def _close(self, conn: _Connection) -> None:
        if conn in self._waiting:
            self._waiting.discard(conn)
            if self._selector is not None:
                self._selector.unregister(conn.sock)
        self._buffered -= len(conn.buffer)
        conn.buffer = bytearray()
        conn.sock.close()
        self._count -= 1

    @staticmethod
    def _send_quietly(sock: socket.socket, data: bytes) -> None:
        try:
            sock.send(data)
        except OSError:
            pass

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:  # full (the loop will wake anyway) or closed
            pass

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass
