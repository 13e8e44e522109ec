"""Files written whole or not at all: a temporary sibling, flushed to disk, then renamed
over the target (a rename within one folder is atomic on POSIX and Windows)."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def write_temp(path: str | Path, data: bytes | str) -> Path:
    """``data`` in a flushed temporary beside ``path`` (removed again if it fails; a
    write error names ``path``)."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as err:  # name the file a full disk stopped
        Path(tmp).unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror, str(path)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_atomic(path: str | Path, data: bytes | str) -> Path:
    tmp = write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return Path(path)


def sha256_bytes(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()
