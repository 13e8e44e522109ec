"""What the project's two servers (the judge's /classify server and the OpenAI-compatible
chat server) share, on FastAPI under uvicorn.

uvicorn's own options carry the limits: ``limit_concurrency`` (past it a quick 503),
``timeout_keep_alive`` and h11's ``max_incomplete_event_size`` (the largest request
head). :class:`Guard`, a small ASGI middleware in front of the app, adds what uvicorn
leaves to the app: bearer authentication on every route but ``/health`` (checked before
the body is read), the body-size bound of :mod:`mera_multi_hf.core.limits` (413 from the
Content-Length, before reading), and a read timeout (408: a slow or half-sent client
holds a connection, never a thread); Starlette's exception handlers make the app's
errors JSON. What uvicorn does before or outside the app (its replies to a malformed
head or past the concurrency limit, a deadline on request heads) is the one private
hook, :mod:`mera_multi_hf.serving.uvicorn_hook`, which makes those JSON in the same format.
:class:`Server` runs it all on a socket bound at construction, in the foreground or in
a thread (tests and notebooks).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from mera_multi_hf.core import json_read
from mera_multi_hf.core.foreign_text import foreign
from mera_multi_hf.core.limits import DEFAULT_LIMITS, Limits
from mera_multi_hf.serving.uvicorn_hook import json_protocol

OPEN_ROUTES = frozenset({"/health"})  # answered without the api key (probes)
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


class BodyError(ValueError):
    """A request that cannot be read; ``status`` is the HTTP status that says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def parse_json_object(raw: bytes, route: str = "the request") -> dict:
    """The body as a JSON object, through the one JSON reader (json_read), else BodyError
    (400) saying what is wrong with it; a lone surrogate (not valid Unicode) is refused."""
    if not raw:
        raise BodyError(400, "the body is empty: a JSON object is required")
    try:
        body = json_read.loads(raw, route, max_bytes=len(raw))
    except json_read.JsonReadError as err:
        raise BodyError(400, f"the body is not JSON this server reads: {err.reason}") from None
    if not isinstance(body, dict):
        raise BodyError(400, f"the body must be a JSON object, not {type(body).__name__}")
    if json_read.may_hold_surrogates(raw) and json_read.replace_unencodable(body)[1]:
        raise BodyError(
            400,
            "the body holds a lone surrogate escape (\\ud800-\\udfff not in a "
            "high+low pair): not valid Unicode text",
        )
    return body


def json_bytes(payload: dict) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")


async def send_json(send, status: int, payload: dict, close: bool = False) -> None:
    """A whole JSON reply through ASGI ``send`` (``close``: the body may be unread)."""
    body = json_bytes(payload)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _declared_length(headers: dict, limit: int) -> int:
    """The Content-Length of a request with a body (h11 has checked its syntax)."""
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        raise BodyError(
            411, "chunked bodies are not accepted: send the JSON body with a Content-Length"
        )
    if b"content-length" not in headers:
        raise BodyError(411, "a Content-Length header is required with the JSON body")
    length = int(headers[b"content-length"])
    if length > limit:
        raise BodyError(
            413,
            f"the body is too large: {length} bytes, the limit is {limit} bytes (max_body_bytes)",
        )
    return length


def json_app(error_payload, title: str) -> FastAPI:
    """A FastAPI app whose every error reply is JSON in ``error_payload``'s format."""
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None)

    async def http_error(request: Request, exc: HTTPException):
        message = {
            404: f"no route {foreign(request.method)} {foreign(request.url.path)}",
            405: f"{foreign(request.method)} is not allowed on {foreign(request.url.path)}",
        }
        text = message.get(exc.status_code, str(exc.detail))
        return JSONResponse(error_payload(exc.status_code, text), exc.status_code)

    async def body_error(request: Request, exc: BodyError):
        return JSONResponse(error_payload(exc.status, str(exc)), exc.status)

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(BodyError, body_error)
    return app


