"""Where the project's files are, in a checkout and in an installed wheel.

A wheel carries the metric Space folders (metrics/) inside the package (under _bundled/);
a checkout or editable install has them beside the package. No package code lives
outside the package: the top-level folders only hold what a user opens and runs.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # this file is core/paths.py


def cache_root() -> Path:
    """Where this project keeps its converted datasets and built models:
    ``MERA_MULTI_CACHE`` (an absolute path), else ``~/.cache/mera_multi_hf``."""
    value = os.environ.get("MERA_MULTI_CACHE")
    if value is None:
        return Path.home() / ".cache" / "mera_multi_hf"
    path = os.path.expanduser(value)
    if not value.strip() or not os.path.isabs(path):  # never the current folder, by accident
        from mera_multi_hf.core.errors import MeraError

        raise MeraError(
            f"MERA_MULTI_CACHE={value!r} is not an absolute path: set it to the full path "
            "of a folder for this tool's cache, or unset it (~/.cache/mera_multi_hf)"
        )
    return Path(path)


def bundled_dir(name: str) -> Path:
    for candidate in (PACKAGE_DIR / "_bundled" / name, PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"the folder {name}/ is missing from this installation")


def load_module_from_file(path: Path, name: str) -> ModuleType:
    """Import one file as a module under a private name (once per process): the builder
    file of a task declared outside the package."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
