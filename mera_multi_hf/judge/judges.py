"""The MERA answer judge: input building (docs/official-protocol.md, "The judge
inputs") and two backends.

A judge is a binary sequence classifier (1 = the answer is correct). For one example,
exactly as the official protocol:

- input = prompt + SEP + str(gold) + SEP + prediction, SEP being the judge tokenizer's
  separator token and str(gold) Python's ``str`` of the typed gold (a list of
  acceptable answers gives its repr, ``['кот', 'кошка']``);
- a second input with the prediction replaced by
  ``answer_marker.official_answer_part(prediction)`` = ``prediction.split("ОТВЕТ")[-1].strip()``
  (case-sensitive; with no marker the whole prediction stripped) when that is not empty;
- an input whose ``tokenizer.encode`` (special tokens included) is longer than 7995
  tokens is judged twice: the decoded first 7995 tokens and the decoded last 7995;
- label = argmax of the class probabilities; example score = max over its inputs;
  task score = mean over examples.

Backends share one interface, `labels(texts) -> list[int]`:

- `LocalJudge`: transformers `AutoModelForSequenceClassification` in this process;
- `HttpJudge`: a served judge, POSTing the official harness's request
  `{"model": ..., "input": text, "truncate_prompt_tokens": 8192}` to a vLLM-style
  classification endpoint (vLLM's `/classify`, or `mera-multi judge serve`).

`get_judge(judge=None, judge_url=None, judge_tokenizer=None)` makes either (see there for
where a served judge's separator token and tokenizer come from).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.json_read import JsonReadError
from mera_multi_hf.core.json_read import loads as read_json
from mera_multi_hf.core.masking import mask_secrets
from mera_multi_hf.tasks.answer_marker import official_answer_part

DEFAULT_JUDGE = "MERA-evaluation/MERA_Answer_judge"
WINDOW_TOKENS = 7995
TRUNCATE_PROMPT_TOKENS = 8192
API_KEY_ENV = "MERA_JUDGE_API_KEY"  # the server's key and the clients': `ps` does not show it
CLIENT_FLAGS = {"tokenizer": "--judge-tokenizer", "api_key": "--judge-api-key"}


def raw_inputs(prompt: str, gold, prediction: str, sep: str) -> list[str]:
    """The judge texts of one example before token windows (1 or 2).

    >>> raw_inputs("Вопрос?", "синий", "ОТВЕТ: синий", "[SEP]")
    ['Вопрос?[SEP]синий[SEP]ОТВЕТ: синий', 'Вопрос?[SEP]синий[SEP]: синий']
    >>> raw_inputs("Q", ["кот", "кошка"], "кот", "|")
    ["Q|['кот', 'кошка']|кот", "Q|['кот', 'кошка']|кот"]
    """
    gold_text = str(gold)
    texts = [f"{prompt}{sep}{gold_text}{sep}{prediction}"]
    tail = official_answer_part(prediction)
    if tail:
        texts.append(f"{prompt}{sep}{gold_text}{sep}{tail}")
    return texts


def _may_exceed(text: str, window: int) -> bool:
    """False only when ``text`` surely has at most ``window`` tokens: no tokenizer makes
    more than two tokens per UTF-8 byte plus a few special ones."""
    return 2 * len(text.encode("utf-8")) + 8 > window


def token_windows(texts: list[str], tokenizer, window: int = WINDOW_TOKENS) -> list[list[str]]:
    """Each text as itself, or [decoded first `window` tokens, decoded last `window`]
    when its ``tokenizer.encode`` (special tokens included) is longer than `window`.

    A tokenizer that asks the server (``remote = True``) is only asked about texts that
    may be long.
    """
    if window < 1:
        raise MeraError(f"the judge token window must be positive, got {window}")
    todo = [
        i
        for i, t in enumerate(texts)
        if not getattr(tokenizer, "remote", False) or _may_exceed(t, window)
    ]
    out = [[t] for t in texts]
    if not todo:
        return out
    # verbose=False: long texts are the point here, not a mistake to warn about
    ids = tokenizer([texts[i] for i in todo], add_special_tokens=True, verbose=False)["input_ids"]
    for i, toks in zip(todo, ids):
        if len(toks) > window:
            out[i] = [tokenizer.decode(toks[:window]), tokenizer.decode(toks[-window:])]
    return out


class Judge:
    """What the scoring code needs from a judge: `labels(texts)` plus the input protocol."""

    sep: str
    tokenizer = None
    window: int = WINDOW_TOKENS

    def labels(self, texts: list[str]) -> list[int]:
        raise NotImplementedError

    def describe(self) -> dict:
        """What to record beside a judge score so it can be reproduced."""
        raise NotImplementedError

    def inputs(self, prompt: str, gold, prediction: str) -> list[str]:
        """All texts the judge classifies for one example (variants x windows)."""
        return self.inputs_many([prompt], [gold], [prediction])[0]

    def inputs_many(self, prompts, golds, predictions) -> list[list[str]]:
        per_example = [
            raw_inputs(p, g, a, self.sep) for p, g, a in zip(prompts, golds, predictions)
        ]
        if self.tokenizer is None:
            return per_example
        flat = [t for texts in per_example for t in texts]
        windows = iter(token_windows(flat, self.tokenizer, self.window))
        return [[w for _ in texts for w in next(windows)] for texts in per_example]


def judge_scores(
    judge: Judge, predictions: Sequence[str], references: Sequence, prompts: Sequence[str]
) -> np.ndarray:
    """Per-example judge scores (0/1, int8): the max label over each example's inputs."""
    predictions, references, prompts = list(predictions), list(references), list(prompts)
    if not (len(predictions) == len(references) == len(prompts)):
        raise MeraError(
            f"judge scoring got {len(predictions)} predictions, {len(references)} "
            f"references and {len(prompts)} prompts: they must pair up one to one"
        )
    for name, column in (("predictions", predictions), ("prompts", prompts)):
        for i, value in enumerate(column):
            if not isinstance(value, str):
                raise MeraError(f"{name}[{i}] is {type(value).__name__}, expected a string")
    if not predictions:
        raise MeraError("no examples to judge: the predictions are empty")
    per_example = judge.inputs_many(prompts, references, predictions)
    owner = np.repeat(np.arange(len(per_example)), [len(t) for t in per_example])
    # A text's label does not depend on who asks: classify each distinct text once (the
    # "ОТВЕТ" input equals the full one whenever the answer carries no marker or spaces).
    flat = [t for texts in per_example for t in texts]
    unique = list(dict.fromkeys(flat))
    found = np.asarray(judge.labels(unique))
    if found.shape != (len(unique),) or not np.isin(found, (0, 1)).all():
        raise MeraError(
            f"the judge {judge.describe().get('model')!r} must return one label "
            f"0 or 1 per input; got {found.tolist()[:10]} for {len(unique)} inputs. "
            "Is it a binary classifier?"
        )
    position = {t: i for i, t in enumerate(unique)}
    labels = found[[position[t] for t in flat]] if flat else found
    scores = np.zeros(len(per_example), dtype=np.int8)
    np.maximum.at(scores, owner, labels.astype(np.int8))
    return scores