async def read_json(request: Request, model=None):
    """The request's body as a JSON object (BodyError, a 400, otherwise); with ``model``
    (a pydantic model), validated in strict mode into one (a 400 naming the field)."""
    body = parse_json_object(await request.body(), f"{request.method} {request.url.path}")
    return body if model is None else validated(model, body)


def validated(model, body: dict):
    """``body`` as the pydantic ``model`` in strict mode (no "3" for 3), else BodyError 400
    naming the first wrong field and what it must be (the field's description)."""
    import pydantic

    try:
        return model.model_validate(body, strict=True)
    except pydantic.ValidationError as err:
        first = err.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "(body)"
        info = model.model_fields.get(field)
        want = info.description if info is not None and info.description else first["msg"]
        field = foreign(field)  # a client's own field name is echoed at most this long
        if first["type"] == "missing":
            where = foreign(".".join(map(str, first["loc"])))
            raise BodyError(
                400,
                f"`{where}` is missing: "
                + (f"it must be {want}" if where == field else f"`{field}` must be {want}"),
            ) from None
        raise BodyError(400, f"`{field}` must be {want}, not {shown(first['input'])}") from None


def shown(value, width: int = 60) -> str:
    """A value for an error message, cut short (a hostile value can be huge)."""
    if isinstance(value, str):  # cut before it is escaped: a hostile value can be huge
        return foreign(value, width, quoted=True)
    text = (
        repr(value) if isinstance(value, (int, float, bool, type(None))) else type(value).__name__
    )
    return foreign(text, width)


class Guard:
    """ASGI middleware: authentication, body size and read timeout; see the module doc.
    ``api_key`` may change while serving (None: no authentication)."""

    def __init__(
        self,
        app,
        error_payload,
        *,
        api_key: str | None = None,
        read_timeout: float = 30.0,
        limits: Limits = DEFAULT_LIMITS,
    ):
        if read_timeout <= 0:
            raise ValueError("read_timeout must be positive")
        self.app, self.error_payload = app, error_payload
        self.api_key, self.read_timeout, self.limits = api_key, read_timeout, limits

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])  # lower-case names (h11's); the last one wins
        try:
            self._authorise(scope["path"], headers)
            if scope["method"] not in BODY_METHODS:
                return await self.app(scope, receive, send)
            length = _declared_length(headers, self.limits.max_body_bytes)
            body = await self._read_body(receive, length)
        except BodyError as err:
            return await send_json(send, err.status, self.error_payload(err.status, str(err)), True)
        if body is None:  # the client went away
            return None
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)

    def _authorise(self, path: str, headers: dict) -> None:
        if self.api_key is None or path in OPEN_ROUTES:
            return
        given = headers.get(b"authorization", b"")
        if not hmac.compare_digest(given, b"Bearer " + self.api_key.encode("utf-8")):
            raise BodyError(401, "a valid API key is required: send 'Authorization: Bearer <key>'")

    async def _read_body(self, receive, length: int) -> bytes | None:
        chunks, size = [], 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.read_timeout
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0))
            except asyncio.TimeoutError:
                raise BodyError(
                    408,
                    f"the request was not complete within {self.read_timeout:g} s "
                    f"(the server's read timeout)",
                ) from None
            if message["type"] == "http.disconnect":
                return None
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > length:  # h11 stops at Content-Length; this is a second guard
                raise BodyError(413, f"the body is longer than its Content-Length {length}")
            if not message.get("more_body", False):
                return b"".join(chunks)


class ModelQueue:
    """One model call at a time, on one thread of its own, with at most ``max_queue``
    requests waiting their turn (past it BodyError 503, at once)."""

    def __init__(self, max_queue: int = 64, name: str = "model"):
        if max_queue < 1:
            raise ValueError("max_queue must be positive")
        self.max_queue, self.waiting = max_queue, 0
        self.pool = ThreadPoolExecutor(1, thread_name_prefix=name)
        self.lock = asyncio.Lock()

    async def run(self, fn, *args):
        if self.waiting >= self.max_queue:
            raise BodyError(
                503,
                f"the server is busy: {self.waiting} requests wait for the "
                f"model (max_queue {self.max_queue}); retry shortly",
            )
        self.waiting += 1
        try:
            await self.lock.acquire()
        finally:
            self.waiting -= 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)
        finally:
            self.lock.release()

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket. Its protocol is named (IPPROTO_TCP) so that asyncio sets
    TCP_NODELAY on the connections (with 0 it does not, and each reply waits ~40 ms
    for a delayed ACK)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)  # a burst of clients waits in the backlog, not refused
    except OSError:
        sock.close()
        raise
    return sock


