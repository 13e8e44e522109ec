"""Whether an output folder still holds a set of files as it wrote them: what a rerun
checks before it keeps its outputs rather than writing them again."""

from __future__ import annotations

import os

from mera_multi_hf.core.outputs.content import records
from mera_multi_hf.core.outputs.fs import _listed
from mera_multi_hf.core.outputs.rules import entries, read_marker


def still_written(folder, expected: dict[str, str], private=()) -> bool:
    """Whether the files ``expected`` names (name -> sha256) are there as ``folder`` (an
    open :class:`~mera_multi_hf.core.outputs.OutputFolder`) wrote them: each a plain file
    (never through a link) holding that content (the marker's record of it reused while
    its size and time agree, as the marker itself does), and those ``private`` names
    ("folder/": its files and it) still closed to everyone else."""
    now = records(folder._root(), expected, set(), entries(read_marker(folder.path)), None)
    if any((now.get(name) or {}).get("sha256") != sha for name, sha in expected.items()):
        return False
    closed = set()
    for name in expected:
        if _listed(name, private):
            closed |= {name} | ({name.rsplit("/", 1)[0]} if "/" in name else set())
    return all(not os.lstat(folder.path / name).st_mode & 0o077 for name in closed)
