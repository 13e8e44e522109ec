"""The backends by name: ``@register_backend`` fills the registry, ``backend_spec`` reads it.

The built-in kinds are known by module path and imported on first lookup, so importing
the package (or the CLI) imports neither transformers nor the HTTP client. A kind that
is not built in is looked up among the installed packages' entry points (group
``mera_multi_hf.backends``, name = kind, value = ``module:Class``), and only then: the
scan of installed distributions costs time that a plain run never pays.
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass

from ...errors import MeraError

ENTRY_POINT_GROUP = "mera_multi_hf.backends"
ALL_MEDIA = frozenset({"image", "audio", "video"})
# kind -> the module whose @register_backend registers it (imported on first lookup)
BUILT_IN = {"hf": "mera_multi_hf.runner.backends.hf",
            "openai": "mera_multi_hf.runner.backends.openai"}


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, declared instead of sniffed from its methods.

    ``streaming``: it has ``stream(requests, prepare)`` yielding (request, answer,
    seconds) as each request completes (a server's answers are logged as they arrive;
    otherwise the runner sends batches of ``batch_size`` to ``generate``).
    ``media``: the media kinds it accepts (a task of another modality is refused before
    any work)."""
    streaming: bool = False
    media: frozenset = ALL_MEDIA


@dataclass(frozen=True)
class BackendSpec:
    """One registered backend: its class (called as ``cls(model, **options)``), the
    dataclass of the options it takes, and its capabilities."""
    kind: str
    cls: type
    options: type
    capabilities: Capabilities

    def option_names(self) -> set[str]:
        return {f.name for f in dataclasses.fields(self.options)}


_REGISTERED: dict[str, BackendSpec] = {}


def register_backend(kind: str, *, options: type, capabilities: Capabilities = Capabilities()):
    """Class decorator: the backend ``kind``, its options dataclass and capabilities. The
    class keeps its capabilities as ``cls.capabilities`` (what the runner reads)."""
    if not dataclasses.is_dataclass(options):
        raise TypeError(f"register_backend({kind!r}): options must be a dataclass, "
                        f"got {options!r}")

    def decorate(cls):
        cls.capabilities = capabilities
        _REGISTERED[kind] = BackendSpec(kind, cls, options, capabilities)
        return cls

    return decorate


def _entry_points() -> dict:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known_kinds() -> list[str]:
    """Every kind that may be asked for: the built-in ones, then the installed ones."""
    return list(BUILT_IN) + sorted((set(_entry_points()) | set(_REGISTERED)) - set(BUILT_IN))


def is_known(kind: str) -> bool:
    """Whether ``kind`` names a backend, without importing it (built-in: no scan)."""
    return kind in BUILT_IN or kind in _REGISTERED or kind in _entry_points()


def unknown_backend(kind) -> MeraError:
    return MeraError(f"unknown backend {kind!r}; choose one of {', '.join(known_kinds())}")


def check_kind(kind) -> None:
    """MeraError for a kind that no backend has."""
    if not isinstance(kind, str) or not is_known(kind):
        raise unknown_backend(kind)


def backend_spec(kind: str) -> BackendSpec:
    """The registered backend ``kind``; its module is imported on the first lookup."""
    if kind not in _REGISTERED:
        if kind in BUILT_IN:
            importlib.import_module(BUILT_IN[kind])
        else:
            _load_entry_point(kind)
    return _REGISTERED[kind]


def _load_entry_point(kind) -> None:
    point = _entry_points().get(kind) if isinstance(kind, str) else None
    if point is None:
        raise unknown_backend(kind)
    loaded = point.load()  # importing its module runs its @register_backend
    spec = next((s for s in _REGISTERED.values() if s.cls is loaded), None)
    if spec is None:
        raise MeraError(f"backend {kind!r} ({point.value}) is not registered: decorate the "
                        "class with mera_multi_hf.runner.backends.register_backend")
    _REGISTERED[kind] = dataclasses.replace(spec, kind=kind)


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


def capabilities_of(engine) -> Capabilities:
    """What ``engine`` declared (registered backends do); an engine made elsewhere and
    passed to the run ready-made without a declaration gets the defaults."""
    declared = getattr(type(engine), "capabilities", None)
    return declared if isinstance(declared, Capabilities) else Capabilities()


class BackendChoices:
    """``--backend``'s choices for argparse: a built-in kind is checked without a scan;
    the installed kinds are listed only when the help or an error shows the choices."""

    def __contains__(self, kind) -> bool:
        return isinstance(kind, str) and is_known(kind)

    def __iter__(self):
        return iter(known_kinds())
