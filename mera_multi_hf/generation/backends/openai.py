"""The ``openai`` backend: one or several OpenAI-compatible chat-completions servers (vLLM,
TGI, SGLang, ``mera-multi serve``, a hosted API).

Each request is sent as the official harness's API mode sends it
(``--pass_multimodal_args_to_chat_history``, ``openai_completions.py``): one user
message, text parts and base64 data-URI media interleaved at the placeholders
(:func:`~mera_multi_hf.generation.chat.openai_messages`), with ``max_tokens``,
``temperature`` 0, ``stop`` (at most 4, the API's limit) and ``seed``. The answer is cut
at its first stop string here too, since servers differ in how they honour ``stop``.

Requests stream: :meth:`OpenAIBackend.stream` keeps ``concurrency`` requests in flight
per server all the time and hands back each answer as it completes (no batch waits for
its slowest request). With several servers each has its own window; a server that is
still failing after the retries is dropped and its requests go to the others (the run
stops only when none is left). Retries (connection errors, read timeouts, HTTP
408/409/425/429/5xx, with exponential backoff) are the project's one policy,
:func:`mera_multi_hf.core.http_client.make_session`. The API key is sent as a header and
never recorded anywhere.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from queue import SimpleQueue
from urllib.parse import urlsplit, urlunsplit

from mera_multi_hf.core import json_read
from mera_multi_hf.core.errors import MediaError, MeraError
from mera_multi_hf.core.foreign_text import foreign
from mera_multi_hf.core.masking import mask_secrets
from mera_multi_hf.generation.backends.base import (
    Backend,
    check_stop,
    cut_at_stop,
)
from mera_multi_hf.generation.backends.openai_options import OpenAIOptions
from mera_multi_hf.generation.backends.registry import ALL_MEDIA, Capabilities, register_backend
from mera_multi_hf.generation.chat import openai_messages
from mera_multi_hf.generation.request import Request


def split_urls(base_url) -> list[str]:
    """--base-url as given (one URL, a comma-separated list, or a list of either)."""
    items = [base_url] if isinstance(base_url, str) else list(base_url or [])
    return [u.strip().rstrip("/") for item in items for u in str(item).split(",") if u.strip()]


def join_url(base: str, route: str) -> str:
    """``route`` appended to the path of ``base``: a query (a key some gateways take in
    the URL) stays after it, not before it."""
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + route))


class _ServerFailed(Exception):
    """A server still unreachable or failing after its retries (another may answer)."""


@register_backend(
    "openai", options=OpenAIOptions, capabilities=Capabilities(streaming=True, media=ALL_MEDIA)
)
class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, model: str, base_url: str | list[str] | None = None, **options):
        """``options``: the other fields of :class:`OpenAIOptions`."""
        o = OpenAIOptions(base_url=base_url, **options)
        api_key, concurrency = o.api_key, o.concurrency
        self.servers = split_urls(base_url)
        if not self.servers:
            raise MeraError("--backend openai needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        if not model:
            raise MeraError("--backend openai needs --model: the model name the server serves")
        self.model_id = model
        self.revision = None
        self.base_url = ",".join(self.servers)
        # each server's chat route, joined once (a request only looks it up)
        self._routes = {s: join_url(s, "/chat/completions") for s in self.servers}
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.concurrency = concurrency
        self.timeout, self.max_retries, self.backoff = o.timeout, o.max_retries, o.backoff
        self.max_pixels, self.seed = o.max_pixels, o.seed
        self.max_reply_bytes = o.max_reply_bytes
        self.stop = check_stop(o.stop)
        self.batch_size = max(o.batch_size or 0, self.concurrency)
        self._http = None
        self._pool: ThreadPoolExecutor | None = None

    def settings(self) -> dict:
        return {
            "backend": self.name,
            "max_pixels": self.max_pixels,
            "temperature": 0,
            "seed": self.seed,
            "stop": list(self.stop),
        }

    def info(self) -> dict:
        return {
            "model": self.model_id,
            "revision": None,
            "backend": self.name,
            "base_url": mask_secrets(self.base_url),
            "concurrency": self.concurrency,
            "max_pixels": self.max_pixels,
            "temperature": 0,
            "seed": self.seed,
            "stop": list(self.stop),
            "timeout_s": self.timeout,
            "max_retries": self.max_retries,
        }

    def load(self) -> None:
        """Nothing to load: the model lives on the server."""

    def generate(self, requests: list[Request]) -> list[str]:
        """The answers in the order of ``requests``."""
        answers = {id(r): text for r, text, _ in self.stream(requests)}
        return [answers[id(r)] for r in requests]

    def stream(
        self, requests: Iterable[Request], prepare: Callable[[list[Request]], None] | None = None
    ) -> Iterator[tuple[Request, str, float]]:
        """(request, answer, seconds) as each request completes, in any order. Up to
        ``concurrency`` requests are in flight per live server; ``prepare`` (e.g. reading
        media bytes) runs here, on the requests about to be sent, just before they go."""
        todo, live = deque(requests), list(self.servers)
        busy: dict = {}  # future -> (request, server)
        finished: SimpleQueue = SimpleQueue()  # futures as they finish (wait() walked all)
        load, failure = dict.fromkeys(live, 0), None
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                self.concurrency * len(self.servers), thread_name_prefix="mera-openai"
            )
        try:
            while (todo and live) or busy:  # answers in flight are kept when the last server fails
                batch = self._fill(todo, live, load)
                if prepare and batch:
                    prepare([r for r, _ in batch])
                for request, server in batch:
                    future = self._pool.submit(self._complete, server, request)
                    busy[future] = (request, server)
                    future.add_done_callback(finished.put)
                done = [finished.get()]
                while not finished.empty():
                    done.append(finished.get())
                for future in done:
                    request, server = busy.pop(future)
                    load[server] -= 1
                    try:
                        text, seconds = future.result()
                    except _ServerFailed as err:  # dropped; another server answers it
                        failure = err
                        live[:] = [s for s in live if s != server]
                        todo.appendleft(request)
                        continue
                    except MediaError as err:  # that example fails, the run goes on
                        request.failed = f"{request.task} id={request.id}: {err}"
                        text, seconds = "", 0.0
                    yield request, text, seconds
        finally:
            for future in busy:
                future.cancel()
        if todo:
            raise MeraError(str(failure))

    def _fill(self, todo: deque, live: list[str], load: dict) -> list[tuple[Request, str]]:
        """Requests for every free slot, each to the live server with the fewest in flight."""
        batch = []
        while todo and live:
            server = min(live, key=load.__getitem__)
            if load[server] >= self.concurrency:
                break
            load[server] += 1
            batch.append((todo.popleft(), server))
        return batch

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _failing(self, server: str, problem: str) -> _ServerFailed:
        """A server still failing after its retries, in words (made only then)."""
        return _ServerFailed(
            f"the server at {mask_secrets(server)} is unreachable or failing after "
            f"{self.max_retries + 1} tries ({problem}); check that it is running and that "
            "--base-url is right"
        )

    def _client(self):
        """The one HTTP client of every thread and server (core/http_client.py)."""
        from mera_multi_hf.core.http_client import Client

        if self._http is None:
            self._http = Client(
                self.timeout,
                retries=self.max_retries,
                backoff=self.backoff,
                api_key=self._api_key,
                max_bytes=self.max_reply_bytes,
                pool_size=len(self.servers),
            )
        return self._http

    def body(self, request: Request) -> dict:
        """The JSON sent for one request (the harness's payload, key for key)."""
        return {
            "messages": openai_messages(request, self.max_pixels),
            "model": self.model_id,
            "max_tokens": request.max_new_tokens,
            "temperature": 0,
            "stop": list(request.stop)[:4],
            "seed": self.seed,
        }

    def _complete(self, server: str, request: Request) -> tuple[str, float]:
        from mera_multi_hf.core.http_client import RETRY_STATUS, ReplyTooLarge, RequestFailed

        started = time.perf_counter()
        try:
            response = self._client().post(self._routes[server], self.body(request))
        except ReplyTooLarge as err:
            raise MeraError(f"{err} (for {request.task} id={request.id})") from None
        except RequestFailed as err:
            if not err.transient:
                raise MeraError(f"{err} (for {request.task} id={request.id})") from None
            raise self._failing(server, err.problem) from None
        if response.status in RETRY_STATUS:  # still failing after the retries
            raise self._failing(server, f"HTTP {response.status}")
        where = f"the server at {mask_secrets(server)}"
        if response.status != 200:
            raise MeraError(
                f"{where} refused a request for {request.task} id={request.id}: "
                f"HTTP {response.status} {foreign(_error_text(response), 300)}"
            )
        try:  # the one JSON reader: a deep or huge reply is one line, not a traceback
            reply = json_read.loads(response.content, f"{where} (POST /chat/completions)")
        except json_read.JsonReadError as err:
            raise MeraError(f"{err} (for {request.task} id={request.id})") from None
        try:
            text = reply["choices"][0]["message"]["content"] or ""
            if not isinstance(text, str):
                raise TypeError
        except (KeyError, IndexError, TypeError):
            raise MeraError(
                f"{where} sent an answer that is not a chat completion (for "
                f"{request.task} id={request.id}): {foreign(response.text, 200)}"
            ) from None
        return cut_at_stop(text, request.stop), time.perf_counter() - started


def _error_text(response) -> str:
    try:
        err = json_read.loads(response.content, "the reply").get("error")
        return str(err.get("message") if isinstance(err, dict) else err)
    except (ValueError, AttributeError):
        return response.text
