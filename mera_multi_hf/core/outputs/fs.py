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
PRIVATE_FOLDER_MODE = 0o700  # a folder of files that hold gold answers
SYNC_EACH_UP_TO = 64  # a set of more files is flushed by one sync(2), not an fsync each


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


def _temp_name(base: str) -> str:
    """A new temporary's name beside ``base`` (listed in the marker before it is made)."""
    return f".{base}.{secrets.token_hex(4)}.partial"


def _temp_for(name: str) -> str:
    """A new temporary's name beside the file ``name`` (a path inside the folder)."""
    folder, _, base = name.rpartition("/")
    return f"{folder}/{_temp_name(base)}" if folder else _temp_name(base)


def _temp(dir_fd: int, base: str, data: bytes, mode: int, name=None, sync: bool = True) -> str:
    """``data`` in a new temporary beside ``base`` (``name``, or a new one) with the
    permission bits ``mode`` (the plain mode: as the umask allows), flushed (``sync``;
    else the caller flushes the set); returns its name."""
    tmp = name or _temp_name(base)
    fd = os.open(tmp, _NEW, mode, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode != PLAIN_MODE:  # kept as it was, or private: exactly, whatever the umask
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    return tmp


def _flush(staged: dict) -> None:
    """Flush the temporaries of a set (``staged``: as :func:`_drop` reads it) to disk
    before any is renamed: each in a thread, at once (the file system commits concurrent
    flushes together: six files in about half the time of one after another)."""
    made = [(dir_fd, tmp) for dir_fd, tmp, src_fd in staged.values() if src_fd is None]
    if len(made) > SYNC_EACH_UP_TO:  # a big set: one sync(2) rather than an fsync each
        os.sync()
        return
    if len(made) < 2:
        for dir_fd, tmp in made:
            _fsync_at(dir_fd, tmp)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(8, len(made)), thread_name_prefix="mera-fsync") as pool:
        for done in [pool.submit(_fsync_at, dir_fd, tmp) for dir_fd, tmp in made]:
            done.result()  # an error is raised here


def _fsync_at(dir_fd: int, name: str) -> None:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _drop(staged: dict) -> None:
    """Remove the temporaries of a set that were made and not moved (``staged``: name ->
    (folder descriptor, temporary, None), or a staging folder's file: left there)."""
    for dir_fd, tmp, src_fd in staged.values():
        if src_fd is None:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
    staged.clear()


def _write_in_place(dir_fd: int, base: str, data: bytes) -> None:
    """Write a plain file (made if missing) in place, never through a link or into a FIFO."""
    current = _entry(dir_fd, base)
    if current is not None and not _plain_file(current):
        raise LinkRefused(f"{base} is a link or not a plain file; this tool never replaces one")
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(base, flags, PLAIN_MODE, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as fh:
        if not _plain_file(os.fstat(fd)):  # made a moment ago by someone else
            raise LinkRefused(f"{base} is a link or not a plain file; this tool never replaces one")
        fh.truncate(0)
        fh.write(data)
        fh.flush()
        os.fsync(fd)


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


def _listed(name: str, names) -> bool:
    """Whether ``names`` lists ``name``, itself or a folder holding it ("folder/")."""
    return name in names or any(n.endswith("/") and name.startswith(n) for n in names)


def _close(*fds) -> None:
    for fd in fds:
        if fd is not None:
            os.close(fd)


def _set_mode(dir_fd: int, base: str, mode: int) -> None:
    fd = os.open(base, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _mode_for(dir_fd: int, base: str, private: bool) -> int:
    """A rewritten file keeps its permission bits (a private run's page stays 0600); a
    file holding gold answers is 0600; a new one is as the umask allows."""
    if private:
        return PRIVATE_MODE
    current = _entry(dir_fd, base)
    return stat.S_IMODE(current.st_mode) if _plain_file(current) else PLAIN_MODE


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
