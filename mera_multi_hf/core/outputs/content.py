"""What a folder's marker records of each file it lists: its content (size and sha256),
so that a renamed, copied (``cp -a``, ``tar``) or moved run folder is still known as
this tool's by what its files hold, not by where the folder is.

A file written whole is recorded whole. A file written bit by bit (a sample log) is
recorded by its head: its first complete lines, up to 64 KiB, which later appends never
change (a kill's torn last line is cut back to a line's end, never into the head)."""

from __future__ import annotations

import hashlib
import os
import stat

HEAD_BYTES = 64 << 10
_CHUNK = 1 << 20
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_hashed: dict[tuple, str] = {}  # (device, inode, size, mtime) -> sha256: read once a process


def _open_plain(dir_fd: int | None, name: str) -> int | None:
    """A plain file opened to read (None: absent, a link, or not a plain file with one
    link: a FIFO is never waited on)."""
    try:
        fd = os.open(name, _READ, dir_fd=dir_fd)
    except OSError:
        return None
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
        return fd
    os.close(fd)
    return None


def _digest(fd: int, size: int) -> str:
    """sha256 of the first ``size`` bytes of ``fd``."""
    digest, left = hashlib.sha256(), size
    os.lseek(fd, 0, os.SEEK_SET)
    while left > 0:
        chunk = os.read(fd, min(_CHUNK, left))
        if not chunk:
            break
        digest.update(chunk)
        left -= len(chunk)
    return digest.hexdigest()


def _complete_size(fd: int, size: int) -> int:
    """The size up to the last line's end (a torn last line is not content yet)."""
    end = size
    while end > 0:
        start = max(0, end - 8192)
        os.lseek(fd, start, os.SEEK_SET)
        block = os.read(fd, end - start)
        cut = block.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


def _whole(fd: int, info: os.stat_result) -> str:
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _hashed:
        _hashed[key] = _digest(fd, info.st_size)
    return _hashed[key]


def record(dir_fd: int, base: str, *, grows: bool, old: dict | None, known: str | None = None):
    """The content record of the file ``base`` (None when it is absent or not a plain
    file). ``old``: the marker's earlier record, reused while size and time agree;
    ``known``: the sha256 of what was just written there."""
    fd = _open_plain(dir_fd, base)
    if fd is None:
        return None
    try:
        info = os.fstat(fd)
        if grows:
            head = min(_complete_size(fd, info.st_size), HEAD_BYTES)
            return {"grows": True, "size": head, "sha256": _digest(fd, head)}
        entry = {"size": info.st_size, "mtime_ns": info.st_mtime_ns}
        if known is not None:
            return {**entry, "sha256": known}
        if old and {k: old.get(k) for k in entry} == entry and isinstance(old.get("sha256"), str):
            return {**entry, "sha256": old["sha256"]}
        return {**entry, "sha256": _whole(fd, info)}
    finally:
        os.close(fd)


def holds_as_written(path, entry: dict) -> bool:
    """Whether the file at ``path`` holds what the marker's ``entry`` records (an absent
    file is nothing to protect: True; a file with no record of its content: False)."""
    if not os.path.lexists(path):
        return True
    size, sha = entry.get("size"), entry.get("sha256")
    if not (isinstance(size, int) and isinstance(sha, str)):
        return False
    fd = _open_plain(None, os.fspath(path))
    if fd is None:
        return False
    try:
        info = os.fstat(fd)
        if entry.get("grows"):
            return info.st_size >= size and _digest(fd, size) == sha
        return info.st_size == size and _whole(fd, info) == sha
    finally:
        os.close(fd)


def records(root_fd: int, names, growing: set, old: dict, written: dict | None) -> dict:
    """name -> what each of ``names`` holds now (absent ones: left out); ``growing``:
    those written bit by bit; ``old``: the marker's records so far; ``written``: name ->
    sha256 of what was just written there."""
    from mera_multi_hf.core.outputs.fs import LinkRefused, _walk_to

    written, found = written or {}, {}
    for name in sorted(names):
        grows = name in growing or (old.get(name, {}).get("grows") and name not in written)
        try:
            dir_fd, base = _walk_to(root_fd, name, create=False)
        except (OSError, LinkRefused):
            continue
        try:
            now = record(dir_fd, base, grows=grows, old=old.get(name), known=written.get(name))
            if now:
                found[name] = now
        finally:
            os.close(dir_fd)
    return found
