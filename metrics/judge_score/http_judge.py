"""The judge served over HTTP (`HttpJudge`): a vLLM-style classification endpoint
(vLLM's `/classify`, or `mera-multi judge serve`), its separator token and token windows
from a given tokenizer or from the server's /tokenizer_info, /tokenize and /detokenize,
and the checks on every answer the server sends."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from .errors import MeraError
from .foreign_text import foreign
from .json_read import JsonReadError
from .json_read import loads as read_json
from .masking import mask_secrets
from .judges import API_KEY_ENV, TRUNCATE_PROMPT_TOKENS, WINDOW_TOKENS, Judge

CLIENT_FLAGS = {"tokenizer": "--judge-tokenizer", "api_key": "--judge-api-key"}


def classify_url(url: str) -> str:
    """A bare http://host:port gets the vLLM route /classify; a given path is kept."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise MeraError(
            f"judge_url {mask_secrets(repr(url))} is not an http(s) URL; expected e.g. "
            "http://127.0.0.1:8000/classify"
        )
    path = parts.path if parts.path not in ("", "/") else "/classify"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _sep_from_info(info) -> str | None:
    """The separator in a /tokenizer_info answer: a string, or an AddedToken-like dict."""
    sep = info.get("sep_token") if isinstance(info, dict) else None
    if isinstance(sep, dict):
        sep = sep.get("content")
    return sep if isinstance(sep, str) and sep else None


class _ServerTokenizer:
    """The judge tokenizer behind the server's vLLM-style POST /tokenize and /detokenize."""

    remote = True

    def __init__(self, judge: HttpJudge):
        self.judge = judge

    def __call__(self, texts, add_special_tokens: bool = True, verbose: bool = False) -> dict:
        model = self.judge.resolved_model()
        ids = []
        for text in texts:
            answer = self.judge.call(
                "/tokenize",
                {"model": model, "prompt": text, "add_special_tokens": add_special_tokens},
            )
            if not isinstance(answer, dict) or not isinstance(answer.get("tokens"), list):
                raise MeraError(
                    f"{self.judge.base}/tokenize answered without a tokens list: "
                    f"{foreign(answer, 200, quoted=True)}"
                )
            ids.append(answer["tokens"])
        return {"input_ids": ids}

    def decode(self, ids) -> str:
        answer = self.judge.call(
            "/detokenize", {"model": self.judge.resolved_model(), "tokens": list(ids)}
        )
        if not isinstance(answer, dict) or not isinstance(answer.get("prompt"), str):
            raise MeraError(
                f"{self.judge.base}/detokenize answered without a prompt string: "
                f"{foreign(answer, 200, quoted=True)}"
            )
        return answer["prompt"]


def _load_tokenizer(name: str):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise MeraError(f"could not load the judge tokenizer {name!r}: {first}") from None


