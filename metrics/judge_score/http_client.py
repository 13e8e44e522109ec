"""One HTTP client policy for every client of the project (the openai backend, the
served judge): a ``requests.Session`` whose retries urllib3 makes.

A failed request (connection error, read timeout, HTTP 408/409/425/429/5xx) is
retried with exponential backoff, ``Retry-After`` respected; POST is retried too
(generation and classification are idempotent). After the last retry the caller gets
the last response (``raise_on_status=False``) or the connection error, and turns it
into one clear line. A reply is read as a stream, at most a given size
(:func:`bounded`): a huge or endless reply is one clear line, never an OOM.
"""

from __future__ import annotations

import os

import requests
from requests.adapters import HTTPAdapter
from urllib3.util import Retry

RETRY_STATUS = (408, 409, 425, 429, 500, 502, 503, 504)
REPLY_BYTES = 64 * 1024 * 1024  # a reply read at most (limits.Limits.max_reply_bytes)


class ReplyTooLarge(requests.RequestException):
    """A reply longer than the bound: the server is broken or hostile."""


def bounded(response: requests.Response, max_bytes: int = REPLY_BYTES) -> requests.Response:
    """``response`` (sent with ``stream=True``) with its body read, at most ``max_bytes``
    (decompressed), so that ``.json()`` and ``.text`` work; ReplyTooLarge past it, from
    the Content-Length when it says so, else as soon as the bound is crossed."""
    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise ReplyTooLarge(
                f"the reply declares {int(declared)} bytes, above the bound of {max_bytes} bytes"
            )
        chunks, size = [], 0
        for chunk in response.iter_content(1 << 16):
            size += len(chunk)
            if size > max_bytes:
                raise ReplyTooLarge(f"the reply is longer than the bound of {max_bytes} bytes")
            chunks.append(chunk)
        response._content = b"".join(chunks)  # what requests' .content caches once read
    finally:
        response.close()
    return response


def make_session(
    retries: int = 4, backoff: float = 1.0, api_key: str | None = None, pool_size: int = 16
) -> requests.Session:
    """A session that retries ``retries`` times, sleeping ``backoff * 2**attempt`` seconds
    in between; with ``api_key`` every request carries ``Authorization: Bearer <key>``."""
    policy = Retry(
        total=max(0, retries),
        connect=max(0, retries),
        read=max(0, retries),
        status=max(0, retries),
        other=0,
        backoff_factor=max(0.0, backoff),
        status_forcelist=RETRY_STATUS,
        allowed_methods=None,
        raise_on_status=False,
        respect_retry_after_header=True,
    )
    adapter = HTTPAdapter(max_retries=policy, pool_connections=pool_size, pool_maxsize=pool_size)
    session = requests.Session()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    if api_key:
        session.headers["Authorization"] = f"Bearer {api_key}"
    return session


def key_or_env(given: str | None, env: str) -> str | None:
    """A client's key: the one given, else the environment's (which `ps` does not show)."""
    return given or os.environ.get(env) or None


def one_secret(what: str, url: str, api_key: str | None, named: str) -> None:
    """One secret, sent one way: a URL with a user name or password is refused together
    with a key (``named``: where keys come from, the environment included)."""
    from urllib.parse import urlsplit

    from .errors import MeraError

    if (urlsplit(url).username or urlsplit(url).password) and api_key:
        raise MeraError(
            f"{what} carries a user name or password and an API key is given too "
            f"({named}): give the key once and drop it from the URL"
        )


def short_error(err: BaseException) -> str:
    """A connection error in one line, without urllib3's nested reprs."""
    reason = getattr(err, "args", None) and err.args[0]
    reason = getattr(reason, "reason", reason)
    text = str(reason or err).strip().splitlines()
    return text[0][:300] if text else type(err).__name__
