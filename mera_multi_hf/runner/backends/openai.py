"""The ``openai`` backend: an OpenAI-compatible chat-completions server (vLLM, TGI,
SGLang, ``python -m mera_multi_hf.runner.serve``, a hosted API).

Each request is sent as the official harness's API mode sends it
(``--pass_multimodal_args_to_chat_history``, ``openai_completions.py``): one user
message, text parts and base64 data-URI media interleaved at the placeholders
(:func:`~mera_multi_hf.runner.chat.openai_messages`), with ``max_tokens``,
``temperature`` 0, ``stop`` (at most 4, the API's limit) and ``seed``. The answer is cut
at its first stop string here too, since servers differ in how they honour ``stop``.

Requests run ``concurrency`` at a time in threads. Retries (connection errors, read
timeouts, HTTP 408/409/425/429/5xx, with exponential backoff) are the project's one
policy, :func:`mera_multi_hf.http_client.make_session`. The API key is sent as a header
and never recorded anywhere.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import requests as http

from ...errors import MeraError
from ...http_client import RETRY_STATUS, make_session, short_error
from ...provenance import mask_secrets
from ..chat import openai_messages
from ..request import Request
from . import Backend, check_stop, cut_at_stop


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, model: str, base_url: str | None = None, *, api_key: str | None = None,
                 concurrency: int = 8, timeout: float = 300.0, max_retries: int = 4,
                 backoff: float = 1.0, max_pixels: int | None = None,
                 batch_size: int | None = None, seed: int = 1234,
                 stop: tuple[str, ...] | list[str] | None = None):
        if not base_url:
            raise MeraError("--backend openai needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        if not model:
            raise MeraError("--backend openai needs --model: the model name the server serves")
        self.model_id = model
        self.revision = None
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.base_url = base_url
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.concurrency = max(1, concurrency)
        self.timeout, self.max_retries, self.backoff = timeout, max(0, max_retries), backoff
        self.max_pixels, self.seed = max_pixels, seed
        self.stop = check_stop(stop)
        self.batch_size = max(batch_size or 0, self.concurrency)
        self._local = threading.local()
        self._pool: ThreadPoolExecutor | None = None

    def settings(self) -> dict:
        return {"backend": self.name, "max_pixels": self.max_pixels, "temperature": 0,
                "seed": self.seed, "stop": list(self.stop)}

    def info(self) -> dict:
        return {"model": self.model_id, "revision": None, "backend": self.name,
                "base_url": mask_secrets(self.base_url), "concurrency": self.concurrency,
                "max_pixels": self.max_pixels, "temperature": 0, "seed": self.seed,
                "stop": list(self.stop), "timeout_s": self.timeout,
                "max_retries": self.max_retries}

    def load(self) -> None:
        """Nothing to load: the model lives on the server."""

    def generate(self, requests: list[Request]) -> list[str]:
        if not requests:
            return []
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="mera-openai")
        return list(self._pool.map(self._complete, requests))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _session(self) -> http.Session:
        session = getattr(self._local, "session", None)
        if session is None:  # one per thread: a Session is not meant to be shared
            session = self._local.session = make_session(
                self.max_retries, self.backoff, self._api_key, pool_size=1)
        return session

    def body(self, request: Request) -> dict:
        """The JSON sent for one request (the harness's payload, key for key)."""
        return {"messages": openai_messages(request, self.max_pixels), "model": self.model_id,
                "max_tokens": request.max_new_tokens, "temperature": 0,
                "stop": list(request.stop)[:4], "seed": self.seed}

    def _complete(self, request: Request) -> str:
        where = f"the server at {mask_secrets(self.base_url)}"
        tries = f"after {self.max_retries + 1} tries"
        try:
            response = self._session().post(self.url, json=self.body(request), timeout=self.timeout)
        except (http.ConnectionError, http.Timeout) as err:
            raise MeraError(f"{where} is unreachable or failing {tries} ({short_error(err)}); "
                            f"check that it is running and that --base-url is right") from None
        if response.status_code in RETRY_STATUS:  # still failing after the retries
            raise MeraError(f"{where} is unreachable or failing {tries} (HTTP "
                            f"{response.status_code}); check that it is running and that "
                            f"--base-url is right")
        if response.status_code != 200:
            raise MeraError(f"{where} refused a request for {request.task} id={request.id}: "
                            f"HTTP {response.status_code} {_error_text(response)}")
        try:
            text = response.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise MeraError(f"{where} sent an answer that is not a chat completion (for "
                            f"{request.task} id={request.id}): {response.text[:200]!r}") from None
        return cut_at_stop(text, request.stop)


def _error_text(response) -> str:
    try:
        err = response.json().get("error")
        return str(err.get("message") if isinstance(err, dict) else err)[:300]
    except (ValueError, AttributeError):
        return response.text[:300].replace("\n", " ")