class HttpJudge(Judge):
    """A judge served behind a vLLM-style classification endpoint.

    model: the served model name; None asks the server's /v1/models for it.
    tokenizer: the judge tokenizer (path, Hub id or object) for SEP and the token
    windows; without it SEP comes from `sep` or the server's GET /tokenizer_info, and the
    windows from the server's POST /tokenize + /detokenize.
    api_key: sent as ``Authorization: Bearer`` (default: $MERA_JUDGE_API_KEY). flags: the
    options hints name (CLIENT_FLAGS). retries/backoff: the project's one retry policy
    (mera_multi_hf.core.http_client); then a MeraError names the URL and the cause.
    batch_size: texts per request (1 = the official single-string request; more sends a
    list as `input`). concurrency: requests in flight at once.
    """

    def __init__(
        self,
        url: str,
        model: str | None = None,
        *,
        tokenizer=None,
        sep: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 1.0,
        batch_size: int = 1,
        concurrency: int = 4,
        window: int = WINDOW_TOKENS,
        truncate_prompt_tokens: int = TRUNCATE_PROMPT_TOKENS,
        flags: dict | None = None,
    ):
        from .http_client import key_or_env, one_secret

        self.url, self.flags = classify_url(url), flags or CLIENT_FLAGS
        api_key = key_or_env(api_key, API_KEY_ENV)  # as the server reads it
        one_secret("the judge URL", self.url, api_key, f"${API_KEY_ENV} or {self.flags['api_key']}")
        parts = urlsplit(self.url)
        self.base = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
        self.model = model
        self.timeout = float(timeout)
        self.retries, self.backoff, self.api_key = max(0, int(retries)), float(backoff), api_key
        self.batch_size = max(1, int(batch_size))
        self.concurrency = max(1, int(concurrency))
        self.window = int(window)
        self.truncate_prompt_tokens = truncate_prompt_tokens
        self._http = None
        self.tokenizer_id = tokenizer if isinstance(tokenizer, str) else None
        if isinstance(tokenizer, str):
            tokenizer = _load_tokenizer(tokenizer)
        if tokenizer is not None:
            sep = sep or tokenizer.sep_token
        self.tokenizer = tokenizer if tokenizer is not None else _ServerTokenizer(self)
        self.sep = sep or self._server_sep()

    def _server_sep(self) -> str:
        hint = f"pass the judge tokenizer ({self.flags['tokenizer']} PATH_OR_ID)"
        try:
            sep = _sep_from_info(self.call("/tokenizer_info", None))
        except MeraError as err:
            raise MeraError(
                f"could not learn the judge separator token from the server: "
                f"{str(err).rstrip('.')}; or {hint}"
            ) from None
        if sep is None:
            raise MeraError(f"{mask_secrets(self.base)}/tokenizer_info names no sep_token: {hint}")
        return sep

    def _client(self):
        """The one HTTP client (core/http_client.py): its deadline, retries and bounds."""
        from .http_client import Client

        if self._http is None:
            self._http = Client(
                self.timeout,
                retries=self.retries,
                backoff=self.backoff,
                api_key=self.api_key,
                pool_size=self.concurrency,
            )
        return self._http

    def call(self, route: str, body: dict | None):
        """GET (body None) or POST JSON to a route of the server; its JSON answer, or one
        MeraError line naming the URL and the cause once the retries are spent."""
        from .http_client import ReplyTooLarge, RequestFailed

        url = self.url if route == "/classify" else self.base + route
        try:
            resp = self._client().request("GET" if body is None else "POST", url, body)
        except ReplyTooLarge as err:
            raise MeraError(f"the judge server at {mask_secrets(url)}: {err.problem}") from None
        except RequestFailed as err:
            raise MeraError(self._failed(url, err.problem)) from None
        return _json_body(resp, url, self._failed)

    def _failed(self, url: str, problem: str) -> str:
        return (
            f"the judge server at {mask_secrets(url)} failed after {self.retries + 1} attempt(s): "
            f"{problem}. Start one with `mera-multi judge serve --model PATH` (or vLLM "
            "with --task classify), or score with a local judge (judge=<model>)"
        )

    def resolved_model(self) -> str:
        if self.model is None:
            body = self.call("/v1/models", None)
            try:
                self.model = str(body["data"][0]["id"])
            except (KeyError, IndexError, TypeError):
                raise MeraError(
                    f"{mask_secrets(self.base)}/v1/models lists no model: {foreign(body)}"
                ) from None
        return self.model

    def probs(self, texts: list[str]) -> list[list[float]]:
        model = self.resolved_model()
        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]

        def one(batch):
            body = {"model": model, "input": batch[0] if self.batch_size == 1 else batch}
            if self.truncate_prompt_tokens:
                body["truncate_prompt_tokens"] = self.truncate_prompt_tokens
            return _probs_of(self.call("/classify", body), len(batch), self.url)

        if self.concurrency == 1 or len(batches) <= 1:
            results = [one(b) for b in batches]
        else:
            with ThreadPoolExecutor(self.concurrency) as pool:
                results = list(pool.map(one, batches))
        return [p for batch in results for p in batch]

    def labels(self, texts: list[str]) -> list[int]:
        return [int(np.argmax(p)) for p in self.probs(list(texts))]

    def describe(self) -> dict:
        remote = getattr(self.tokenizer, "remote", False)
        return {
            "backend": "http",
            "url": mask_secrets(self.url),
            "model": self.model,
            "tokenizer": "server /tokenize" if remote else (self.tokenizer_id or "given"),
            "sep": self.sep,
            "window": self.window,
            "truncate_prompt_tokens": self.truncate_prompt_tokens,
        }


PROBS_TOLERANCE = 1e-3  # how far from 1 a reply's probabilities may sum (float32 softmax)


def _probs_of(answer, n: int, url: str) -> list[list[float]]:
    """The ``n`` probability lists of a /classify answer, each checked: numbers (not
    strings), finite, in [0, 1], summing to 1; else one line naming the server."""
    where = f"the judge server at {mask_secrets(url)}"
    try:
        data = sorted(answer["data"], key=lambda d: d.get("index", 0))
        probs = [list(item["probs"]) for item in data]
    except (KeyError, TypeError, ValueError, AttributeError):
        raise MeraError(
            f"{where} answered with no data[i].probs list: {foreign(answer, quoted=True)}"
        ) from None
    if len(probs) != n or any(len(p) < 2 for p in probs):
        raise MeraError(
            f"{where}: expected {n} probability lists of 2+ classes, got "
            f"{foreign(answer, quoted=True)}"
        )
    for row in probs:
        why = _not_probabilities(row)
        if why:
            raise MeraError(
                f"{where} answered probabilities that {why}: {foreign(row, quoted=True)}; "
                "the server is not a classification judge or is broken"
            )
    return [[float(x) for x in row] for row in probs]


def _not_probabilities(row: list) -> str | None:
    """Why ``row`` is not a probability distribution (None when it is)."""
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in row):
        return "are not all numbers"
    if not all(0.0 <= x <= 1.0 for x in row):  # NaN and the infinities fail it too
        return "are not all finite and within [0, 1]"
    if abs(sum(row) - 1.0) > PROBS_TOLERANCE:
        return f"sum to {sum(row):g}, not 1"
    return None


def _json_body(resp, url: str, failed):
    if resp.status == 429 or resp.status >= 500:
        raise MeraError(failed(url, f"HTTP {resp.status} {foreign(resp.text, quoted=True)}"))
    if resp.status >= 400:
        # A client error will not fix itself: no retry.
        raise MeraError(
            f"the judge server at {mask_secrets(url)} refused the request with HTTP "
            f"{resp.status}: {foreign(resp.text, 300, quoted=True)}. Check the model name, URL "
            "and API key."
        )
    try:  # the one JSON reader: a deep or huge answer is one line, not a traceback
        return read_json(resp.content, f"the judge server at {mask_secrets(url)}")
    except JsonReadError as err:
        raise MeraError(
            f"{err.where} answered with something that is not JSON it reads: {err.reason}"
        ) from None
