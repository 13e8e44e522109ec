"""What the program (``mera-multi``, not a Python caller) sets for its own process, in
one place: :func:`program_start`.

The cyclic garbage collector is held while it starts. What a command imports
lives as long as the program, yet the collections its allocations set off while it
imports (about ninety before an API run's first request) walk the young of it over and
over for nothing: 12 ms of an API run's CPU. The program holds the collector from its
start; the command resumes it where its own work starts, with what exists by then
frozen (:func:`gc.freeze`: the collector's later passes skip the libraries).

At exit the interpreter's last collections would walk every object torch and
transformers made (about a second): frozen, they are left to the OS, which frees them.

numpy's BLAS (OpenBLAS) keeps its worker threads spinning for about a tenth of a second
after it loads and after each product, waiting for more work: a tenth of an API run's
CPU. The program lets them sleep at once (``OPENBLAS_THREAD_TIMEOUT``, its shortest),
still threaded; a value set in the environment stands.

A Python caller's process is its own: only the program sets these (``cli.main``)."""

from __future__ import annotations

import atexit
import gc
import os

_held = False


def program_start() -> None:
    """The program's own settings, before it imports anything heavy (numpy reads the
    BLAS setting when it loads)."""
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    hold_collections()
    atexit.register(gc.freeze)


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