# ----------------------------------------------------------------------------------
# Backend 1: a classifier in this process.


class LocalJudge(Judge):
    """A transformers sequence classifier run in this process.

    Texts are tokenized with [CLS]/[SEP] added and, like vLLM's
    `truncate_prompt_tokens`, truncated on the left to the model's limit, so that a
    local and a served judge see the same tokens.
    """

    def __init__(
        self,
        model: str = DEFAULT_JUDGE,
        device: str | None = None,
        batch_size: int = 16,
        window: int = WINDOW_TOKENS,
        max_tokens: int = TRUNCATE_PROMPT_TOKENS,
        revision: str | None = None,
    ):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.model_id = str(model)
        self.revision = revision
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.batch_size = max(1, int(batch_size))
        self.window = int(window)
        if (
            self.model_id.startswith((".", "/", "~"))
            and not Path(self.model_id).expanduser().is_dir()
        ):
            raise MeraError(
                f"the judge model folder {self.model_id} does not exist: pass a folder "
                f"saved with save_pretrained, or a Hub id (official: {DEFAULT_JUDGE})"
            )
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_id, revision=revision)
            self.model = (
                AutoModelForSequenceClassification.from_pretrained(self.model_id, revision=revision)
                .to(self.device)
                .eval()
            )
        except (OSError, ValueError) as err:
            raise MeraError(
                f"could not load the judge model {self.model_id!r}: {str(err).rstrip('.')}. "
                "Pass a local folder "
                f"saved with save_pretrained, or a Hub id you can download (official: "
                f"{DEFAULT_JUDGE})"
            ) from None
        if self.tokenizer.sep_token is None:
            raise MeraError(
                f"the judge tokenizer of {self.model_id!r} has no sep_token: the "
                "judge input needs one (docs/official-protocol.md, 'The judge inputs')"
            )
        self.sep = self.tokenizer.sep_token
        self.tokenizer.truncation_side = "left"
        self.max_tokens = min(int(max_tokens), self._model_limit())
        self._lock = threading.Lock()

    def _model_limit(self) -> int:
        limit = getattr(self.model.config, "max_position_embeddings", None) or 10**9
        if self.model.config.model_type in ("roberta", "xlm-roberta", "camembert"):
            limit -= 2  # their position ids start after the padding index
        tok_limit = self.tokenizer.model_max_length
        return min(limit, tok_limit) if tok_limit and tok_limit < 10**7 else limit

    def id2label(self, index: int) -> str:
        return str(self.model.config.id2label.get(index, index))

    def probs(self, texts: list[str], truncate: int | None = None) -> list[list[float]]:
        """Class probabilities per text, in input order (batched by length for speed)."""
        import torch

        max_len = min(int(truncate), self.max_tokens) if truncate else self.max_tokens
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list = [None] * len(texts)
        with self._lock, torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                enc = self.tokenizer(
                    [texts[i] for i in chunk],
                    padding=True,
                    truncation=True,
                    max_length=max_len,
                    return_tensors="pt",
                ).to(self.device)
                logits = self.model(**enc).logits.float()
                for i, row in zip(chunk, torch.softmax(logits, dim=-1).cpu().tolist()):
                    out[i] = row
        return out

    def labels(self, texts: list[str]) -> list[int]:
        return [int(np.argmax(p)) for p in self.probs(list(texts))]

    def describe(self) -> dict:
        return {
            "backend": "local",
            "model": self.model_id,
            "revision": self.revision,
            "sep": self.sep,
            "window": self.window,
            "max_tokens": self.max_tokens,
        }


