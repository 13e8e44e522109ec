"""The pages' jinja2 templates (``templates/``): one environment a process, and their
compiled code kept in this tool's cache, so that a run loads it (a third of a
millisecond) instead of compiling it again (ten milliseconds of CPU, every run).

jinja2's own ``FileSystemBytecodeCache`` writes with ``open``; this one writes through
the project's one write boundary (:func:`mera_multi_hf.core.outputs.cache_file`: whole
or not at all, so a concurrent run reads a complete file or none, and never through a
link). A cache entry is named by the template (its name and path) and by what else
shapes its code (jinja2's version, the environment's options); jinja2 checks the
template's text and Python's version itself. A damaged or unreadable entry is compiled
again and replaced; a cache that cannot be written only costs the compiling."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import jinja2

FOLDER = Path(__file__).parent / "templates"
OPTIONS = {"autoescape": True, "trim_blocks": True, "lstrip_blocks": True}
CACHE_FOLDER = "compiled-templates"  # in the cache root (MERA_MULTI_CACHE)
COMPILED_BYTES = 16 * 1024 * 1024  # a compiled template is tens of KB: a larger entry is not ours


class CompiledTemplates(jinja2.BytecodeCache):
    """Compiled templates as files of this tool's cache."""

    def __init__(self, folder: Path):
        self.folder = folder
        shaped = f"{jinja2.__version__} {sorted(OPTIONS.items())}".encode()
        self.stamp = hashlib.sha1(shaped, usedforsecurity=False).hexdigest()[:12]

    def _path(self, bucket) -> Path:
        return self.folder / f"{bucket.key}-{self.stamp}.bin"

    def load_bytecode(self, bucket) -> None:
        from mera_multi_hf.core.input_files import read_bytes

        try:  # (the one input reader: never a FIFO waited on, nor a link followed)
            bucket.bytecode_from_string(
                read_bytes(self._path(bucket), COMPILED_BYTES, follow_links=False)
            )
        except Exception:  # noqa: BLE001 - none yet, unreadable or damaged: compiled again
            bucket.reset()

    def dump_bytecode(self, bucket) -> None:
        from mera_multi_hf.core.outputs import cache_file

        try:
            cache_file(self._path(bucket), bucket.bytecode_to_string())
        except Exception:  # noqa: BLE001 - a read-only or full cache: compiled next time too
            return


@functools.cache
def environment() -> jinja2.Environment:
    """The environment of both pages (results.html, compare.html)."""
    from mera_multi_hf.core.paths import cache_root

    try:
        compiled = CompiledTemplates(cache_root() / CACHE_FOLDER)
    except Exception:  # noqa: BLE001 - no usable cache root (MERA_MULTI_CACHE): compiled each run
        compiled = None
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(FOLDER)), bytecode_cache=compiled, **OPTIONS
    )
