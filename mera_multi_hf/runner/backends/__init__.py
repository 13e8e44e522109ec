"""Backends: where generations come from. Each one implements :class:`Backend`.

    engine = make_backend("hf", "Qwen/Qwen2-VL-2B-Instruct", batch_size=8, stop=("\\n\\n",))
    engine.load()
    texts = engine.generate(requests)   # one string per request, cut at its first stop string
    engine.close()

Both backends generate as the official harness does for every MERA Multi task: greedy,
at most ``request.max_new_tokens`` new tokens (256 by default), a stop at the first of
``request.stop`` (the few-shot delimiter "\\n\\n" by default) or EOS, and the text cut at
the first stop string afterwards.

What the backends share (the protocol, the stop strings) is :mod:`.base`; the backends
import it, never this package, so ``make_backend`` may import them.
"""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from ...errors import MeraError
from .base import (DEFAULT_CONCURRENCY, MAX_CONCURRENCY, Backend, check_stop,  # noqa: F401 - public
                   cut_at_stop)

if TYPE_CHECKING:
    from ..request import Request

KINDS = ("hf", "openai")


def _backend_class(kind: str):
    if kind == "hf":
        from .hf import HFBackend

        return HFBackend
    if kind == "openai":
        from .openai import OpenAIBackend

        return OpenAIBackend
    raise MeraError(f"unknown backend {kind!r}; choose one of {', '.join(KINDS)}")


def _options(cls) -> set[str]:
    return set(inspect.signature(cls.__init__).parameters) - {"self", "model"}


def make_backend(kind: str, model: str | None, **options) -> Backend:
    """The backend ``kind`` ("hf" or "openai") for ``model``.

    Options a backend does not take but the other one does are ignored, so a caller may
    pass every field of its run configuration; a name neither takes is a TypeError.

    hf (transformers in this process; ``model``: Hub id, local folder, or None for the
    built-in tiny model): ``revision``, ``dtype`` (auto | float32 | bfloat16 | float16),
    ``device`` (cpu, cuda, cuda:1, auto; default: this process's accelerate device),
    ``max_pixels``, ``trust_remote_code``, ``prompt_mode`` (auto | chat | plain),
    ``batch_size``, ``stop``.

    openai (a chat-completions server; ``model``: the served model name): ``base_url``
    (required, up to /v1), ``api_key`` (default $OPENAI_API_KEY; never recorded),
    ``concurrency``, ``timeout`` (seconds per request), ``max_retries``, ``backoff``,
    ``max_pixels``, ``batch_size``, ``seed`` (sent, as the harness does), ``stop``.

    ``stop``: the run's stop strings (default: the official "\\n\\n"), recorded in
    ``settings()``; each request carries its own copy in ``Request.stop``.
    """
    cls = _backend_class(kind)
    taken = _options(cls)
    known = set().union(*(_options(_backend_class(k)) for k in KINDS))
    unknown = set(options) - known
    if unknown:
        raise TypeError(f"make_backend: unknown option(s) {', '.join(sorted(unknown))}")
    mine = {k: v for k, v in options.items() if k in taken}
    if kind == "hf" and model in (None, "tiny"):  # the demo: two built-in models
        from ...tiny_model import TINY_AUDIO_MODEL_ID, TINY_MODEL_ID

        mine.pop("revision", None)
        return RoutingBackend(cls(TINY_MODEL_ID, **mine), cls(TINY_AUDIO_MODEL_ID, **mine))
    return cls(model, **mine)


def model_for(engine, kinds) -> str:
    """The model that answers inputs of these media kinds (a modality, or a request's):
    the engine's own, or the one a routing engine sends them to."""
    route = getattr(engine, "engine_for", None)
    return (route(kinds) if route else engine).model_id


class RoutingBackend:
    """Two plain backends behind one: requests with audio go to ``audio``, the rest to
    ``main`` (the demo's tiny LLaVA and tiny Qwen2-Audio). It records as ``main`` does,
    with the audio model named in its settings and info."""

    def __init__(self, main: Backend, audio: Backend):
        self.main, self.audio = main, audio
        self.name, self.model_id, self.revision = main.name, main.model_id, main.revision
        self.batch_size = main.batch_size

    def settings(self) -> dict:
        return {**self.main.settings(), "audio_model": f"{self.audio.model_id}@{self.audio.revision}"}

    def info(self) -> dict:
        info = self.main.info()
        if getattr(self.audio, "model", None) is not None:
            info["audio_model"] = self.audio.info()
        return info

    def load(self) -> None:
        self.main.load()

    def engine_for(self, kinds) -> Backend:
        """The engine for inputs of these media kinds: audio goes to the audio model."""
        return self.audio if "audio" in kinds else self.main

    def generate(self, requests: list[Request]) -> list[str]:
        heard = {i for i, r in enumerate(requests)
                 if self.engine_for({m.kind for m in r.all_media()}) is self.audio}
        out = [""] * len(requests)
        for engine, rows in ((self.audio, sorted(heard)),
                             (self.main, [i for i in range(len(requests)) if i not in heard])):
            if rows:
                for i, text in zip(rows, engine.generate([requests[i] for i in rows])):
                    out[i] = text
        return out

    def close(self) -> None:
        self.main.close()
        self.audio.close()
