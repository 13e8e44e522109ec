"""The MERA answer judge: input building (SPEC.md section 3) and two backends.

A judge is a binary sequence classifier (1 = the answer is correct). For one example:

- input = prompt + SEP + gold + SEP + prediction, SEP being the judge tokenizer's
  separator token;
- a second input is built the same way from the part of the prediction after the last
  "ОТВЕТ" when that part is not empty. The marker is matched case-insensitively
  ("Ответ:", "ответ"), because models rarely keep the capitals of the prompt; this can
  only add inputs, and the example takes the max, so a case-sensitive reading is never
  scored higher than this one;
- an input longer than `window` tokens (7995 by default) is judged twice: its first and
  its last `window` tokens (without the [CLS]/[SEP] the classifier adds itself);
- label = argmax of the class probabilities; example score = max over its inputs;
  task score = mean over examples.

A gold that is a list of acceptable answers (ruCommonVQA) gives inputs for each of them;
the max keeps the "match any" meaning of exact match.

Backends share one interface, `labels(texts) -> list[int]`:

- `LocalJudge`: transformers `AutoModelForSequenceClassification` in this process;
- `HttpJudge`: a served judge, POSTing the official harness's request
  `{"model": ..., "input": text, "truncate_prompt_tokens": 8192}` to a vLLM-style
  classification endpoint (vLLM's `/classify`, or `mera-multi judge serve`).

Token windows need the judge tokenizer. `LocalJudge` has it. `HttpJudge` uses it when
given `tokenizer=` (a local path or Hub id); otherwise texts are sent whole and the
server's `truncate_prompt_tokens` keeps their last 8192 tokens (vLLM truncates on the
left), which is not the two-window protocol: give the tokenizer for official numbers.
Without a tokenizer, `sep=` must name the separator token.
"""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from .errors import MeraError

DEFAULT_JUDGE = "MERA-evaluation/MERA_Answer_judge"
WINDOW_TOKENS = 7995
TRUNCATE_PROMPT_TOKENS = 8192

_ANSWER_MARK = re.compile("ответ", re.IGNORECASE)


def answer_part(prediction: str) -> str:
    """The prediction after its last "ОТВЕТ" (any case), stripped of spaces and colons.

    "" when there is no marker or nothing follows it.

    >>> answer_part("Рассуждаю... ОТВЕТ: синий")
    'синий'
    >>> answer_part("синий")
    ''
    """
    last = None
    for last in _ANSWER_MARK.finditer(prediction):
        pass
    if last is None:
        return ""
    return prediction[last.end():].strip().strip(":").strip()


def raw_inputs(prompt: str, gold: str | Sequence[str], prediction: str, sep: str) -> list[str]:
    """The judge texts of one example before token windows (1 to 2 per gold answer).

    >>> raw_inputs("Вопрос?", "синий", "ответ: синий", "[SEP]")
    ['Вопрос?[SEP]синий[SEP]ответ: синий', 'Вопрос?[SEP]синий[SEP]синий']
    """
    golds = [gold] if isinstance(gold, str) else list(gold)
    if not golds:
        raise MeraError("a judged example has an empty list of gold answers")
    tail = answer_part(prediction)
    texts = []
    for g in golds:
        texts.append(f"{prompt}{sep}{g}{sep}{prediction}")
        if tail:
            texts.append(f"{prompt}{sep}{g}{sep}{tail}")
    return texts


def token_windows(texts: list[str], tokenizer, window: int = WINDOW_TOKENS) -> list[list[str]]:
    """Each text as itself, or (first `window` tokens, last `window` tokens) when longer.

    Windows are decoded back to text so that every backend, local or served, classifies
    the same strings; special tokens in the middle (SEP) survive the round trip.
    """
    if window < 1:
        raise MeraError(f"the judge token window must be positive, got {window}")
    # verbose=False: long texts are the point here, not a mistake to warn about
    ids = tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]
    out = []
    for text, toks in zip(texts, ids):
        if len(toks) <= window:
            out.append([text])
        else:
            out.append([tokenizer.decode(part, skip_special_tokens=False,
                                         clean_up_tokenization_spaces=False)
                        for part in (toks[:window], toks[-window:])])
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
        per_example = [raw_inputs(p, g, a, self.sep) for p, g, a in zip(prompts, golds, predictions)]
        if self.tokenizer is None:
            return per_example
        flat = [t for texts in per_example for t in texts]
        windows = iter(token_windows(flat, self.tokenizer, self.window))
        return [[w for _ in texts for w in next(windows)] for texts in per_example]


