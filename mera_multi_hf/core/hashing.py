"""The content hash of what a run writes (results.json's ``files``). The files themselves
are written whole or not at all by :mod:`mera_multi_hf.core.outputs`."""

from __future__ import annotations

import hashlib


def sha256_bytes(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()