# Backend 2: a served judge over HTTP.


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
                    f"{str(answer)[:200]!r}"
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
                f"{str(answer)[:200]!r}"
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
        from mera_multi_hf.core.http_client import key_or_env, one_secret

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
        self._local = threading.local()
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

    def _session(self):
        from mera_multi_hf.core.http_client import make_session

        if not hasattr(self._local, "session"):
            self._local.session = make_session(
                self.retries, self.backoff, self.api_key, pool_size=self.concurrency
            )
        return self._local.session

    def call(self, route: str, body: dict | None):
        """GET (body None) or POST JSON to a route of the server; its JSON answer, or one
        MeraError line naming the URL and the cause once the retries are spent."""
        import requests

        from mera_multi_hf.core.http_client import ReplyTooLarge, bounded, short_error

        url = self.url if route == "/classify" else self.base + route
        try:
            if body is None:
                resp = self._session().get(url, timeout=self.timeout, stream=True)
            else:
                resp = self._session().post(url, json=body, timeout=self.timeout, stream=True)
            resp = bounded(resp)
        except ReplyTooLarge as err:
            raise MeraError(
                f"the judge server at {mask_secrets(url)} sent a reply too large to read: {err}"
            ) from None
        except requests.ConnectionError as err:
            raise MeraError(
                self._failed(url, f"cannot connect ({short_error(err)}; is the server running?)")
            ) from None
        except requests.Timeout:
            raise MeraError(self._failed(url, f"no answer within {self.timeout:g} s")) from None
        except requests.RequestException as err:
            raise MeraError(
                self._failed(url, f"{type(err).__name__}: {short_error(err)}")
            ) from None
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
                    f"{self.base}/v1/models lists no model: {str(body)[:200]}"
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


