"""The primitives of the boundary: every open, rename and removal below a named folder,
each step relative to its parent's descriptor and never through a link."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
from pathlib import Path

from mera_multi_hf.core.errors import MeraError

MARKER = ".mera-multi-outputs.json"
LOCK = ".mera-multi.lock"
OWN = (MARKER, LOCK)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
PRIVATE_MODE, PLAIN_MODE = 0o600, 0o666  # the plain mode is narrowed by the umask


def write_error(err: OSError, path=None) -> MeraError:
    """One line for a failed write: the path and the reason, and that nothing changed."""
    where = path if path is not None and not err.filename else err.filename or "a file"
    return MeraError(
        f"cannot write {where}: {err.strerror or err}; previous outputs "
        "are left as they were (free some space or fix the permissions, then "
        "rerun)"
    )


class LinkRefused(MeraError):
    """A link (or a non-regular file) where this tool would write."""


def _open_root(path: Path, create: bool) -> int:
    """The named folder's descriptor (the path typed may pass through links; the folder
    itself may not be one)."""
    if create:
        os.makedirs(path, exist_ok=True)
    if os.path.islink(path):
        raise LinkRefused(f"{path} is a symbolic link; give the real folder")
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _walk_to(root_fd: int, name: str, create: bool) -> tuple[int, str]:
    """(descriptor of the folder holding ``name``, its base name): each folder below the
    root opened without following a link, made when ``create``. The caller closes it."""
    parts = name.split("/")
    if not _safe_name(name):
        raise LinkRefused(f"{name!r} is not a name inside the folder")
    fd = os.dup(root_fd)
    try:
        for part in parts[:-1]:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
            try:
                step = os.open(part, _DIR, dir_fd=fd)
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise LinkRefused(
                        f"{part}/ in {name} is a symbolic link or not a folder; "
                        "this tool never writes through one"
                    ) from None
                raise
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _entry(dir_fd: int, base: str) -> os.stat_result | None:
    try:
        return os.stat(base, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _plain_file(info: os.stat_result | None) -> bool:
    return info is not None and stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def _temp(dir_fd: int, base: str, data: bytes, mode: int) -> str:
    """``data`` in a new flushed temporary beside ``base``; returns its name."""
    tmp = f".{base}.{secrets.token_hex(4)}.partial"
    fd = os.open(tmp, _NEW, mode, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    return tmp


def _replace_at(dir_fd: int, tmp: str, base: str, src_fd: int | None = None) -> None:
    """Rename ``tmp`` over ``base``; an entry there that is not a plain file is refused."""
    current = _entry(dir_fd, base)
    if current is not None and not _plain_file(current):
        raise LinkRefused(f"{base} is a link or not a plain file; this tool never replaces one")
    os.replace(tmp, base, src_dir_fd=dir_fd if src_fd is None else src_fd, dst_dir_fd=dir_fd)


def _unlink_at(dir_fd: int, base: str) -> None:
    """Remove a plain file (never a folder, never what a link points to; a link or a
    file with other hard links is left alone: it is not this tool's)."""
    if _plain_file(_entry(dir_fd, base)):
        os.unlink(base, dir_fd=dir_fd)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(path) -> str:
    """A path as it can be printed whatever its bytes (undecodable ones as \\xNN)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def as_written(data) -> bytes:
    """What a file holds: text is masked first (a secret the run knows never reaches a
    file); bytes are data (sample logs, pictures, ZIPs) and are written as they are."""
    if isinstance(data, str):
        from mera_multi_hf.core.masking import mask_secrets

        return mask_secrets(data).encode("utf-8")
    return bytes(data)


def _safe_name(name) -> bool:
    return (
        isinstance(name, str)
        and bool(name)
        and not os.path.isabs(name)
        and ".." not in name.split("/")
        and "" not in name.split("/")
        and "." not in name.split("/")
        and name not in OWN
    )


def _leftover(name: str, ours: set[str]) -> bool:
    """``.<file>.<random>.partial``: a temporary of one of ``ours``."""
    folder, base = os.path.split(name)
    if not (base.startswith(".") and base.endswith(".partial")):
        return False
    stem = base[1 : -len(".partial")].rpartition(".")[0]
    return os.path.join(folder, stem) in ours


def _close(*fds) -> None:
    for fd in fds:
        if fd is not None:
            os.close(fd)


def _private_mode(dir_fd: int, base: str) -> None:
    fd = os.open(base, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.fchmod(fd, PRIVATE_MODE)
    finally:
        os.close(fd)


def _unlink_at_path(folder, base: str) -> None:
    fd = os.open(folder, _DIR)
    try:
        _unlink_at(fd, base)
    finally:
        os.close(fd)


def discard_stdout() -> None:
    """Point this process's stdout at the null device: its reader has gone (a closed
    pipe), and whatever is still printed, or flushed at exit, must go nowhere."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
