"""The program's start-up without the cyclic garbage collector. What a command imports
lives as long as the program, yet the collections its allocations set off while it
imports (about ninety before an API run's first request) walk the young of it over and
over for nothing: 12 ms of an API run's CPU. The program holds the collector from its
start; the command resumes it where its own work starts, with what exists by then
frozen (:func:`gc.freeze`: the collector's later passes skip the libraries).

A Python caller's collector is its own: only the program holds it (``cli.main``)."""

from __future__ import annotations

import gc

_held = False


def hold_collections() -> None:
    """No cyclic collections until :func:`resume_collections` (the program's start)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def resume_collections() -> None:
    """The collector back, what exists now frozen; nothing unless this module held it."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
