"""The ``openai`` backend: an OpenAI-compatible chat-completions server (vLLM, TGI,
SGLang, ``python -m mera_multi_hf.runner.serve``, a hosted API).

Media go inline as base64 data URIs. Requests run ``concurrency`` at a time in
threads; a failed request (connection error, timeout, HTTP 429 or 5xx) is retried with
exponential backoff. The API key is sent as a header and never recorded anywhere.
"""
from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests as http

from ...errors import MeraError
from ..chat import openai_messages
from ..request import Request

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class OpenAIBackend:
    name = "openai"

    def __init__(self, model: str, base_url: str, *, api_key: str | None = None,
                 concurrency: int = 8, timeout: float = 300.0, max_retries: int = 4,
                 backoff: float = 1.0, max_pixels: int | None = None, batch_size: int | None = None):
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
        self.max_pixels = max_pixels
        self.batch_size = max(batch_size or 0, self.concurrency)
        self._local = threading.local()
        self._pool: ThreadPoolExecutor | None = None

    def settings(self) -> dict:
        return {"backend": self.name, "max_pixels": self.max_pixels, "temperature": 0.0}

    def info(self) -> dict:
        return {"model": self.model_id, "revision": None, "backend": self.name,
                "base_url": self.base_url, "concurrency": self.concurrency,
                "max_pixels": self.max_pixels, "temperature": 0.0, "timeout_s": self.timeout,
                "max_retries": self.max_retries}

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
        if session is None:
            session = self._local.session = http.Session()
            if self._api_key:
                session.headers["Authorization"] = f"Bearer {self._api_key}"
        return session

    def _complete(self, request: Request) -> str:
        body = {"model": self.model_id, "messages": openai_messages(request, self.max_pixels),
                "max_tokens": request.max_new_tokens, "temperature": 0.0}
        problem = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                response = self._session().post(self.url, json=body, timeout=self.timeout)
            except (http.ConnectionError, http.Timeout) as err:
                problem = type(err).__name__
                continue
            if response.status_code in RETRY_STATUS:
                problem = f"HTTP {response.status_code}"
                continue
            if response.status_code != 200:
                raise MeraError(f"the server at {self.base_url} refused a request for "
                                f"{request.task} id={request.id}: HTTP {response.status_code} "
                                f"{_error_text(response)}")
            try:
                return response.json()["choices"][0]["message"]["content"] or ""
            except (ValueError, KeyError, IndexError, TypeError):
                raise MeraError(f"the server at {self.base_url} sent an answer that is not a chat "
                                f"completion (for {request.task} id={request.id}): "
                                f"{response.text[:200]!r}") from None
        raise MeraError(f"the server at {self.base_url} is unreachable or failing after "
                        f"{self.max_retries + 1} tries ({problem}); check that it is running and "
                        f"that --base-url is right")


def _error_text(response) -> str:
    try:
        err = response.json().get("error")
        return str(err.get("message") if isinstance(err, dict) else err)[:300]
    except (ValueError, AttributeError):
        return response.text[:300]
