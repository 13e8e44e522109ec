"""The registry of backends: ``@register_backend`` records a backend class under its
kind, with the dataclass of its options and its :class:`Capabilities`.

Backends import this module (and :mod:`.base`), never their package; the package's
lookup (:func:`~mera_multi_hf.generation.backends.backend_spec`) imports the built-in
backends on first use and the installed ones through their entry points.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

ALL_MEDIA = frozenset({"image", "audio", "video"})


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


REGISTERED: dict[str, BackendSpec] = {}


def register_backend(kind: str, *, options: type, capabilities: Capabilities = Capabilities()):
    """Class decorator: the backend ``kind``, its options dataclass and capabilities. The
    class keeps its capabilities as ``cls.capabilities`` (what the runner reads)."""
    if not dataclasses.is_dataclass(options):
        raise TypeError(f"register_backend({kind!r}): options must be a dataclass, got {options!r}")

    def decorate(cls):
        cls.capabilities = capabilities
        REGISTERED[kind] = BackendSpec(kind, cls, options, capabilities)
        return cls

    return decorate


def capabilities_of(engine) -> Capabilities:
    """What ``engine`` declared (registered backends do); an engine made elsewhere and
    passed to the run ready-made without a declaration gets the defaults."""
    declared = getattr(type(engine), "capabilities", None)
    return declared if isinstance(declared, Capabilities) else Capabilities()
