"""One entry point for the metric module, the scoring report and the CLI: the judge that
the options name (here or served), cached per configuration, and the per-example scores
it gives."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from .errors import MeraError
from .http_judge import HttpJudge
from .judges import API_KEY_ENV, DEFAULT_JUDGE, Judge, judge_scores
from .local_judge import LocalJudge

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
        from .http_client import key_or_env

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