def judge_scores(judge: Judge, predictions: Sequence[str], references: Sequence,
                 prompts: Sequence[str]) -> np.ndarray:
    """Per-example judge scores (0/1, int8): the max label over each example's inputs."""
    predictions, references, prompts = list(predictions), list(references), list(prompts)
    if not (len(predictions) == len(references) == len(prompts)):
        raise MeraError(f"judge scoring got {len(predictions)} predictions, {len(references)} "
                        f"references and {len(prompts)} prompts: they must pair up one to one")
    for name, column in (("predictions", predictions), ("prompts", prompts)):
        for i, value in enumerate(column):
            if not isinstance(value, str):
                raise MeraError(f"{name}[{i}] is {type(value).__name__}, expected a string")
    if not predictions:
        raise MeraError("no examples to judge: the predictions are empty")
    per_example = judge.inputs_many(prompts, references, predictions)
    owner = np.repeat(np.arange(len(per_example)), [len(t) for t in per_example])
    labels = np.asarray(judge.labels([t for texts in per_example for t in texts]))
    if labels.shape != owner.shape or not np.isin(labels, (0, 1)).all():
        raise MeraError(f"the judge {judge.describe().get('model')!r} must return one label "
                        f"0 or 1 per input; got {labels.tolist()[:10]} for {owner.size} inputs. "
                        "Is it a binary classifier?")
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

    def __init__(self, model: str = DEFAULT_JUDGE, device: str | None = None,
                 batch_size: int = 16, window: int = WINDOW_TOKENS,
                 max_tokens: int = TRUNCATE_PROMPT_TOKENS, revision: str | None = None):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.model_id = str(model)
        self.revision = revision
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.batch_size = max(1, int(batch_size))
        self.window = int(window)
        if self.model_id.startswith((".", "/", "~")) and not Path(self.model_id).expanduser().is_dir():
            raise MeraError(f"the judge model folder {self.model_id} does not exist: pass a folder "
                            f"saved with save_pretrained, or a Hub id (official: {DEFAULT_JUDGE})")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_id, revision=revision)
            self.model = AutoModelForSequenceClassification.from_pretrained(
                self.model_id, revision=revision).to(self.device).eval()
        except (OSError, ValueError) as err:
            raise MeraError(
                f"could not load the judge model {self.model_id!r}: {str(err).rstrip('.')}. "
                "Pass a local folder "
                f"saved with save_pretrained, or a Hub id you can download (official: "
                f"{DEFAULT_JUDGE})") from None
        if self.tokenizer.sep_token is None:
            raise MeraError(f"the judge tokenizer of {self.model_id!r} has no sep_token: the "
                            "judge input needs one (SPEC.md section 3)")
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

    @property
    def num_classes(self) -> int:
        return int(self.model.config.num_labels)

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
                chunk = order[start:start + self.batch_size]
                enc = self.tokenizer([texts[i] for i in chunk], padding=True, truncation=True,
                                     max_length=max_len, return_tensors="pt").to(self.device)
                logits = self.model(**enc).logits.float()
                for i, row in zip(chunk, torch.softmax(logits, dim=-1).cpu().tolist()):
                    out[i] = row
        return out

    def labels(self, texts: list[str]) -> list[int]:
        return [int(np.argmax(p)) for p in self.probs(list(texts))]

    def describe(self) -> dict:
        return {"backend": "local", "model": self.model_id, "revision": self.revision,
                "sep": self.sep, "window": self.window, "max_tokens": self.max_tokens}


# ----------------------------------------------------------------------------------
# Backend 2: a served judge over HTTP.

