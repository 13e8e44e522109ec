"""The one HTTP client of the project: every outbound request (the openai backend, the
served judge, the preflight's probes, the Hub probe) goes through :class:`Client`
(tests/test_network_boundary.py walks the code for any other).

- One deadline per request: connect, head, body, redirects and retries together end
  within ``timeout`` seconds. A per-read timeout alone lets a reply dripping one byte a
  second run forever, so a watchdog thread shuts the connection's socket when the
  deadline passes, whatever the read is waiting for.
- Retries (connection errors, a reply cut short, HTTP 408/409/425/429/5xx) back off as
  urllib3 does; ``Retry-After`` is obeyed only while it fits in what is left of the
  deadline (else the last answer is the answer).
- Redirects: at most :data:`MAX_REDIRECTS`, and never to another host while the request
  carries a key (a header, or a user name, password or key in the URL).
- A reply is read at most ``max_bytes`` (decompressed): a huge or endless one is refused.
- Every transport error is :class:`RequestFailed`: one line naming the server (masked)
  and the cause, never a urllib3 traceback.

Built on urllib3 alone (what ``requests`` is built on; ``requests`` with its character
detectors took a run more CPU to import than all its requests): a connection pool per
server and thread (a proxy's manager per proxy); the environment's proxy (HTTPS_PROXY...),
certificates and a URL's user and password (Basic auth) as requests takes them; JSON."""

from __future__ import annotations

import heapq
import http.client
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from urllib.parse import unquote, urljoin, urlsplit

import urllib3
from urllib3._collections import HTTPHeaderDict
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.util import Retry, make_headers

from ._version import __version__
from .errors import MeraError
from .foreign_text import foreign
from .masking import SECRET_NAME, mask_secrets

RETRY_STATUS = (408, 409, 425, 429, 500, 502, 503, 504)
REDIRECT_STATUS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 5
REPLY_BYTES = 64 * 1024 * 1024  # a reply read at most (limits.Limits.max_reply_bytes)
MAX_BACKOFF = 120.0  # seconds, as urllib3's Retry caps it
# what urllib3 and http.client raise for a failed exchange
TRANSPORT_ERRORS = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError, ValueError)
HEADERS = {
    "User-Agent": f"mera-multi-hf/{__version__}",
    "Accept-Encoding": make_headers(accept_encoding=True)["accept-encoding"],
    "Accept": "*/*",
}


class RequestFailed(MeraError):
    """A request that got no usable reply: ``where`` (the server, masked) and
    ``problem`` (the cause, one line); ``transient``: a retry may help."""

    def __init__(self, where: str, problem: str, transient: bool = True):
        super().__init__(f"the server at {where} {problem}")
        self.where, self.problem, self.transient = where, problem, transient


class ReplyTooLarge(RequestFailed):
    """A reply longer than the bound: the server is broken or hostile."""

    def __init__(self, where: str, problem: str):
        super().__init__(where, problem, transient=False)


@dataclass(frozen=True)
class Reply:
    """A whole reply: status, headers (case-insensitive), body bytes, final URL."""

    status: int
    headers: HTTPHeaderDict
    content: bytes
    url: str

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


def server_of(url: str) -> str:
    """``scheme://host:port`` of ``url``, masked: how messages name a server."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a malformed URL: named as given
        return mask_secrets(url)[:200]
    return mask_secrets(f"{parts.scheme}://{host}{port}")


class _Deadline:
    """The end of one request; ``expire`` shuts the sockets it used, which wakes a read
    blocked on them (the socket, not the connection: http.client lets go of a closing
    connection's socket once the head is read, while the body still reads from it)."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds
        self.expired = self.done = False
        self._sockets: list = []
        self._lock = threading.Lock()

    def __lt__(self, other: _Deadline) -> bool:
        return self.end < other.end

    def left(self) -> float:
        return self.end - time.monotonic()

    def watch(self, sock) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:  # connected just as the time ran out
                _shut(sock)

    def finish(self) -> None:
        with self._lock:
            self.done = True

    def expire(self) -> None:
        with self._lock:
            if self.done:
                return
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed
        pass


class _Watchdog:
    """One daemon thread that expires each armed deadline that is not done by its end."""

    def __init__(self):
        self._heap: list[_Deadline] = []
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, deadline: _Deadline) -> None:
        with self._wake:
            heapq.heappush(self._heap, deadline)
            if self._thread is None or not self._thread.is_alive():  # (none after a fork)
                self._thread = threading.Thread(
                    target=self._run, name="mera-http-deadline", daemon=True
                )
                self._thread.start()
            if self._heap[0] is deadline:  # woken only for a new earliest end (not per request)
                self._wake.notify()

    def _run(self) -> None:
        with self._wake:
            while True:
                while self._heap and self._heap[0].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._wake.wait()
                    continue
                left = self._heap[0].left()
                if left > 0:
                    self._wake.wait(left)
                    continue
                heapq.heappop(self._heap).expire()