def _probs_of(answer, n: int, url: str) -> list[list[float]]:
    try:
        data = sorted(answer["data"], key=lambda d: d.get("index", 0))
        probs = [[float(x) for x in item["probs"]] for item in data]
    except (KeyError, TypeError, ValueError, AttributeError):
        raise MeraError(
            f"the judge server at {mask_secrets(url)} answered with no data[i].probs list: "
            f"{str(answer)[:200]!r}"
        ) from None
    if len(probs) != n or any(len(p) < 2 for p in probs):
        raise MeraError(
            f"the judge server at {mask_secrets(url)}: expected {n} probability lists of 2+ "
            f"classes, got {str(answer)[:200]!r}"
        )
    return probs


def _json_body(resp, url: str, failed):
    if resp.status_code == 429 or resp.status_code >= 500:
        raise MeraError(failed(url, f"HTTP {resp.status_code} {resp.text[:200]!r}"))
    if resp.status_code >= 400:
        # A client error will not fix itself: no retry.
        raise MeraError(
            f"the judge server at {mask_secrets(url)} refused the request with HTTP "
            f"{resp.status_code}: {resp.text[:300]!r}. Check the model name, URL "
            "and API key."
        )
    try:  # the one JSON reader: a deep or huge answer is one line, not a traceback
        return read_json(resp.content, f"the judge server at {mask_secrets(url)}")
    except JsonReadError as err:
        raise MeraError(
            f"{err.where} answered with something that is not JSON it reads: {err.reason}"
        ) from None


# ----------------------------------------------------------------------------------
# One entry point for the metric module, the scoring report and the CLI.

_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def get_judge(
    judge: str | Judge | None = None,
    judge_url: str | None = None,
    judge_tokenizer: str | None = None,
    **options,
) -> Judge:
    """A judge from `judge` (model id / local path, or a Judge) or `judge_url` (served).

    With `judge_url` the separator token comes from `judge_tokenizer` (a path or Hub id
    of the judge tokenizer, loaded here; it also makes the token windows), else from the
    server (GET /tokenizer_info, POST /tokenize and /detokenize: `mera-multi judge serve`
    has them; vLLM with --enable-tokenizer-info-endpoint), else one line says to pass
    it. Options go to LocalJudge or HttpJudge (e.g. `api_key`, default
    $MERA_JUDGE_API_KEY). Judges are cached per configuration (a model loads once per
    process). With neither `judge` nor `judge_url` this raises: no judge score is made up.
    """
    if isinstance(judge, Judge) or callable(getattr(judge, "labels", None)):
        return judge  # a Judge (or one from another copy of this module: a metric Space's)
    if judge and judge_url:
        raise MeraError("give either judge=<model id or path> or judge_url=<server URL>, not both")
    if not judge and not judge_url:
        raise MeraError(
            "no judge configured, so no judge score can be computed. Pass judge=<model id or "
            f"local path> (official: {DEFAULT_JUDGE}) to run it here, or judge_url=<http://host:"
            "port/classify> for a served judge (`mera-multi judge serve --model PATH`)."
        )
    if judge_tokenizer and not judge_url:
        raise MeraError(
            "judge_tokenizer is for a served judge (judge_url=...); a local judge "
            "uses its own tokenizer"
        )
    if judge_tokenizer:
        options["tokenizer"] = judge_tokenizer
    if judge_url:  # the key from the environment is part of what the cache tells apart
        from mera_multi_hf.core.http_client import key_or_env

        options["api_key"] = key_or_env(options.get("api_key"), API_KEY_ENV)
    key = ("http", judge_url) if judge_url else ("local", str(judge))
    key += tuple(sorted((k, repr(v)) for k, v in options.items()))
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = (
                HttpJudge(judge_url, **options) if judge_url else LocalJudge(str(judge), **options)
            )
        return _CACHE[key]


def judge_example_scores(
    prompts: Sequence[str],
    references: Sequence,
    predictions: Sequence[str],
    *,
    judge: str | Judge | None = None,
    judge_url: str | None = None,
    judge_tokenizer: str | None = None,
    **options,
) -> np.ndarray:
    """Per-example judge scores (0/1) with the judge named by `judge` or `judge_url`.

    `references` are the typed golds (a list of acceptable answers stays a list: the
    judge reads its Python str). Raises MeraError when no judge is configured.
    """
    backend = get_judge(judge, judge_url, judge_tokenizer, **options)
    return judge_scores(backend, predictions, references, prompts)