def classify_url(url: str) -> str:
    """A bare http://host:port gets the vLLM route /classify; a given path is kept."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise MeraError(f"judge_url {url!r} is not an http(s) URL; expected e.g. "
                        "http://127.0.0.1:8000/classify")
    path = parts.path if parts.path not in ("", "/") else "/classify"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


class _BadAnswer(Exception):
    """The server answered, but not with what the protocol promises (worth a retry)."""


class HttpJudge(Judge):
    """A judge served behind a vLLM-style classification endpoint.

    model: the served model name; None asks the server's /v1/models for it.
    tokenizer: the judge tokenizer (path or Hub id) for SEP and the token windows;
    sep: the separator token when no tokenizer is given.
    retries/backoff: a failed request is retried `retries` times, sleeping
    backoff * 2**attempt seconds in between; then a MeraError names the URL and cause.
    batch_size: texts per request (1 = the official single-string request; more sends
    a list as `input`). concurrency: requests in flight at once.
    """

    def __init__(self, url: str, model: str | None = None, *, tokenizer=None,
                 sep: str | None = None, timeout: float = 60.0, retries: int = 3,
                 backoff: float = 1.0, batch_size: int = 1, concurrency: int = 4,
                 window: int = WINDOW_TOKENS,
                 truncate_prompt_tokens: int = TRUNCATE_PROMPT_TOKENS):
        self.url = classify_url(url)
        self.model = model
        self.timeout = float(timeout)
        self.retries = max(0, int(retries))
        self.backoff = float(backoff)
        self.batch_size = max(1, int(batch_size))
        self.concurrency = max(1, int(concurrency))
        self.window = int(window)
        self.truncate_prompt_tokens = truncate_prompt_tokens
        self.tokenizer_id = None
        if tokenizer is not None:
            if isinstance(tokenizer, str):
                from transformers import AutoTokenizer

                self.tokenizer_id = tokenizer
                try:
                    tokenizer = AutoTokenizer.from_pretrained(tokenizer)
                except (OSError, ValueError) as err:
                    raise MeraError(f"could not load the judge tokenizer {self.tokenizer_id!r}: "
                                    f"{err}") from None
            self.tokenizer = tokenizer
            sep = sep or tokenizer.sep_token
        if not sep:
            raise MeraError(
                f"the served judge at {self.url} needs the judge tokenizer's separator token to "
                "build its input: pass tokenizer=<path or Hub id of the judge tokenizer> (also "
                "enables the 7995-token windows) or sep=<the separator, e.g. [SEP]>")
        self.sep = sep
        self._local = threading.local()

    def _session(self):
        import requests

        if not hasattr(self._local, "session"):
            self._local.session = requests.Session()
        return self._local.session

    def _with_retries(self, what: str, attempt_once):
        import requests

        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                return attempt_once()
            except requests.ConnectionError as err:
                problem = f"cannot connect ({type(err).__name__}; is the server running?)"
            except requests.Timeout:
                problem = f"no answer within {self.timeout:g} s"
            except _BadAnswer as err:
                problem = str(err)
            except requests.RequestException as err:
                problem = f"{type(err).__name__}: {err}"
        raise MeraError(
            f"the judge server at {what} failed after {self.retries + 1} attempt(s): {problem}. "
            "Start one with `mera-multi judge serve --model PATH` (or vLLM with "
            "--task classify), or score with a local judge (judge=<model>).")

    def _resolved_model(self) -> str:
        if self.model is None:
            parts = urlsplit(self.url)
            models_url = urlunsplit((parts.scheme, parts.netloc, "/v1/models", "", ""))

            def ask():
                resp = self._session().get(models_url, timeout=self.timeout)
                body = _json_body(resp, models_url)
                try:
                    return str(body["data"][0]["id"])
                except (KeyError, IndexError, TypeError):
                    raise _BadAnswer(f"{models_url} lists no model: {str(body)[:200]}") from None

            self.model = self._with_retries(models_url, ask)
        return self.model

    def probs(self, texts: list[str]) -> list[list[float]]:
        model = self._resolved_model()
        batches = [texts[i:i + self.batch_size] for i in range(0, len(texts), self.batch_size)]

        def one(batch):
            body = {"model": model, "input": batch[0] if self.batch_size == 1 else batch}
            if self.truncate_prompt_tokens:
                body["truncate_prompt_tokens"] = self.truncate_prompt_tokens
            return self._with_retries(self.url, lambda: self._post(body, len(batch)))

        if self.concurrency == 1 or len(batches) == 1:
            results = [one(b) for b in batches]
        else:
            with ThreadPoolExecutor(self.concurrency) as pool:
                results = list(pool.map(one, batches))
        return [p for batch in results for p in batch]

    def _post(self, body: dict, n: int) -> list[list[float]]:
        resp = self._session().post(self.url, json=body, timeout=self.timeout)
        answer = _json_body(resp, self.url)
        try:
            data = sorted(answer["data"], key=lambda d: d.get("index", 0))
            probs = [[float(x) for x in item["probs"]] for item in data]
        except (KeyError, TypeError, ValueError, AttributeError):
            raise _BadAnswer(f"the answer has no data[i].probs list: {str(answer)[:200]!r}") from None
        if len(probs) != n or any(len(p) < 2 for p in probs):
            raise _BadAnswer(f"expected {n} probability lists of 2+ classes, got "
                             f"{str(answer)[:200]!r}")
        return probs

    def labels(self, texts: list[str]) -> list[int]:
        return [int(np.argmax(p)) for p in self.probs(list(texts))]

    def describe(self) -> dict:
        return {"backend": "http", "url": self.url, "model": self.model,
                "tokenizer": self.tokenizer_id, "sep": self.sep,
                "window": self.window if self.tokenizer is not None else None,
                "truncate_prompt_tokens": self.truncate_prompt_tokens}


def _json_body(resp, url: str):
    if resp.status_code == 429 or resp.status_code >= 500:
        raise _BadAnswer(f"HTTP {resp.status_code} from {url}: {resp.text[:200]!r}")
    if resp.status_code >= 400:
        # A client error will not fix itself: no retry.
        raise MeraError(f"the judge server at {url} refused the request with HTTP "
                        f"{resp.status_code}: {resp.text[:300]!r}. Check the model name and URL.")
    try:
        return resp.json()
    except ValueError:
        raise _BadAnswer(f"the answer is not JSON: {resp.text[:200]!r}") from None


# ----------------------------------------------------------------------------------
# One entry point for the metric module and the scoring report.

_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()


def get_judge(judge: str | Judge | None = None, judge_url: str | None = None, **options) -> Judge:
    """A judge from `judge` (model id / local path, or a Judge) or `judge_url` (served).

    Options go to LocalJudge or HttpJudge. Judges are cached per configuration so a
    model loads once per process. With neither argument this raises: a judge score is
    never made up.
    """
    if isinstance(judge, Judge):
        return judge
    if judge and judge_url:
        raise MeraError("give either judge=<model id or path> or judge_url=<server URL>, not both")
    if not judge and not judge_url:
        raise MeraError(
            "no judge configured, so no judge score can be computed. Pass judge=<model id or "
            f"local path> (official: {DEFAULT_JUDGE}) to run it here, or judge_url=<http://host:"
            "port/classify> for a served judge (`mera-multi judge serve --model PATH`).")
    key = ("http", judge_url) if judge_url else ("local", str(judge))
    key += tuple(sorted((k, repr(v)) for k, v in options.items()))
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = HttpJudge(judge_url, **options) if judge_url else \
                LocalJudge(str(judge), **options)
        return _CACHE[key]


def judge_example_scores(prompts: Sequence[str], references: Sequence, predictions: Sequence[str],
                         *, judge: str | Judge | None = None, judge_url: str | None = None,
                         **options) -> np.ndarray:
    """Per-example judge scores (0/1) with the judge named by `judge` or `judge_url`.

    The one call the scoring report makes; raises MeraError when no judge is configured.
    """
    backend = get_judge(judge, judge_url, **options)
    return judge_scores(backend, predictions, references, prompts)
