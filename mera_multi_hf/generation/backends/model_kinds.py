"""Model kinds: names that stand for a model the ``hf`` backend builds or finds itself
(the demo's built-in models; any package's own), and pointers for names that are
not models but lead to one.

A kind gives the id the records carry, the folder (built on first use), its revision,
how a check names it and what the results say of its answers::

    register_model_kind(ModelKind("me/small", folder=build_mine, revision=fingerprint_of))

``names``: the names it answers to (default: its id); ``None`` among them makes it the
model of a run that names none. ``audio``: another kind's id that audio inputs go to (a
pair of models behind one name). ``data``: the dataset source a run of it reads when no
``--data`` is given.

The built-in kinds register themselves from the modules in ``BUILT_IN``, imported by name
on the first lookup: they sit above the stages they feed, as a user's code would.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


@dataclass(frozen=True)
class ModelKind:
    model_id: str  # the id the records carry
    folder: Callable[[], Path]  # the model's folder, built on first use
    revision: Callable[[Path], str]  # the revision recorded, from the folder
    title: str = ""  # how the checks before a run name it
    note: str = ""  # what the results say of its answers (e.g. random weights)
    audio: str | None = None  # the kind whose model answers audio inputs
    data: str | None = None  # the dataset source read when no --data is given


KINDS: dict[str | None, ModelKind] = {}
# name -> a one-line pointer, or None: for names that are not models (a family's name)
POINTERS: list[Callable[[str], str | None]] = []
# The modules that register the built-in kinds and pointers (imported by name: see above).
BUILT_IN = ("mera_multi_hf.demo.model_kinds",)


def register_model_kind(kind: ModelKind, names: tuple = ()) -> None:
    for name in names or (kind.model_id,):
        KINDS[name] = kind


def register_model_pointer(pointer: Callable[[str], str | None]) -> None:
    POINTERS.append(pointer)


def _built_in() -> None:
    for module in BUILT_IN:
        importlib.import_module(module)


def model_kind(name: str | None) -> ModelKind | None:
    """The kind ``name`` stands for (None: the model of a run that names none), or None."""
    _built_in()
    return KINDS.get(name)


def model_pointer(name: str) -> str | None:
    """A one-line pointer for a name that is no model but leads to one, or None."""
    _built_in()
    return next((line for line in (p(name) for p in POINTERS) if line), None)