_WATCHDOG = _Watchdog()
_ACTIVE = threading.local()  # the deadline of the request this thread is sending


class _Watched:
    """A urllib3 connection whose socket is under the current request's deadline, from
    the moment it connects (or, kept alive, from each request it sends)."""

    def connect(self):
        super().connect()
        _watch(self.sock)

    def request(self, *args, **kwargs):
        if self.sock is not None:
            _watch(self.sock)
        return super().request(*args, **kwargs)


def _watch(sock) -> None:
    deadline = getattr(_ACTIVE, "deadline", None)
    if deadline is not None and sock is not None:
        deadline.watch(sock)


class _Pool(HTTPConnectionPool):
    ConnectionCls = type("WatchedHTTPConnection", (_Watched, HTTPConnection), {})


class _TLSPool(HTTPSConnectionPool):
    ConnectionCls = type("WatchedHTTPSConnection", (_Watched, HTTPSConnection), {})


WATCHED_POOLS = {"http": _Pool, "https": _TLSPool}  # none retries: Client does


def _proxy_of(url: str) -> str | None:
    """The environment's proxy for ``url`` (NO_PROXY obeyed), as requests finds it."""
    # (urllib.request, 5 ms to import, only where a variable is named *_proxy)
    if any(v and k[-6:].lower() == "_proxy" for k, v in os.environ.items()):
        import urllib.request

        parts, proxies = urlsplit(url), urllib.request.getproxies_environment()
        if proxies and not urllib.request.proxy_bypass_environment(parts.hostname or "", proxies):
            return proxies.get(parts.scheme) or proxies.get("all")
    return None


def _trusted() -> dict:
    """The certificates a TLS server is checked against, as requests picks them: the
    bundle named by ``REQUESTS_CA_BUNDLE`` or ``CURL_CA_BUNDLE``, else certifi's (the
    system's where certifi is missing)."""
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if not bundle:
        try:
            import certifi
        except ImportError:
            return {}
        bundle = certifi.where()
    return {"cert_reqs": "CERT_REQUIRED", "ca_certs": bundle}


