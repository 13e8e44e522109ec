"""The one ownership rule for every folder the tool writes (build, evaluate, score,
metrics export, judge train).

- A folder's marker (``.mera-multi-outputs.json``) lists the files that this tool wrote
  there; it is trusted only when it names this very folder (a marker copied or left
  elsewhere grants nothing). Only files it lists are ever replaced or removed.
- A folder holding anything the marker does not list is refused, unless ``--overwrite``:
  then same-named files are replaced and every other file is left alone. No folder is
  ever removed.
- Refused always: the raw (input) folders, anything inside them or holding them; the
  current directory, the home directory and their parents; the package's own tree; the
  cache roots; the filesystem root.
- One lock per folder: a second run on it stops at once.
- A set of files is written whole: every file goes to a temporary first (a full disk or
  a read-only folder stops it there, the previous outputs untouched), then each is
  renamed into place, the index file (results.json, README.md) last.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .errors import MeraError

MARKER = ".mera-multi-outputs.json"
LOCK = ".mera-multi.lock"
OWN = (MARKER, LOCK)


def write_error(err: OSError, path=None) -> MeraError:
    """One line for a failed write: the path and the reason, and that nothing changed."""
    where = err.filename or path or "a file"
    return MeraError(f"cannot write {where}: {err.strerror or err}; previous outputs "
                     "are left as they were (free some space or fix the permissions, then "
                     "rerun)")


def _real(path) -> str:
    return os.path.realpath(os.path.expanduser(str(path)))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(os.path.join(folder, ""))


def _cache_roots() -> list[tuple[str, bool]]:
    """(cache root, whether writing inside it is refused too): the Hugging Face caches
    are others' to manage; this project's own cache holds the raw conversions it makes."""
    from huggingface_hub import constants

    from ._paths import cache_root

    return [(constants.HF_HOME, True), (constants.HF_HUB_CACHE, True),
            (_datasets_cache(constants.HF_HOME), True), (str(cache_root()), False)]


def _datasets_cache(hf_home: str) -> str:
    """`datasets`' cache folder, as datasets.config sets it, without importing `datasets`
    (and pandas) where it is not imported yet."""
    config = sys.modules.get("datasets.config")
    if config is not None:
        return str(config.HF_DATASETS_CACHE)
    return os.getenv("HF_DATASETS_CACHE") or os.path.join(hf_home, "datasets")


def refusal(path, inputs=()) -> str | None:
    """Why ``path`` may never be written (None: it may). ``inputs``: the input folders
    and files of the command (the raw folder, a base model)."""
    out = _real(path)
    for other in inputs:
        if other is not None and os.path.exists(str(other)):
            if _inside(out, _real(other)) or _inside(_real(other), out):
                return f"the input {other}, inside it or a folder that holds it"
    for other, what in ((os.getcwd(), "the current directory"), (Path.home(), "the home folder")):
        if _inside(_real(other), out):
            return f"{what} or a folder that holds it"
    package = os.path.dirname(os.path.abspath(__file__))
    if _inside(out, _real(package)) or _inside(_real(package), out):
        return "the package's own files"
    for root, inside_too in _cache_roots():
        if _inside(_real(root), out) or (inside_too and _inside(out, _real(root))):
            return f"the cache {root}, inside it or a folder that holds it"
    if out == os.path.abspath(os.sep):
        return "the filesystem root"
    return None


class OutputFolder:
    """A folder this tool writes, under the ownership rule (module docstring).

    ``flag``: how the user named it (``--out``); ``inputs``: the input folders that the
    output may not touch."""

    def __init__(self, path, *, flag: str = "--out", inputs=()):
        self.path, self.flag, self.inputs = Path(path), flag, [i for i in inputs if i]
        self.claimed: set[str] = set()
        self.made: list[Path] = []  # folders that claim() created, deepest first
        self._lock = None

    def __repr__(self) -> str:
        return f"OutputFolder({str(self.path)!r})"

    # ---- what is ours ----

    def owned(self) -> set[str]:
        """The names that the trusted marker lists (relative paths, no way out)."""
        doc = read_marker(self.path)
        if doc.get("folder") != _real(self.path) or not isinstance(doc.get("files"), list):
            return set()  # written for another folder: grants nothing here
        return {n for n in doc["files"] if _safe_name(n)}

    def info(self) -> dict:
        """The extra fields of the marker (what the export was), trusted or not."""
        doc = read_marker(self.path)
        return doc.get("info") or {} if isinstance(doc.get("info"), dict) else {}

    def foreign(self, limit: int = 3) -> list[str]:
        """Up to ``limit`` files (or links) in the folder that the marker does not list."""
        ours, found = self.owned() | set(OWN), []
        for dirpath, dirnames, filenames in os.walk(self.path):
            rel = os.path.relpath(dirpath, self.path)
            prefix = "" if rel == "." else rel + "/"
            links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
            dirnames[:] = sorted(d for d in dirnames if d not in links)
            for name in sorted(filenames) + links:
                if prefix + name not in ours and not _leftover(prefix + name, ours):
                    found.append(prefix + name)
                    if len(found) >= limit:
                        return found
        return found

    def _clear_leftovers(self) -> None:
        """Temporaries that a killed run of ours left beside the files it lists."""
        ours = self.owned() | set(OWN)
        for folder in {str(Path(n).parent) for n in ours}:
            for path in (self.path / folder).glob(".*.partial"):
                if _leftover(str(path.relative_to(self.path)), ours) and path.is_file():
                    path.unlink(missing_ok=True)

    # ---- claiming ----

    def check(self, overwrite: bool = False, names=()) -> None:
        """Refuse (MeraError, one line) a folder that may never be written, or one with
        someone else's files unless ``overwrite``. Reads only."""
        why = refusal(self.path, self.inputs)
        if why:
            raise MeraError(f"{self.flag} {self.path} is {why}; this tool never writes "
                            "there: choose a new folder")
        if os.path.islink(self.path):
            raise MeraError(f"{self.flag} {self.path} is a symbolic link; give the real folder")
        if os.path.lexists(self.path) and not self.path.is_dir():
            raise MeraError(f"{self.flag} {self.path} is a file, not a folder")
        for name in names:  # never write through a link to somewhere else
            parent = self.path
            for part in Path(name).parts[:-1]:
                parent = parent / part
                if parent.is_symlink():
                    raise MeraError(f"{self.flag} {self.path}: {parent.name}/ is a symbolic "
                                    "link; this tool never writes through one")
        if overwrite or not self.path.is_dir():
            return
        clash = [n for n in names if os.path.lexists(self.path / n) and n not in self.owned()]
        foreign = clash or self.foreign()
        if foreign:
            raise MeraError(
                f"{self.flag} {self.path} holds files this tool did not write "
                f"({', '.join(foreign)}): choose a new or empty folder, or pass --overwrite "
                "to write beside them (files of the same names are replaced, nothing else "
                "is touched)")

    def claim(self, overwrite: bool = False, names=(), lock: bool = True) -> "OutputFolder":
        """Check the folder, create it, take its lock and list ``names`` (files that
        will be written bit by bit, such as sample logs) in its marker."""
        self.check(overwrite, names)
        probe = self.path.absolute()
        while not os.path.lexists(probe):
            self.made.append(probe)
            probe = probe.parent
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            if lock:
                self.lock()
            self.check(overwrite, names)  # again, now that no other run can change it
            self._clear_leftovers()
            self.claimed |= set(names)
            if names:
                self._write_marker(self.owned() | set(names))
        except OSError as err:
            self.release()
            raise write_error(err, self.path) from None
        return self

    def lock(self) -> None:
        from filelock import FileLock, Timeout

        if os.path.lexists(self.path / LOCK) and not (self.path / LOCK).is_file():
            raise MeraError(f"{self.flag} {self.path}: {LOCK} is not a file; remove it")
        lock = FileLock(str(self.path / LOCK), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise MeraError(f"{self.flag} {self.path} is in use by another mera-multi run; wait "
                            "for it to finish, or choose another folder") from None
        self._lock = lock

    def release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def close(self, failed: bool = False) -> None:
        """Release the lock; after a failure, take back the folders that claim() made
        while they hold nothing but the lock and marker."""
        self.release()
        if not failed:
            return
        for folder in self.made:
            try:
                if folder == self.path.absolute() and set(os.listdir(folder)) <= set(OWN):
                    for name in OWN:
                        (folder / name).unlink(missing_ok=True)
                folder.rmdir()
            except OSError:
                return

    def __enter__(self) -> "OutputFolder":
        return self

    def __exit__(self, kind, *exc) -> None:
        self.close(failed=kind is not None)

    # ---- writing ----

    def _write_marker(self, names, info: dict | None = None) -> None:
        doc = {"created_by": "mera-multi-hf", "folder": _real(self.path),
               "files": sorted(names), "info": info if info is not None else self.info()}
        _put(self.path / MARKER, _temp(self.path / MARKER,
                                       json.dumps(doc, ensure_ascii=False, indent=1) + "\n"))

    def write_set(self, files: dict, *, index: str | None = None,
                  info: dict | None = None) -> dict[str, Path]:
        """Write ``files`` (name -> bytes, text, or a finished file to move in) as one set.

        The marker lists the old and new names first; every temporary is written (a
        failure here changes no output); the old ``index`` goes, each file is renamed
        into place, files of an earlier set that this one does not make (and no claim
        keeps) are removed, ``index`` comes last. Returns name -> path."""
        owned, names = self.owned(), set(files)
        self.check(True, names)
        keep = names | self.claimed
        staged = {}
        try:
            self._write_marker(owned | keep, info)  # a kill leaves only what it lists
            for name, data in files.items():
                staged[name] = data if isinstance(data, Path) else _temp(self.path / name, data)
        except OSError as err:
            for name, tmp in staged.items():
                if not isinstance(files[name], Path):
                    tmp.unlink(missing_ok=True)
            raise write_error(err) from None
        try:
            if index:
                _remove(self.path / index)
            for name in sorted(names - {index}):
                _put(self.path / name, staged[name])
            for stale in sorted(owned - keep):
                _remove(self.path / stale)
            if index in names:
                _put(self.path / index, staged[index])
            self._write_marker(keep, info)
        except OSError as err:
            raise write_error(err) from None
        return {name: self.path / name for name in files}

    def put(self, name: str, data: str | bytes) -> Path:
        """Write one file atomically, listed in the marker first and claimed (a later
        write_set keeps it); no other file is touched."""
        self.claimed.add(name)
        try:
            self._write_marker(self.owned() | {name})
            _put(self.path / name, _temp(self.path / name, data))
        except OSError as err:
            raise write_error(err) from None
        return self.path / name



def add_files(path, files: dict, *, overwrite: bool = False, flag: str = "--out",
              inputs=()) -> dict[str, Path]:
    """Write ``files`` into ``path`` beside what is there (a report added to a run folder,
    compare or leaderboard files): a same-named file this tool did not write stops it
    unless ``overwrite``; every other file, ours or not, stays as it is."""
    folder = OutputFolder(path, flag=flag, inputs=inputs)
    clash = [n for n in files if os.path.lexists(folder.path / n) and n not in folder.owned()]
    if clash and not overwrite:
        raise MeraError(f"{flag} {folder.path} holds {', '.join(clash)}, not written by this "
                        "tool: choose another folder, or pass --overwrite to replace them")
    with folder.claim(True, list(files)):
        folder.claimed |= folder.owned()  # an addition: nothing listed before goes
        return folder.write_set(files)


def read_marker(folder) -> dict:
    """The marker of ``folder`` as written ({} when there is none or it is garbled)."""
    marker = Path(folder) / MARKER
    try:
        if marker.is_symlink() or not marker.is_file():
            return {}
        doc = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _safe_name(name) -> bool:
    return (isinstance(name, str) and name and not os.path.isabs(name)
            and ".." not in Path(name).parts and name not in OWN)


def _leftover(name: str, ours: set[str]) -> bool:
    """``.<file>.<random>.partial``: a temporary of one of ``ours``."""
    folder, base = os.path.split(name)
    if not (base.startswith(".") and base.endswith(".partial")):
        return False
    stem = base[1:-len(".partial")].rpartition(".")[0]
    return os.path.join(folder, stem) in ours


def _remove(path: Path) -> None:
    """Unlink a file (never a folder)."""
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)


def _temp(path: Path, data) -> Path:
    """``data`` in a flushed temporary beside ``path`` (removed again if it fails; a
    write error names ``path``)."""
    import tempfile

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


def _put(path: Path, staged: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staged, path)
