"""Safe reading of one file of a dataset folder: a regular file whose resolved path lies
inside the folder (symbolic links leading out, FIFOs, devices and hard-linked files are
refused before anything is opened), under a size limit."""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path

from mera_multi_hf.core.input_files import InputFileError, read_bytes
from mera_multi_hf.core.input_files import kind_of as _file_kind

# What the reader reads at most (hostile or broken folders must not exhaust memory);
# what media may declare (pixels, rates, durations) is in limits.Limits.
MAX_MEDIA_BYTES = 512 * 2**20  # one media file
MAX_JSON_BYTES = 2 * 2**30  # one JSON file


class FieldError(ValueError):
    """A bad value in one field of a record; the reader turns it into a Problem."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


@functools.lru_cache(maxsize=64)
def _root_paths(root: str) -> tuple[str, str]:
    """A dataset folder as written (absolute) and resolved: once per folder, not per file."""
    return os.path.abspath(root), os.path.realpath(root)


@functools.lru_cache(maxsize=1024)
def _real_dir(path: str) -> str:
    """A folder's resolved path, once per folder (RawDataset clears it for each read)."""
    return os.path.realpath(path)


def forget_resolved_paths() -> None:
    _root_paths.cache_clear()
    _real_dir.cache_clear()


def read_inside(root: str | Path, relative: str, limit: int) -> bytes:
    """The bytes of ``relative`` under ``root``, read only if it is safe to.

    Refused (FieldError with field ""): a NUL byte, a path that leaves the folder as
    written or once symbolic links are resolved, anything but a regular file (checked
    with stat before opening, so a FIFO never blocks), a hard-linked file (as symbolic
    links leading out are: its other name may be anywhere), a file over ``limit`` bytes.
    The file is then read through the one input reader (core/input_files), which checks
    it again on the descriptor (a file swapped after the stat is refused).
    """
    real, info, link = _resolved_inside(root, relative)
    _check_stat(real, relative, info, link, limit)
    try:
        return read_bytes(real, limit, one_name=True)
    except InputFileError as err:
        raise FieldError("", f"{relative!r}: {err.reason}") from None


def _resolved_inside(root: str | Path, relative: str) -> tuple[str, os.stat_result, bool]:
    """(the resolved path, its lstat, whether it is a symbolic link) of ``relative``,
    which must lie inside ``root`` both as written and once links are resolved."""
    if "\0" in relative:
        raise FieldError("", f"path {relative!r} contains a NUL byte")
    root_abs, root_real = _root_paths(str(root))
    lexical = os.path.normpath(os.path.join(root_abs, relative))
    if not lexical.startswith(os.path.join(root_abs, "")):
        raise FieldError("", f"path {relative!r} escapes the dataset folder")
    try:
        # the file's own link is checked here, its folders once per read (_real_dir)
        info = os.lstat(lexical)
        link = stat.S_ISLNK(info.st_mode)
    except FileNotFoundError:
        raise FieldError("", f"missing file {relative!r}") from None
    except OSError as err:
        raise FieldError("", f"cannot read {relative!r}: {err.strerror}") from None
    real = (
        os.path.realpath(lexical)
        if link
        else os.path.join(_real_dir(os.path.dirname(lexical)), os.path.basename(lexical))
    )
    if not real.startswith(os.path.join(root_real, "")):
        raise FieldError(
            "",
            f"{relative!r} is a symbolic link (or lies under one) that leads "
            "outside the dataset folder",
        )
    return real, info, link


def _check_stat(real: str, relative: str, info: os.stat_result, link: bool, limit: int) -> None:
    """``real`` is a regular file with one name, within ``limit`` bytes (a link's target
    is stat-ed here; else ``info`` is the file's own): each refusal in the folder's words."""
    try:
        if link:  # else the lstat above is the file's own
            info = os.stat(real)
        if not stat.S_ISREG(info.st_mode):
            raise FieldError("", f"{relative!r} is {_file_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise FieldError(
                "", f"{relative!r} is {info.st_size} bytes, above the limit of {limit}"
            )
        if info.st_nlink > 1:  # another name of the same file may lie anywhere on the disk
            raise FieldError(
                "",
                f"{relative!r} is hard-linked ({info.st_nlink} names for one "
                "file): links are refused; copy the file into the folder",
            )
    except FileNotFoundError:
        raise FieldError("", f"missing file {relative!r}") from None
    except OSError as err:
        raise FieldError("", f"cannot read {relative!r}: {err.strerror}") from None