def _json_body(body, where: str) -> bytes:
    try:
        return json.dumps(body, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as err:  # NaN, or what JSON cannot hold
        raise RequestFailed(where, f"cannot be sent this body: not JSON ({err})", False) from None


def _basic_auth(url: str) -> dict:
    """The Authorization header of a URL's user name and password ({} without them)."""
    parts = urlsplit(url)
    if not (parts.username or parts.password):
        return {}
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    return {"Authorization": make_headers(basic_auth=pair)["authorization"]}


class Client:
    """Requests to one or more servers under one policy. ``timeout``: seconds a request
    may take, its redirects and retries included; ``retries`` and ``backoff``: of a
    failed request (backoff * 2**n seconds between tries, the first retry at once);
    ``api_key``: sent as ``Authorization: Bearer``; ``max_bytes``: the most a reply
    may take; ``pool_size``: connections kept per server and thread. Thread-safe: each
    thread has its own pools."""

    def __init__(
        self,
        timeout: float,
        *,
        retries: int = 0,
        backoff: float = 1.0,
        api_key: str | None = None,
        max_bytes: int = REPLY_BYTES,
        pool_size: int = 16,
    ):
        self.timeout, self.retries, self.backoff = float(timeout), max(0, retries), backoff
        self.api_key, self.max_bytes, self.pool_size = api_key, max_bytes, pool_size
        self._local = threading.local()

    def get(self, url: str) -> Reply:
        return self.request("GET", url)

    def post(self, url: str, body) -> Reply:
        return self.request("POST", url, body)

    def request(self, method: str, url: str, body=None) -> Reply:
        """The reply (a failing status too, once the retries are spent or the deadline
        leaves no time for another try), or RequestFailed."""
        deadline = _Deadline(self.timeout)
        _WATCHDOG.arm(deadline)
        try:
            for attempt in range(self.retries + 1):
                try:
                    reply = self._follow(method, url, body, deadline)
                except RequestFailed as err:
                    if not err.transient or attempt == self.retries:
                        raise
                    wait = self._backoff(attempt)
                    if wait >= deadline.left():
                        raise
                else:
                    wait = self._backoff(attempt, reply)
                    if reply.status not in RETRY_STATUS or attempt == self.retries:
                        return reply
                    if wait >= deadline.left():  # e.g. Retry-After: 100 under a 5 s deadline
                        return reply
                time.sleep(wait)
            raise AssertionError("unreachable: the last attempt returns or raises")
        finally:
            deadline.finish()

    def _backoff(self, attempt: int, reply: Reply | None = None) -> float:
        wait = 0.0 if attempt == 0 else min(MAX_BACKOFF, self.backoff * 2**attempt)
        if reply is not None and reply.status in Retry.RETRY_AFTER_STATUS_CODES:
            try:
                given = reply.headers.get("retry-after")
                wait = Retry().parse_retry_after(given) if given else wait
            except Exception:  # a malformed Retry-After: the backoff stands
                pass
        return max(0.0, wait)

    def _follow(self, method: str, url: str, body, deadline: _Deadline) -> Reply:
        """One try, redirects followed (at most MAX_REDIRECTS, to the same server only
        while a key goes with the request)."""
        where = here = server_of(url)
        for _ in range(MAX_REDIRECTS + 1):
            reply = self._once(method, url, body, deadline, here)
            location = reply.headers.get("location")
            if reply.status not in REDIRECT_STATUS or not location:
                return reply
            target = urljoin(url, location)
            if _origin(target) != _origin(url) and self._carries_key(url):
                raise RequestFailed(
                    where,
                    f"redirects to another server ({server_of(target)}) and the request "
                    "carries a key: not followed",
                    transient=False,
                )
            if reply.status == 303 or (reply.status in (301, 302) and method == "POST"):
                method, body = "GET", None  # as browsers and requests do
            url, here = target, server_of(target)
        raise RequestFailed(where, f"redirects more than {MAX_REDIRECTS} times", transient=False)

    def _carries_key(self, url: str) -> bool:
        parts = urlsplit(url)
        return bool(
            self.api_key
            or parts.username
            or parts.password
            or any(SECRET_NAME.search(pair.split("=")[0]) for pair in parts.query.split("&"))
        )

    def _once(self, method: str, url: str, body, deadline: _Deadline, where: str) -> Reply:
        """One exchange with ``url`` (``where``: its server, as messages name it)."""
        late = RequestFailed(where, f"sent no complete answer within {self.timeout:g} s")
        left = deadline.left()
        if left <= 0:
            raise late
        if urlsplit(url).scheme not in ("http", "https"):
            raise RequestFailed(
                where, "cannot be asked: the URL is not valid (no http:// or https://)", False
            )
        key = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        headers = {**HEADERS, **key, **_basic_auth(url)}
        data = None if body is None else _json_body(body, where)
        if data is not None:
            headers["Content-Type"] = "application/json"
        _ACTIVE.deadline, reading = deadline, False
        try:
            opener, target = self._route(url)
            response = opener.urlopen(
                method,
                target,
                body=data,
                headers=headers,
                redirect=False,
                retries=False,
                preload_content=False,
                timeout=urllib3.Timeout(connect=left, read=left),
            )
            reading = True
            content = _read(response, self.max_bytes, where)
        except TRANSPORT_ERRORS as err:
            if deadline.expired or deadline.left() <= 0:
                raise late from None
            raise RequestFailed(where, *_problem(err, reading)) from None
        finally:
            _ACTIVE.deadline = None
        if deadline.expired:  # the socket was shut: what came may be cut short
            raise late
        return Reply(response.status, response.headers, content, url)

    def _route(self, url: str) -> tuple:
        """(opener, target) of ``url`` in this thread: the server's own pool and the path
        (no PoolManager parsing the URL per request), or the proxy's manager and the URL."""
        routes = self._local.__dict__.setdefault("routes", {})
        origin = scheme, host, port = _origin(url)
        if origin not in routes:  # the environment's proxy read once per server
            proxy, tls = _proxy_of(url), _trusted() if scheme == "https" else {}
            if proxy is None:
                port = port or (443 if scheme == "https" else 80)
                routes[origin] = WATCHED_POOLS[scheme](host, port, maxsize=self.pool_size, **tls)
            else:
                routes[origin] = self._proxied(proxy)
        if isinstance(routes[origin], urllib3.PoolManager):
            return routes[origin], url
        parts = urlsplit(url)
        return routes[origin], (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def _proxied(self, proxy: str) -> urllib3.ProxyManager:
        """This thread's manager of every server reached through ``proxy``."""
        managers = self._local.__dict__.setdefault("managers", {})
        if proxy not in managers:
            sizes = {"num_pools": self.pool_size, "maxsize": self.pool_size, **_trusted()}
            auth = _basic_auth(proxy).get("Authorization")
            headers = {"Proxy-Authorization": auth} if auth else None
            managers[proxy] = urllib3.ProxyManager(proxy, proxy_headers=headers, **sizes)
            managers[proxy].pool_classes_by_scheme = WATCHED_POOLS
        return managers[proxy]


def _origin(url: str) -> tuple:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.scheme, parts.hostname, port


def _read(response, max_bytes: int, where: str) -> bytes:
    """The body of ``response`` (not preloaded), at most ``max_bytes`` (decompressed):
    ReplyTooLarge past it, from the Content-Length when it says so, else as soon as the
    bound is crossed. The connection goes back to the pool only when read whole."""
    whole = False
    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise ReplyTooLarge(
                where,
                f"sent a reply too large to read: it declares {int(declared)} bytes, "
                f"above the bound of {max_bytes} bytes",
            )
        chunks, size = [], 0
        for chunk in response.stream(1 << 16, decode_content=True):
            size += len(chunk)
            if size > max_bytes:
                raise ReplyTooLarge(
                    where,
                    f"sent a reply too large to read: longer than the bound of {max_bytes} bytes",
                )
            chunks.append(chunk)
        whole = True
        return b"".join(chunks)
    finally:
        if not whole:
            response.close()
        response.release_conn()


def _problem(err: BaseException, reading: bool) -> tuple[str, bool]:
    """(what went wrong, in words; whether a retry may help) for a transport error;
    ``reading``: it came while the body was read (the head had come)."""
    text = short_error(err)
    errors = urllib3.exceptions
    if isinstance(err, errors.DecodeError):
        return f"sent a body that does not decode as its Content-Encoding says ({text})", True
    if isinstance(err, errors.SSLError):
        return f"failed the TLS handshake ({text})", True
    if isinstance(err, (errors.ProtocolError, http.client.HTTPException)) and reading:
        if "InvalidChunkLength" in repr(err) or "chunk" in text.lower():
            return f"sent a malformed chunked body ({text})", True
        return f"closed the connection in the middle of its reply ({text})", True
    if isinstance(err, (errors.NewConnectionError, ConnectionRefusedError)):
        return f"is unreachable: cannot connect ({text})", True
    if isinstance(err, (errors.ProtocolError, errors.ProxyError, OSError)):
        return f"closed the connection before its reply was whole ({text})", True
    if isinstance(err, ValueError):
        return f"cannot be asked: the URL is not valid ({text})", False
    return f"failed: {type(err).__name__} ({text})", True


def key_or_env(given: str | None, env: str) -> str | None:
    """A client's key: the one given, else the environment's (which `ps` does not show)."""
    return given or os.environ.get(env) or None


def one_secret(what: str, url: str, api_key: str | None, named: str) -> None:
    """One secret, sent one way: a URL with a user name or password is refused together
    with a key (``named``: where keys come from, the environment included)."""
    if (urlsplit(url).username or urlsplit(url).password) and api_key:
        raise MeraError(
            f"{what} carries a user name or password and an API key is given too "
            f"({named}): give the key once and drop it from the URL"
        )


def short_error(err: BaseException) -> str:
    """A transport error in one line, without urllib3's nested reprs."""
    reason = getattr(err, "args", None) and err.args[0]
    reason = getattr(reason, "reason", reason)
    text = mask_secrets(str(reason or err)).strip().splitlines()
    return foreign(text[0], 300) if text else type(err).__name__
