"""Where loaded sources are kept under the tool's cache root: a raw folder's export
(converted once, per task and content) and a local folder's prepared Arrow files (per
folder and content)."""

from __future__ import annotations

from pathlib import Path

from mera_multi_hf._version import __version__
from mera_multi_hf.core.paths import cache_root
from mera_multi_hf.core.provenance import folder_fingerprint
from mera_multi_hf.tasks.spec import TaskSpec

CACHE_FORMAT = 3  # raise when the exported layout of a raw folder changes


def _folder_fingerprint(root: Path) -> str:
    """The folder's place and the names, sizes and times of its files, with the package
    version and the cache format: a cache made by other code or from other files is not
    reused."""
    root = Path(root).expanduser().resolve()
    return folder_fingerprint(root, salt=f"{__version__}:{CACHE_FORMAT}:{root}", times=True)


def raw_export_dir(task: TaskSpec, source) -> Path:
    """Where a raw folder's export is kept in the cache (one per task and content)."""
    return cache_root() / "raw" / f"{task.key}-{_folder_fingerprint(Path(source))}"


def arrow_cache_dir(source) -> str | None:
    """Where ``load_dataset`` keeps a local folder's prepared Arrow files: one place per
    folder and content. ``datasets`` itself keys a folder whose card has a ``configs:``
    block by the folder's name and the relative file patterns only, so two equally named
    folders (two ``export/`` folders in different places) would share one cache entry and
    the second would silently load the first one's data. None (the default cache) for a
    Hub id."""
    path = Path(source).expanduser()
    return str(cache_root() / "datasets" / _folder_fingerprint(path)) if path.is_dir() else None
