"""Backends: where generations come from. Each one implements :class:`Backend`.

    engine = make_backend("hf", "Qwen/Qwen2-VL-2B-Instruct", batch_size=8, stop=("\\n\\n",))
    engine.load()
    texts = engine.generate(requests)   # one string per request, cut at its first stop string
    engine.close()

Both backends generate as the official harness does for every MERA Multi task: greedy,
at most ``request.max_new_tokens`` new tokens (256 by default), a stop at the first of
``request.stop`` (the few-shot delimiter "\\n\\n" by default) or EOS, and the text cut at
the first stop string afterwards.

What the backends share (the protocol, the stop strings) is :mod:`.base`; the registry
of backends by name is :mod:`.registry`. The backends import those, never this package.

Adding a backend: a class with the :class:`Backend` members, decorated with its kind, the
dataclass of the options it takes and what it can do::

    @dataclass
    class EchoOptions:                       # every option it takes, with its default
        batch_size: int = 8
        stop: tuple[str, ...] | None = None

    @register_backend("echo", options=EchoOptions,
                      capabilities=Capabilities(streaming=False, media=frozenset({"image"})))
    class EchoBackend:
        name = "echo"
        def __init__(self, model, **options): ...   # called as cls(model, **EchoOptions fields)

``capabilities.streaming``: the class has ``stream(requests, prepare)`` (answers logged as
each completes; else ``generate`` gets batches); ``capabilities.media``: the media kinds
it takes (a task of another modality is refused before any work). A run fills the
options from its RunConfig fields of the same names (``batch_size``, ``stop``, ``seed``,
...). An installed package makes its backend a ``--backend`` choice with an entry point
in the group ``mera_multi_hf.backends``, e.g. in its pyproject.toml::

    [project.entry-points."mera_multi_hf.backends"]
    echo = "mypkg:EchoBackend"

The built-in kinds (hf, openai) are imported on first use, the installed ones looked up
only for a kind that is not built in.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .base import (DEFAULT_CONCURRENCY, MAX_CONCURRENCY, Backend, check_stop,  # noqa: F401 - public
                   cut_at_stop)
from .registry import (Capabilities, backend_options, backend_spec,  # noqa: F401 - public
                       capabilities_of, known_kinds, register_backend)

if TYPE_CHECKING:
    from ..request import Request


def make_backend(kind: str, model: str | None, **options) -> Backend:
    """The backend ``kind`` (hf, openai, or an installed one) for ``model``.

    ``options`` are keywords of the backend's options dataclass
    (:class:`~.hf_options.HFOptions`, :class:`~.openai.OpenAIOptions`, ...); those another
    backend takes are ignored, so a caller may pass every field of its run configuration;
    a name that none takes is a TypeError.

    hf (transformers in this process; ``model``: Hub id, local folder, or None for the
    built-in tiny model): ``revision``, ``dtype`` (auto | float32 | bfloat16 | float16),
    ``device`` (cpu, cuda, cuda:1, auto; default: this process's accelerate device),
    ``max_pixels``, ``max_frames``, ``trust_remote_code``, ``prompt_mode`` (auto | chat |
    plain), ``batch_size``, ``stop``.

    openai (a chat-completions server; ``model``: the served model name): ``base_url``
    (required, up to /v1), ``api_key`` (default $OPENAI_API_KEY; never recorded),
    ``concurrency``, ``timeout`` (seconds per request), ``max_retries``, ``backoff``,
    ``max_pixels``, ``batch_size``, ``seed`` (sent, as the harness does), ``stop``.

    ``stop``: the run's stop strings (default: the official "\\n\\n"), recorded in
    ``settings()``; each request carries its own copy in ``Request.stop``.
    """
    mine = backend_options(kind, options)
    cls = backend_spec(kind).cls
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

    capabilities = Capabilities(streaming=False)  # both parts are hf backends

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
