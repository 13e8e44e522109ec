"""The content hash of what a run writes (results.json's ``files``). The files themselves
are written whole or not at all by :mod:`mera_multi_hf.core.outputs`."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_bytes(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def sha256_of(data: bytes | str | Path) -> str:
    """sha256 of a file's content: given whole, or a finished file (a page's medium,
    written as it was made), read in blocks."""
    if not isinstance(data, Path):
        return sha256_bytes(data)
    from mera_multi_hf.core.input_files import open_binary

    with open_binary(data) as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