class Server:
    """A FastAPI app under uvicorn on a socket bound now (port 0: any free port, see
    ``server_port``). ``serve_forever()`` serves until ``shutdown()`` (from another
    thread) or Ctrl+C; ``start()`` serves in a daemon thread. Connections past
    ``limit_concurrency`` get a quick 503; the socket's backlog absorbs a burst."""

    def __init__(
        self,
        app,
        error_payload,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str | None = None,
        read_timeout: float = 30.0,
        limits: Limits = DEFAULT_LIMITS,
        limit_concurrency: int = 1024,
        timeout_keep_alive: float = 5.0,
        max_head_bytes: int = 64 * 1024,
        verbose: bool = False,
    ):
        if limit_concurrency < 1:
            raise ValueError("limit_concurrency must be positive")
        self.guard = Guard(
            app, error_payload, api_key=api_key, read_timeout=read_timeout, limits=limits
        )
        self.socket = _listen(host, port)
        self.server_address = self.socket.getsockname()[:2]
        self.server_port = self.server_address[1]
        busy = f"the server is busy (limit_concurrency {limit_concurrency}); retry shortly"

        async def busy_app(scope, receive, send):
            await send_json(send, 503, error_payload(503, busy), close=True)

        protocol = json_protocol(
            lambda status, message: json_bytes(error_payload(status, message)),
            read_timeout,
            busy_app,
        )
        config = uvicorn.Config(
            self.guard,
            http=protocol,
            lifespan="off",
            limit_concurrency=limit_concurrency,
            timeout_keep_alive=timeout_keep_alive,
            h11_max_incomplete_event_size=max_head_bytes,
            timeout_graceful_shutdown=5,
            log_level="info" if verbose else "warning",
            access_log=verbose,
            # Quiet: no handlers of uvicorn's own (they would keep the stderr of the moment
            # they were made); warnings still reach the current stderr through logging.
            log_config=uvicorn.config.LOGGING_CONFIG if verbose else None,
            proxy_headers=False,
            server_header=False,
        )
        self.uvicorn = uvicorn.Server(config)
        self.thread: threading.Thread | None = None
        self.closers: list = []  # called after serving stops (the app's thread pools)
        self._stopped = threading.Event()

    @property
    def api_key(self) -> str | None:
        return self.guard.api_key

    @api_key.setter
    def api_key(self, value: str | None) -> None:
        self.guard.api_key = value

    @property
    def url(self) -> str:
        host, port = self.server_address
        return f"http://{host}:{port}"

    def serve_forever(self, poll_interval: float | None = None) -> None:
        try:
            self.uvicorn.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def start(self) -> Server:
        self.thread = threading.Thread(target=self.serve_forever, name="http-server", daemon=True)
        self.thread.start()
        while not self.uvicorn.started and self.thread.is_alive():
            self._stopped.wait(0.01)
        return self

    def shutdown(self) -> None:
        """Stop serving (idle and half-sent connections are closed) and wait for it."""
        self.uvicorn.should_exit = True
        if self.thread is not None or self.uvicorn.started:
            self._stopped.wait()
        if self.thread is not None:
            self.thread.join()
            self.thread = None
        self.server_close()

    def server_close(self) -> None:
        self.socket.close()
        while self.closers:
            self.closers.pop()()

    def serve_until_interrupted(self, banner: str) -> int:
        """Serve in the foreground (a command-line server) until Ctrl+C."""
        print(banner, flush=True)
        try:
            self.serve_forever()
        finally:
            self.server_close()
        return 0
