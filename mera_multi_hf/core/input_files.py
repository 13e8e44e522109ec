"""The one reader of files this tool did not create: predictions and their folders,
results files, sample logs, manifests and markers, model configs, media given by path.

Whatever is named, or found inside a folder given as input, is opened only when it is a
regular file: a FIFO, a socket, a device, a folder or a loop of symbolic links is refused
in one :class:`InputFileError` line naming it, BEFORE anything can block (the path is
stat-ed first, then opened with ``O_NONBLOCK`` and checked again on the descriptor, so a
file swapped in between is refused too). The tool's own files are written through
``core/outputs`` (tests/test_input_boundary.py walks the code for reads around this one).
Self-contained but for ``errors``: the judge's Space folder carries a copy.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from mera_multi_hf.core.errors import MeraError

_OPEN = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class InputFileError(MeraError, OSError):
    """A file that is not read: its path and why. An OSError too (``errno`` kept), so that
    a caller that skips an unreadable optional file skips this one as well."""

    def __init__(self, path, reason: str, code: int | None = None):
        OSError.__init__(self, code, reason)
        self.path, self.reason = os.fsdecode(path), reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"

    def __reduce__(self):  # across worker processes, as it was raised
        return type(self), (self.path, self.reason, self.errno)


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _refusal(path, err: OSError) -> InputFileError:
    reasons = {
        errno.ENOENT: "not found",
        errno.ELOOP: "a loop of symbolic links",
        errno.EACCES: "permission denied",
        errno.ENOTDIR: "not found (a part of the path is not a folder)",
    }
    return InputFileError(path, reasons.get(err.errno, err.strerror or str(err)), err.errno)


def _checked(path, info: os.stat_result, one_name: bool) -> os.stat_result:
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(path, f"{kind_of(info.st_mode)}, not a regular file")
    if one_name and info.st_nlink > 1:  # its other name may lie anywhere on the disk
        raise InputFileError(path, f"hard-linked ({info.st_nlink} names for one file)")
    return info


def check_regular(path, *, follow_links: bool = True, one_name: bool = False) -> os.stat_result:
    """The stat of ``path`` when it is a regular file (InputFileError otherwise); nothing
    is opened. ``follow_links=False``: a symbolic link is refused too; ``one_name``: a
    hard-linked file too."""
    try:
        info = os.stat(path) if follow_links else os.lstat(path)
    except OSError as err:
        raise _refusal(path, err) from None
    return _checked(path, info, one_name)


def _open_checked(path, follow_links: bool, one_name: bool) -> tuple[int, os.stat_result]:
    """A descriptor of ``path`` and its stat, once it is a regular file: checked before
    the open (nothing blocks) and again on the descriptor (nothing swapped)."""
    check_regular(path, follow_links=follow_links, one_name=one_name)
    try:
        fd = os.open(path, _OPEN if follow_links else _OPEN | os.O_NOFOLLOW)
    except OSError as err:
        raise _refusal(path, err) from None
    try:
        return fd, _checked(path, os.fstat(fd), one_name)
    except InputFileError:
        os.close(fd)
        raise


def open_binary(path, *, follow_links: bool = True, one_name: bool = False) -> BinaryIO:
    """``path`` opened for reading (binary, buffered) once it is a regular file, checked
    before the open (nothing blocks) and again on the descriptor (nothing swapped)."""
    fd, _ = _open_checked(path, follow_links, one_name)
    return os.fdopen(fd, "rb")


def read_bytes(
    path, limit: int | None = None, *, follow_links: bool = True, one_name: bool = False
) -> bytes:
    """The bytes of a regular file; more than ``limit`` of them is refused (a buffer of
    the file's size is read, not of the limit). Read from the descriptor itself: a
    build reads every media file here, and a buffered file object cost more than the
    read."""
    fd, info = _open_checked(path, follow_links, one_name)
    with os.fdopen(fd, "rb", buffering=0) as raw:  # closes the descriptor
        # the stat's size and one more: a file that did not grow ends in one read
        data = _read_to(raw, info.st_size + 1, limit)
    if limit is not None and len(data) > limit:
        raise InputFileError(path, f"larger than the limit of {limit} bytes")
    return data


def _read_to(raw, first: int, limit: int | None) -> bytes:
    """What is left of ``raw`` (asking for ``first`` bytes at first), to the end or to
    one byte past ``limit``."""
    cap = None if limit is None else limit + 1
    parts, got, ask = [], 0, first
    while cap is None or got < cap:
        part = raw.read(ask if cap is None else min(ask, cap - got))
        if not part:
            break
        parts.append(part)
        got += len(part)
        ask = max(first, 2**20)  # it grew since the stat: on in blocks
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_text(path, limit: int | None = None, *, errors: str = "strict") -> str:
    """The UTF-8 text of a regular file (``errors`` as ``bytes.decode`` takes it)."""
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as err:
        raise InputFileError(path, f"not UTF-8 text ({err.reason} at byte {err.start})") from None


def files_in(folder, pattern: str) -> list[Path]:
    """The entries of ``folder`` that match ``pattern``, sorted, each a regular file
    (an entry that is not, a FIFO or a link loop among them, is refused, never skipped)."""
    files = sorted(Path(folder).glob(pattern))
    for file in files:
        check_regular(file)
    return files
