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

import dataclasses
from typing import TYPE_CHECKING

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.generation.backends.base import (  # noqa: F401 - public
    DEFAULT_CONCURRENCY,
    MAX_CONCURRENCY,
    Backend,
    check_stop,
    cut_at_stop,
)
from mera_multi_hf.generation.backends.model_kinds import model_kind
from mera_multi_hf.generation.backends.registry import (  # noqa: F401 - public
    REGISTERED,
    BackendSpec,
    Capabilities,
    capabilities_of,
    register_backend,
)

if TYPE_CHECKING:
    from mera_multi_hf.generation.request import Request

ENTRY_POINT_GROUP = "mera_multi_hf.backends"


# The built-in kinds: each one's module, imported on its first lookup (its
# @register_backend fills the registry); imported by name, so the import graph sees it.
def _import_hf():
    from mera_multi_hf.generation.backends import hf  # noqa: F401


def _import_openai():
    from mera_multi_hf.generation.backends import openai  # noqa: F401


BUILT_IN = {"hf": _import_hf, "openai": _import_openai}


def _entry_points() -> dict:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known_kinds() -> list[str]:
    """Every kind that may be asked for: the built-in ones, then the installed ones."""
    return list(BUILT_IN) + sorted((set(_entry_points()) | set(REGISTERED)) - set(BUILT_IN))


def is_known(kind: str) -> bool:
    """Whether ``kind`` names a backend, without importing it (built-in: no scan)."""
    return kind in BUILT_IN or kind in REGISTERED or kind in _entry_points()


def unknown_backend(kind) -> MeraError:
    return MeraError(f"unknown backend {kind!r}; choose one of {', '.join(known_kinds())}")


def check_kind(kind) -> None:
    """MeraError for a kind that no backend has."""
    if not isinstance(kind, str) or not is_known(kind):
        raise unknown_backend(kind)


def backend_spec(kind: str) -> BackendSpec:
    """The registered backend ``kind``; its module is imported on the first lookup."""
    if kind not in REGISTERED:
        if kind in BUILT_IN:
            BUILT_IN[kind]()
        else:
            _load_entry_point(kind)
    return REGISTERED[kind]


def _load_entry_point(kind) -> None:
    point = _entry_points().get(kind) if isinstance(kind, str) else None
    if point is None:
        raise unknown_backend(kind)
    loaded = point.load()  # importing its module runs its @register_backend
    spec = next((s for s in REGISTERED.values() if s.cls is loaded), None)
    if spec is None:
        raise MeraError(
            f"backend {kind!r} ({point.value}) is not registered: decorate the "
            "class with mera_multi_hf.generation.backends.register_backend"
        )
    REGISTERED[kind] = dataclasses.replace(spec, kind=kind)


def backend_options(kind: str, options: dict) -> dict:
    """``options`` (flat keywords) as backend ``kind`` takes them: every field of its
    options dataclass, those not given at their defaults. A name that another backend
    takes is left out (a caller may pass every option of a run); a name that none takes
    is a TypeError."""
    spec = backend_spec(kind)
    taken = spec.option_names()
    stray = set(options) - taken
    for other in BUILT_IN:
        if stray and other != kind:
            stray -= backend_spec(other).option_names()
    if stray:  # only then are the installed backends loaded to read their options
        for other in set(_entry_points()) - set(BUILT_IN) - {kind}:
            stray -= backend_spec(other).option_names()
    if stray:
        raise TypeError(f"make_backend: unknown option(s) {', '.join(sorted(stray))}")
    chosen = spec.options(**{k: v for k, v in options.items() if k in taken})
    return {name: getattr(chosen, name) for name in taken}


class BackendChoices:
    """``--backend``'s choices for argparse. A built-in kind is checked without a scan of
    the installed packages, and the help lists the built-in kinds (``--help`` stays as
    fast as before); once a kind was not found, the error lists every kind there is."""

    def __init__(self):
        self.missed = False

    def __contains__(self, kind) -> bool:
        found = isinstance(kind, str) and is_known(kind)
        self.missed = self.missed or not found
        return found

    def __iter__(self):
        if self.missed:
            return iter(known_kinds())
        return iter(list(BUILT_IN) + sorted(set(REGISTERED) - set(BUILT_IN)))


def make_backend(kind: str, model: str | None, **options) -> Backend:
    """The backend ``kind`` (hf, openai, or an installed one) for ``model``.

    ``options`` are keywords of the backend's options dataclass
    (:class:`~.hf_options.HFOptions`, :class:`~.openai.OpenAIOptions`, ...); those another
    backend takes are ignored, so a caller may pass every field of its run configuration;
    a name that none takes is a TypeError.

    hf (transformers in this process; ``model``: Hub id, local folder, or a model kind's
    name, :mod:`.model_kinds`; None: the kind registered for a run that names no model): ``revision``, ``dtype`` (auto | float32 | bfloat16 | float16),
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
    pair = model_kind(model) if kind == "hf" else None
    if pair is not None and pair.audio:  # a model kind of two models, by input media
        mine.pop("revision", None)
        return RoutingBackend(cls(pair.model_id, **mine), cls(pair.audio, **mine))
    return cls(model, **mine)


def model_for(engine, kinds) -> str:
    """The model that answers inputs of these media kinds (a modality, or a request's):
    the engine's own, or the one a routing engine sends them to."""
    route = getattr(engine, "engine_for", None)
    return (route(kinds) if route else engine).model_id


class RoutingBackend:
    """Two plain backends behind one: requests with audio go to ``audio``, the rest to
    ``main`` (a model kind with an ``audio`` model). It records as ``main`` does,
    with the audio model named in its settings and info."""

    capabilities = Capabilities(streaming=False)  # both parts are hf backends

    def __init__(self, main: Backend, audio: Backend):
        self.main, self.audio = main, audio
        self.name, self.model_id, self.revision = main.name, main.model_id, main.revision
        self.batch_size = main.batch_size

    def settings(self) -> dict:
        return {
            **self.main.settings(),
            "audio_model": f"{self.audio.model_id}@{self.audio.revision}",
        }

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
        heard = {
            i
            for i, r in enumerate(requests)
            if self.engine_for({m.kind for m in r.all_media()}) is self.audio
        }
        out = [""] * len(requests)
        for engine, rows in (
            (self.audio, sorted(heard)),
            (self.main, [i for i in range(len(requests)) if i not in heard]),
        ):
            if rows:
                for i, text in zip(rows, engine.generate([requests[i] for i in rows])):
                    out[i] = text
        return out

    def close(self) -> None:
        self.main.close()
        self.audio.close()
