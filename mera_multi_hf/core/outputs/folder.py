"""An output folder: claimed, locked, written as one set of files of one kind."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import shutil
import stat
from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.hashing import sha256_bytes
from mera_multi_hf.core.outputs.content import record, records
from mera_multi_hf.core.outputs.fs import (
    LOCK,
    MARKER,
    OWN,
    PLAIN_MODE,
    PRIVATE_FOLDER_MODE,
    LinkRefused,
    _close,
    _drop,
    _entry,
    _flush,
    _listed,
    _mode_for,
    _open_root,
    _plain_file,
    _replace_at,
    _set_mode,
    _temp,
    _temp_for,
    _temp_name,
    _unlink_at,
    _unlink_at_path,
    _utf8,
    _walk_to,
    _write_in_place,
    as_written,
    shown,
    write_error,
)
from mera_multi_hf.core.outputs.rules import (
    KINDS,
    MARKER_FORMAT,
    STAGING_PREFIX,
    SUGGESTED_SUBFOLDER,
    _real,
    entries,
    folder_kind,
    identity,
    marker_temp,
    read_marker,
    refusal,
    temporaries,
    trusted_listing,
)


class OutputFolder:
    """A folder this tool writes as one ``kind`` of output (see the module docstring).

    ``flag``: how the user named it (``--out``); ``inputs``: what the command reads,
    which the output may not touch."""

    def __init__(self, path, *, kind: str, flag: str = "--out", inputs=()):
        if kind not in KINDS:
            raise ValueError(f"unknown kind of output {kind!r}")
        self.path, self.kind, self.flag = Path(os.fsdecode(path)), kind, flag
        self.inputs = [i for i in inputs if i]
        self.claimed, self.stages = set(), set()  # stages: staging folders open now
        self.growing: set[str] = set()  # claimed to be written bit by bit (sample logs)
        self.made: list[Path] = []  # folders that claim() created, deepest first
        self._lock_fd = self._root_fd = None

    def __repr__(self) -> str:
        return f"OutputFolder({str(self.path)!r}, kind={self.kind!r})"

    # ---- what is ours ----

    def listing(self) -> dict[str, str]:
        return trusted_listing(self.path)

    def owned(self) -> set[str]:
        """The names that the trusted marker lists as this folder's kind."""
        return {n for n, k in self.listing().items() if k == self.kind}

    def info(self) -> dict:
        """The extra fields of the marker (what the export was), trusted or not."""
        doc = read_marker(self.path)
        return doc.get("info") if isinstance(doc.get("info"), dict) else {}

    def _staging_names(self) -> list[str]:
        names = read_marker(self.path).get("staging")
        return [
            n
            for n in names or []
            if isinstance(n, str) and n.startswith(STAGING_PREFIX) and "/" not in n
        ]

    def foreign(self, limit: int = 3) -> list[str]:
        """Up to ``limit`` entries that are not this kind's listed plain files, each
        with what it is. Nested output folders (their own trusted marker) are left out:
        nothing here ever touches them."""
        listing = self.listing()
        ours = {n for n, k in listing.items() if k == self.kind} | temporaries(self.path)
        skip, found = set(self._staging_names()), []
        for dirpath, dirnames, filenames in os.walk(self.path):
            rel = os.path.relpath(dirpath, self.path)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for name in list(dirnames):
                full = os.path.join(dirpath, name)
                if os.path.islink(full):
                    filenames.append(name)
                if os.path.islink(full) or (not prefix and name in skip) or trusted_listing(full):
                    dirnames.remove(name)
            for name in sorted(filenames):
                what = self._what(prefix + name, os.path.join(dirpath, name), listing, ours)
                if what:
                    found.append(what)
                    if len(found) >= limit:
                        return found
        return found

    def _what(self, name: str, full: str, listing: dict, ours: set) -> str | None:
        """None for this kind's own entry; else how a refusal names it."""
        if (not name.count("/") and name in OWN) or (name in ours and name not in listing):
            return None  # the tool's own, or a temporary its marker lists
        info = os.lstat(full)
        if stat.S_ISLNK(info.st_mode):
            return f"{name} (a symbolic link)"
        if name not in listing:
            return f"{name} (not written by this tool)"
        if listing[name] != self.kind:
            return f"{name} (written by {KINDS[listing[name]]})"
        return None if _plain_file(info) else f"{name} (not a plain file)"

    # ---- claiming ----

    def check(self) -> None:
        """Refuse (MeraError, one line) a folder that may never be written, or one that
        holds a foreign entry. Reads only."""
        if not _utf8(str(self.path)):  # it would be recorded in results.json and printed
            raise MeraError(
                f"{self.flag} {shown(self.path)}: the name is not valid UTF-8; "
                "choose a folder whose name is"
            )
        why = refusal(self.path, self.inputs)
        if why:
            raise MeraError(
                f"{self.flag} {self.path} is {why}; this tool never writes "
                f"there: {self._elsewhere()}"
            )
        if os.path.islink(self.path):
            raise MeraError(f"{self.flag} {self.path} is a symbolic link; give the real folder")
        if os.path.lexists(self.path) and not self.path.is_dir():
            raise MeraError(f"{self.flag} {self.path} is a file, not a folder")
        found = self.foreign() if self.path.is_dir() else []
        if found:
            raise MeraError(
                f"{self.flag} {self.path} holds {', '.join(found)}: {KINDS[self.kind]} writes "
                "only into a new or empty folder, or one holding nothing but its own earlier "
                f"outputs, with or without --overwrite; nothing was touched: {self._elsewhere()}"
            )

    def _elsewhere(self) -> str:
        if folder_kind(self.path) not in (None, self.kind):  # a folder of its own inside
            return f"write to {self.path / SUGGESTED_SUBFOLDER[self.kind]} instead"
        return "choose a new folder"

    def claim(self, names=(), lock: bool = True) -> OutputFolder:
        """Check the folder, create it, take its lock and list ``names`` (files that
        will be written bit by bit, such as sample logs) in its marker."""
        self.check()
        probe = self.path.absolute()
        while not os.path.lexists(probe):
            self.made.append(probe)
            probe = probe.parent
        try:
            self._root(create=True)
            if lock:
                self.lock()
            self.check()  # again, now that no other run can change it
            self._clear_leftovers()
            self.claimed |= set(names)
            self.growing |= set(names)
            if names:
                self._write_marker(self.owned() | set(names))
        except OSError as err:
            self.close(failed=True)
            raise write_error(err, self.path) from None
        except BaseException:
            self.close(failed=True)  # the folders claim() made go again
            raise
        return self

    def _root(self, create: bool = False) -> int:
        if self._root_fd is None:
            self._root_fd = _open_root(self.path, create)
        return self._root_fd

    def lock(self) -> None:
        try:
            fd = os.open(
                LOCK,
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                PLAIN_MODE,
                dir_fd=self._root(),
            )
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise MeraError(f"{self.flag} {self.path}: {LOCK} is a link; remove it") from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise MeraError(f"{self.flag} {self.path}: {LOCK} is not a file; remove it")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise MeraError(
                f"{self.flag} {self.path} is in use by another mera-multi run; wait "
                "for it to finish, or choose another folder"
            ) from None
        self._lock_fd = fd

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor drops the flock
            self._lock_fd = None

    def close(self, failed: bool = False) -> None:
        """Release the lock; after a failure, take back the folders that claim() made
        while they hold nothing but the lock and marker."""
        self.release()
        if self._root_fd is not None:
            os.close(self._root_fd)
            self._root_fd = None
        if not failed:
            return
        for folder in self.made:
            try:
                if folder == self.path.absolute() and set(os.listdir(folder)) <= set(OWN):
                    for name in OWN:
                        _unlink_at_path(folder, name)
                os.rmdir(folder)
            except OSError:
                return

    def __enter__(self) -> OutputFolder:
        return self

    def __exit__(self, kind, *exc) -> None:
        self.close(failed=kind is not None)

    def _clear_leftovers(self) -> None:
        """The temporaries and staging folders that a killed run of ours left behind:
        only those its marker lists, whatever else is named like them."""
        listed = temporaries(self.path)
        for name in sorted(listed):
            try:
                dir_fd, base = _walk_to(self._root(), name, False)
            except (OSError, LinkRefused):
                continue
            try:
                _unlink_at(dir_fd, base)
            finally:
                os.close(dir_fd)
        for name in self._staging_names():
            self._remove_tree(name)
        if self._staging_names() or listed - {marker_temp(read_marker(self.path))}:
            self._write_marker(self.owned(), staging=[])

    def _remove_tree(self, name: str) -> None:
        """A staging folder of ours, with everything in it (never through a link)."""
        info = _entry(self._root(), name)
        if info is not None and stat.S_ISDIR(info.st_mode):
            shutil.rmtree(name, dir_fd=self._root())

    # ---- writing ----

    def _write_marker(
        self, names, info: dict | None = None, staging=None, temps=(), written=None
    ) -> None:
        """The marker listing ``names`` as this kind's, each with what it holds now;
        ``temps``: the temporaries about to be made; ``written``: name -> sha256 of what
        was just written there."""
        current = read_marker(self.path)
        content = records(self._root(), names, self.growing, entries(current), written)
        doc = {
            "created_by": "mera-multi-hf",
            "format": MARKER_FORMAT,
            "folder": _real(self.path),
            "identity": identity(self.path),
            "files": {n: self.kind for n in sorted(names)},
            "content": content,
            "staging": self._staging_names() if staging is None else staging,
            "temporaries": sorted(temps),
            "next_temp": _temp_name(MARKER),
            "info": info if info is not None else self.info(),
        }
        text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
        try:
            self._replace_marker(text.encode("utf-8"), marker_temp(current))
        except OSError as err:  # name the folder a full disk stopped
            raise write_error(err, self.path / MARKER) from None

    def _replace_marker(self, data: bytes, tmp: str | None) -> None:
        """Through the temporary the marker named (a kill leaves only a listed file); the
        first marker of a folder is written in place (torn, it lists nothing: as before)."""
        root = self._root()
        if tmp is not None:
            _unlink_at(root, tmp)  # a killed rewrite's
            _replace_at(root, _temp(root, MARKER, data, PLAIN_MODE, tmp), MARKER)
        else:
            _write_in_place(root, MARKER, data)

    @contextlib.contextmanager
    def staging(self):
        """A fresh folder inside this one for libraries that write by path; listed in the
        marker first (a rerun removes what a kill left), removed after."""
        name = STAGING_PREFIX + secrets.token_hex(4)
        self._write_marker(self.owned() | self.claimed, staging=self._staging_names() + [name])
        os.mkdir(name, 0o700, dir_fd=self._root())
        self.stages.add(name)
        try:
            yield self.path / name
        finally:
            self.stages.discard(name)
            self._remove_tree(name)
            self._write_marker(
                self.owned() | self.claimed, staging=[n for n in self._staging_names() if n != name]
            )

    def write_set(
        self, files: dict, *, index: str | None = None, info: dict | None = None, private=()
    ) -> dict[str, Path]:
        """Write ``files`` (name -> bytes, text, or a finished file in a staging folder of
        this one) as one set; ``private``: names that hold gold answers (0600; "folder/":
        its files, and it 0700). The marker lists the old and new names first; every
        temporary is written (a failure here changes no output); the old ``index`` goes,
        each file is renamed into place, files of an earlier set that this one does not
        make (and no claim keeps) are removed, ``index`` comes last. Returns name -> path."""
        self.check()
        owned, names = self.owned(), set(files)
        keep = names | self.claimed
        temps = {n: _temp_for(n) for n, data in files.items() if not isinstance(data, Path)}
        # each folder opened once (a page's thousands of media share one); the files are
        # flushed together before the renames (a big set by one sync(2))
        staged, written, dirs = {}, {}, {}
        try:  # a kill leaves only what the marker lists, temporaries included
            self._write_marker(owned | keep, info, temps=temps.values())
            for name, data in files.items():
                staged[name], written[name] = self._stage(
                    name, data, _listed(name, private), temps.get(name), dirs, sync=False
                )
            _flush(staged)
            if index:
                self.remove(index)
            for name in sorted(names - {index}) + ([index] if index in names else []):
                dir_fd, tmp, src_fd = staged.pop(name)
                _replace_at(dir_fd, tmp, name.rsplit("/", 1)[-1], src_fd)
            for stale in sorted(owned - keep):
                self.remove(stale)
            self._write_marker(keep, info, written=written)
        except OSError as err:
            raise write_error(err, self.path) from None
        finally:
            _drop(staged)
            _close(*dirs.values())
        return {name: self.path / name for name in files}

    def _folder(self, name: str, dirs: dict, create: bool) -> tuple[int, str]:
        """(descriptor of the folder holding ``name``, kept open in ``dirs``, its base)."""
        folder, _, base = name.rpartition("/")
        if folder not in dirs:
            dirs[folder] = _walk_to(self._root(), name, create)[0]
        return dirs[folder], base

    def _stage(self, name: str, data, private: bool, tmp: str | None, dirs: dict, sync=True):
        """((the target folder's descriptor, the temporary's name, the descriptor of the
        folder it is in when that is a staging folder), the sha256 of what it holds).
        The file keeps the mode of the one it replaces (0600 when ``private``)."""
        dir_fd, base = self._folder(name, dirs, create=True)
        if private and "/" in name:
            os.fchmod(dir_fd, PRIVATE_FOLDER_MODE)  # its folder is closed too
        mode = _mode_for(dir_fd, base, private)
        if not isinstance(data, Path):
            data = as_written(data)
            try:
                temp = _temp(dir_fd, base, data, mode, tmp and tmp.rpartition("/")[2], sync)
            except OSError as err:  # name the file a full disk stopped
                raise OSError(err.errno, err.strerror, str(self.path / name)) from None
            return (dir_fd, temp, None), sha256_bytes(data)
        src_fd, src = self._folder(self._staged_name(data), dirs, create=False)
        if mode != PLAIN_MODE:
            _set_mode(src_fd, src, mode)
        return (dir_fd, src, src_fd), record(src_fd, src, grows=False, old=None)["sha256"]

    def _staged_name(self, path: Path) -> str:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(self.path))
        rel = rel.replace(os.sep, "/")
        if rel.split("/")[0] not in self.stages:  # not the marker read again per file
            raise ValueError(f"{path} is not in a staging folder of {self.path}")
        return rel

    def put(self, name: str, data, private: bool = False) -> Path:
        """Write one file (listed, and kept by later sets of this command) and touch
        nothing else."""
        self.claimed.add(name)
        self.growing.discard(name)
        tmp, dirs = _temp_for(name), {}
        self._write_marker(self.owned() | {name}, temps=[tmp])
        try:
            (dir_fd, tmp, _), sha = self._stage(name, data, private, tmp, dirs)
            _replace_at(dir_fd, tmp, name.rsplit("/", 1)[-1])
        except OSError as err:
            raise write_error(err, self.path / name) from None
        finally:
            _close(*dirs.values())
        self._write_marker(self.owned() | {name}, written={name: sha})
        return self.path / name

    def remove(self, name: str) -> None:
        """Remove one of this kind's listed files (a plain file; never a link)."""
        if name not in self.owned() | self.claimed:
            return
        try:
            dir_fd, base = _walk_to(self._root(), name, create=False)
        except (FileNotFoundError, LinkRefused):
            return
        try:
            _unlink_at(dir_fd, base)
        finally:
            os.close(dir_fd)

    def open_append(self, name: str):
        """A claimed file opened to append text (made if missing; a link, a folder or a
        file with other hard links there is refused)."""
        return os.fdopen(
            self._open_listed(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a", encoding="utf-8"
        )

    def cut_torn_tail(self, name: str) -> None:
        """Drop a partial last line so that the next record starts on a line of its own."""
        try:
            fd = self._open_listed(name, os.O_RDWR)
        except FileNotFoundError:
            return
        with os.fdopen(fd, "rb+") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size == 0:
                return
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) == b"\n":
                return
            fh.seek(0)
            fh.truncate(fh.read().rfind(b"\n") + 1)

    def _open_listed(self, name: str, flags: int) -> int:
        if name not in self.owned() | self.claimed:
            raise MeraError(
                f"{self.path / name} is not listed in the output folder's "
                "marker; it is not this run's to write"
            )
        dir_fd, base = _walk_to(self._root(), name, create=bool(flags & os.O_CREAT))
        try:
            fd = os.open(base, flags | os.O_NOFOLLOW | os.O_CLOEXEC, PLAIN_MODE, dir_fd=dir_fd)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise LinkRefused(
                    f"{self.path / name} is a symbolic link; this tool never writes through one"
                ) from None
            raise
        finally:
            os.close(dir_fd)
        if not _plain_file(os.fstat(fd)):
            os.close(fd)
            raise LinkRefused(
                f"{self.path / name} is not a plain file with one link; this "
                "tool never writes through one"
            )
        return fd


def add_files(path, files, *, kind, flag="--out", inputs=(), private=(), replaces=()):
    """Write ``files`` into ``path`` beside this kind's earlier files, which all stay (a
    report beside another, the page ``view`` adds) but in ``replaces`` ("media/"): whole;
    ``files`` may be a function of a staging folder that makes them there (a page's media)."""
    folder = OutputFolder(path, kind=kind, flag=flag, inputs=inputs)
    with folder.claim():
        folder.claimed |= {n for n in folder.owned() if not _listed(n, replaces)}
        with folder.staging() if callable(files) else contextlib.nullcontext() as stage:
            return folder.write_set(files(stage) if stage else files, private=private)
