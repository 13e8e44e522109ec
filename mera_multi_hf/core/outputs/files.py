"""Single files the user named (``--out FILE``) and this project's own cache, under the
same no-link rule."""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
from pathlib import Path

from mera_multi_hf.core import json_read
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.outputs.fs import (
    _DIR,
    _NEW,
    PLAIN_MODE,
    _entry,
    _open_root,
    _plain_file,
    _replace_at,
    _temp,
    _walk_to,
    as_written,
    write_error,
)
from mera_multi_hf.core.outputs.rules import CACHE_WRITERS, KINDS, _real, refusal

# ---- one file the user named (--out FILE) ----


def check_report_file(path, *, kind: str, overwrite: bool, inputs=(), flag: str = "--out"):
    """Refuse (one line) an ``--out FILE`` that :func:`write_report_file` would refuse;
    called before the work, so that nothing done is lost. Reads only."""
    path = Path(os.fsdecode(path))
    why = refusal(path, inputs)
    if why:
        raise MeraError(f"{flag} {path} is {why}; give the name of a new file")
    if os.path.isdir(path) and not os.path.islink(path):
        raise MeraError(
            f"{flag} {path} is a folder: give the report a file name (e.g. "
            f"{flag} {path / (kind + '.json')})"
        )
    if os.path.isdir(path.parent):
        dir_fd = _open_root(path.parent, create=False)
        try:
            current = _entry(dir_fd, path.name)
            if current is not None:
                _check_replaceable(dir_fd, path, current, kind, overwrite, flag)
        finally:
            os.close(dir_fd)
    return path


def write_report_file(
    path, data, *, kind: str, overwrite: bool, inputs=(), flag: str = "--out"
) -> Path:
    """Create the file ``path`` (a JSON report that names its ``kind`` in a ``kind``
    field, see :func:`report_kind`); an existing one is refused, and with ``overwrite``
    replaced only when it is a plain file holding a report of this kind."""
    path = check_report_file(path, kind=kind, overwrite=overwrite, inputs=inputs, flag=flag)
    try:
        os.makedirs(path.parent, exist_ok=True)
        dir_fd = _open_root(path.parent, create=False)
        try:
            current = _entry(dir_fd, path.name)
            if current is not None:  # again, at the moment of writing
                _check_replaceable(dir_fd, path, current, kind, overwrite, flag)
            tmp = _temp(dir_fd, path.name, as_written(data), PLAIN_MODE)
            _replace_at(dir_fd, tmp, path.name)
        finally:
            os.close(dir_fd)
    except OSError as err:
        raise write_error(err, path) from None
    return path


def _check_replaceable(dir_fd, path: Path, current, kind: str, overwrite: bool, flag: str):
    if not _plain_file(current):
        raise MeraError(
            f"{flag} {path} is a link or not a plain file; this tool never "
            "writes through one: give the name of a new file"
        )
    if not overwrite:
        raise MeraError(
            f"{flag} {path} exists; give a new file name, or pass --overwrite to "
            f"replace a report that {KINDS[kind]} wrote"
        )
    fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as fh:
        head = fh.read(64 << 20)
    try:
        doc = json_read.loads(head, str(path))
    except ValueError:
        doc = None
    if not (isinstance(doc, dict) and doc.get("kind") == report_kind(kind)):
        raise MeraError(
            f"{flag} {path} is not a report that {KINDS[kind]} wrote; this tool "
            "never replaces it, even with --overwrite: give a new file name"
        )


def report_kind(kind: str) -> str:
    """The ``kind`` field of a single-file report of ``kind``."""
    return f"mera-multi-hf {kind} report"


# ---- this project's own cache (the same no-link rule, below the cache root) ----


def _cache_parent(target: Path) -> tuple[int, str]:
    from mera_multi_hf.core.paths import cache_root

    root = Path(os.path.abspath(cache_root()))
    rel = os.path.relpath(os.path.abspath(target), root).replace(os.sep, "/")
    if rel.startswith("../") or rel == ".":  # named through the root's real path
        root = Path(os.path.realpath(root))
        rel = os.path.relpath(os.path.realpath(target), root).replace(os.sep, "/")
    if rel.startswith("../") or rel == ".":
        raise ValueError(f"{target} is not inside the cache {root}")
    root_fd = _open_root(root, create=True)
    try:
        return _walk_to(root_fd, rel, create=True)
    finally:
        os.close(root_fd)


@contextlib.contextmanager
def cache_folder(target):
    """Make the cache folder ``target`` whole or not at all: yields a fresh staging folder
    beside it to fill; on success it is renamed into place (when a concurrent build won,
    its copy stays: the same recipe gives the same files)."""
    target = Path(target)
    dir_fd, base = _cache_parent(target)
    stage = f".{base}.{secrets.token_hex(4)}.tmp"
    try:
        os.mkdir(stage, 0o777, dir_fd=dir_fd)
        try:
            yield target.parent / stage
            if _entry(dir_fd, base) is None:
                os.rename(stage, base, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        finally:
            if _entry(dir_fd, stage) is not None:
                shutil.rmtree(stage, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def cache_file(target, data) -> None:
    """Write one file of the cache at once (a concurrent reader sees all or nothing)."""
    dir_fd, base = _cache_parent(Path(target))
    try:
        _replace_at(dir_fd, _temp(dir_fd, base, as_written(data), PLAIN_MODE), base)
    finally:
        os.close(dir_fd)


def stage_file(folder, name: str, data) -> Path:
    """Add one new file to a staging folder (beside what a library wrote there)."""
    fd = os.open(folder, _DIR)
    try:
        out = os.open(name, _NEW, PLAIN_MODE, dir_fd=fd)
        with os.fdopen(out, "wb") as fh:
            fh.write(as_written(data))
    finally:
        os.close(fd)
    return Path(folder) / name


@contextlib.contextmanager
def cache_lock(target):
    """Hold the cache's lock file ``target`` (opened without following a link; waits for
    a concurrent holder). While ``<entry>.lock`` is held, the cache entry ``<entry>`` may
    be written as an output folder (a raw folder's export): no other folder inside the
    cache ever is."""
    dir_fd, base = _cache_parent(Path(target))
    try:
        fd = os.open(
            base, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, PLAIN_MODE, dir_fd=dir_fd
        )
    finally:
        os.close(dir_fd)
    entry = _real(target)[: -len(".lock")] if str(target).endswith(".lock") else None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        CACHE_WRITERS.add(entry)  # <entry>.lock held: the entry may be (re)made
        yield
    finally:
        CACHE_WRITERS.discard(entry)
        os.close(fd)
