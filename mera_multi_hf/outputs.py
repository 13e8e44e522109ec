"""The one boundary for every byte a command writes, replaces or removes in a place the
user named: an output folder (build, evaluate, score, compare, leaderboard, view,
metrics export, judge train), an ``--out FILE`` (judge agreement), and this project's
own cache. No other package code writes there (tests/test_write_boundary.py walks the
code to prove it); library writers (``save_pretrained``, ``to_parquet``, the card) write
into a staging folder that this module makes inside the output folder.

- **No link is followed below the folder the user named.** Every step below it is
  opened relative to its parent's descriptor with ``O_NOFOLLOW`` (folders with
  ``O_DIRECTORY`` too), a file must be a regular file with one link, and renames and
  removals name the entry itself. The path the user typed may pass through links.
- **Ownership by kind.** A folder's marker (``.mera-multi-outputs.json``) names the
  kind of output (export, run, score, report, ...) that wrote each file it lists; it is
  trusted only when it names this very folder. A command writes only into a folder that
  is new, empty, or holds nothing but its own kind's listed files (and output folders
  of their own, nested). Anything else is foreign: the folder is refused, with or
  without ``--overwrite``, and nothing in it is touched.
- **Never written at all:** the command's inputs, anything inside them or holding them;
  the current directory, the home directory and their parents; the package's own tree;
  the Hugging Face caches; the filesystem root.
- **One lock per folder** (``flock`` on a file opened without following a link).
- **A set of files is written whole:** each file goes to a temporary first (a full disk
  stops it there, the previous outputs untouched), then each is renamed into place, the
  index file (results.json, README.md) last.
- Created files honour the umask, except those that hold a private split's gold
  answers: those are 0600.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import shutil
import stat
import sys
from pathlib import Path

from .errors import MeraError

MARKER = ".mera-multi-outputs.json"
LOCK = ".mera-multi.lock"
OWN = (MARKER, LOCK)
STAGING_PREFIX = ".mera-multi-staging-"
MARKER_FORMAT = 2

# kind -> the command that writes it (how a refusal names another kind's folder)
KINDS = {"export": "build", "run": "evaluate", "score": "score",
         "report": "compare/leaderboard", "metrics": "metrics export",
         "judge_model": "judge train", "agreement": "judge agreement"}

# what --overwrite means, for every command that takes it
OVERWRITE_HELP = ("also replace or clear this command's own earlier outputs here that a "
                  "plain rerun keeps (for evaluate: a sample log made under other "
                  "settings); never a file this tool did not write, another command's "
                  "file, or a folder")

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
PRIVATE_MODE, PLAIN_MODE = 0o600, 0o666  # the plain mode is narrowed by the umask


def write_error(err: OSError, path=None) -> MeraError:
    """One line for a failed write: the path and the reason, and that nothing changed."""
    where = path if path is not None and not err.filename else err.filename or "a file"
    return MeraError(f"cannot write {where}: {err.strerror or err}; previous outputs "
                     "are left as they were (free some space or fix the permissions, then "
                     "rerun)")


def _real(path) -> str:
    return os.path.realpath(os.path.expanduser(os.fsdecode(path)))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(os.path.join(folder, ""))


def _hf_caches() -> list[str]:
    """The Hugging Face caches: others' to manage (this project's own cache root is
    written through this module too, under the same no-link rule)."""
    from huggingface_hub import constants

    return [constants.HF_HOME, constants.HF_HUB_CACHE, _datasets_cache(constants.HF_HOME)]


def _datasets_cache(hf_home: str) -> str:
    """`datasets`' cache folder, as datasets.config sets it, without importing `datasets`
    (and pandas) where it is not imported yet."""
    config = sys.modules.get("datasets.config")
    if config is not None:
        return str(config.HF_DATASETS_CACHE)
    return os.getenv("HF_DATASETS_CACHE") or os.path.join(hf_home, "datasets")


def refusal(path, inputs=()) -> str | None:
    """Why ``path`` may never be written (None: it may). ``inputs``: what the command
    reads (the raw folder, --data, the predictions, a base model, a judge)."""
    out = _real(path)
    for other in inputs:
        if other is not None and os.path.lexists(os.fsdecode(other)):
            if _inside(out, _real(other)) or _inside(_real(other), out):
                return f"the input {other}, inside it or a folder that holds it"
    for other, what in ((os.getcwd(), "the current directory"), (Path.home(), "the home folder")):
        if _inside(_real(other), out):
            return f"{what} or a folder that holds it"
    package = os.path.dirname(os.path.abspath(__file__))
    if _inside(out, _real(package)) or _inside(_real(package), out):
        return "the package's own files"
    from ._paths import cache_root

    for root in _hf_caches():
        if _inside(_real(root), out) or _inside(out, _real(root)):
            return f"the cache {root}, inside it or a folder that holds it"
    if _inside(_real(cache_root()), out):
        return f"this tool's cache {cache_root()} or a folder that holds it"
    if out == os.path.abspath(os.sep):
        return "the filesystem root"
    return None


# ---- the primitives: every open, rename and removal below a named folder ----

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
                    raise LinkRefused(f"{part}/ in {name} is a symbolic link or not a folder; "
                                      "this tool never writes through one") from None
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


def _as_bytes(data) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def _safe_name(name) -> bool:
    return (isinstance(name, str) and bool(name) and not os.path.isabs(name)
            and ".." not in name.split("/") and "" not in name.split("/")
            and "." not in name.split("/") and name not in OWN)


def _leftover(name: str, ours: set[str]) -> bool:
    """``.<file>.<random>.partial``: a temporary of one of ``ours``."""
    folder, base = os.path.split(name)
    if not (base.startswith(".") and base.endswith(".partial")):
        return False
    stem = base[1:-len(".partial")].rpartition(".")[0]
    return os.path.join(folder, stem) in ours


# ---- the marker: which kind wrote which file ----

def read_marker(folder) -> dict:
    """The marker of ``folder`` as written ({} when there is none or it is garbled)."""
    try:
        fd = os.open(Path(os.fsdecode(folder)) / MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            doc = json.loads(fh.read(8 << 20))
    except (OSError, ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


def trusted_listing(folder) -> dict[str, str]:
    """name -> kind of every file the marker of ``folder`` lists, when the marker names
    this very folder ({} otherwise: a copied marker grants nothing). A marker of an
    older version has no kinds: they are inferred from the names it lists."""
    doc = read_marker(folder)
    if doc.get("folder") != _real(folder):
        return {}
    files = doc.get("files")
    if isinstance(files, list):
        return legacy_kinds([n for n in files if _safe_name(n)])
    if not isinstance(files, dict):
        return {}
    return {n: k for n, k in files.items() if _safe_name(n) and k in KINDS}


REPORT_STEMS = ("compare.", "leaderboard.")


def legacy_kinds(names: list[str]) -> dict[str, str]:
    """The kinds of the files an old marker lists, from their names: a run folder has
    ``logs/``; an export its card and Parquet shards; a judge its config.json; a metrics
    export ``<metric>/<metric>.py``; compare and leaderboard files are reports."""
    if any(n.startswith("logs/") for n in names):
        kind = "run"
    elif "README.md" in names and any(n.endswith(".parquet") for n in names):
        kind = "export"
    elif "config.json" in names:
        kind = "judge_model"
    elif any(n.count("/") == 1 and n.endswith(".py") for n in names):
        kind = "metrics"
    elif any(n.startswith("results.") for n in names):
        kind = "score"
    else:
        kind = "report"
    return {n: "report" if n.startswith(REPORT_STEMS) else kind for n in names}


def folder_kind(folder) -> str | None:
    """The kind of output a folder holds, by its trusted marker (None: not one of ours,
    or a mix)."""
    kinds = set(trusted_listing(folder).values())
    return kinds.pop() if len(kinds) == 1 else None


SUGGESTED_SUBFOLDER = {"score": "scored", "export": "export", "report": "reports",
                       "metrics": "metrics", "judge_model": "judge", "run": "run",
                       "agreement": "agreement"}


class OutputFolder:
    """A folder this tool writes as one ``kind`` of output (see the module docstring).

    ``flag``: how the user named it (``--out``); ``inputs``: what the command reads,
    which the output may not touch."""

    def __init__(self, path, *, kind: str, flag: str = "--out", inputs=()):
        if kind not in KINDS:
            raise ValueError(f"unknown kind of output {kind!r}")
        self.path, self.kind, self.flag = Path(os.fsdecode(path)), kind, flag
        self.inputs = [i for i in inputs if i]
        self.claimed: set[str] = set()
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
        doc = read_marker(self.path)
        names = doc.get("staging") if doc.get("folder") == _real(self.path) else None
        return [n for n in names or [] if isinstance(n, str) and n.startswith(STAGING_PREFIX)
                and "/" not in n]

    def foreign(self, limit: int = 3) -> list[str]:
        """Up to ``limit`` entries that are not this kind's listed plain files, each
        with what it is. Nested output folders (their own trusted marker) are left out:
        nothing here ever touches them."""
        listing = self.listing()
        ours = {n for n, k in listing.items() if k == self.kind}
        skip, found = set(self._staging_names()), []
        for dirpath, dirnames, filenames in os.walk(self.path):
            rel = os.path.relpath(dirpath, self.path)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for name in list(dirnames):
                full = os.path.join(dirpath, name)
                if os.path.islink(full):
                    filenames.append(name)
                if (os.path.islink(full) or (not prefix and name in skip)
                        or trusted_listing(full)):
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
        if (not name.count("/") and name in OWN) or _leftover(name, ours | set(OWN)):
            return None
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
            raise MeraError(f"{self.flag} {shown(self.path)}: the name is not valid UTF-8; "
                            "choose a folder whose name is")
        why = refusal(self.path, self.inputs)
        if why:
            raise MeraError(f"{self.flag} {self.path} is {why}; this tool never writes "
                            f"there: {self._elsewhere()}")
        if os.path.islink(self.path):
            raise MeraError(f"{self.flag} {self.path} is a symbolic link; give the real folder")
        if os.path.lexists(self.path) and not self.path.is_dir():
            raise MeraError(f"{self.flag} {self.path} is a file, not a folder")
        found = self.foreign() if self.path.is_dir() else []
        if found:
            raise MeraError(
                f"{self.flag} {self.path} holds {', '.join(found)}: {KINDS[self.kind]} writes "
                "only into a new or empty folder, or one holding nothing but its own earlier "
                f"outputs, with or without --overwrite; nothing was touched: {self._elsewhere()}")

    def _elsewhere(self) -> str:
        if folder_kind(self.path) not in (None, self.kind):  # a folder of its own inside
            return f"write to {self.path / SUGGESTED_SUBFOLDER[self.kind]} instead"
        return "choose a new folder"

    def claim(self, names=(), lock: bool = True) -> "OutputFolder":
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
            fd = os.open(LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                         PLAIN_MODE, dir_fd=self._root())
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
            raise MeraError(f"{self.flag} {self.path} is in use by another mera-multi run; wait "
                            "for it to finish, or choose another folder") from None
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

    def __enter__(self) -> "OutputFolder":
        return self

    def __exit__(self, kind, *exc) -> None:
        self.close(failed=kind is not None)

    def _clear_leftovers(self) -> None:
        """Temporaries and staging folders that a killed run of ours left behind."""
        ours = self.owned() | set(OWN)
        for folder in sorted({os.path.dirname(n) for n in ours}):
            try:
                dir_fd, _ = _walk_to(self._root(), f"{folder}/x" if folder else "x", False)
            except (OSError, LinkRefused):
                continue
            try:
                for base in os.listdir(dir_fd):
                    if _leftover(f"{folder}/{base}" if folder else base, ours):
                        _unlink_at(dir_fd, base)
            finally:
                os.close(dir_fd)
        for name in self._staging_names():
            self._remove_tree(name)
        if self._staging_names():
            self._write_marker(self.owned(), staging=[])

    def _remove_tree(self, name: str) -> None:
        """A staging folder of ours, with everything in it (never through a link)."""
        info = _entry(self._root(), name)
        if info is not None and stat.S_ISDIR(info.st_mode):
            shutil.rmtree(name, dir_fd=self._root())

    # ---- writing ----

    def _write_marker(self, names, info: dict | None = None, staging=None) -> None:
        doc = {"created_by": "mera-multi-hf", "format": MARKER_FORMAT,
               "folder": _real(self.path), "files": {n: self.kind for n in sorted(names)},
               "staging": self._staging_names() if staging is None else staging,
               "info": info if info is not None else self.info()}
        text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
        root = self._root()
        try:
            tmp = _temp(root, MARKER, text.encode("utf-8"), PLAIN_MODE)
        except OSError as err:  # name the folder a full disk stopped
            raise write_error(err, self.path / MARKER) from None
        _replace_at(root, tmp, MARKER)

    @contextlib.contextmanager
    def staging(self):
        """A fresh folder inside this one for libraries that write by path; listed in the
        marker first (a rerun removes what a kill left), removed after."""
        name = STAGING_PREFIX + secrets.token_hex(4)
        self._write_marker(self.owned() | self.claimed, staging=self._staging_names() + [name])
        os.mkdir(name, 0o700, dir_fd=self._root())
        try:
            yield self.path / name
        finally:
            self._remove_tree(name)
            self._write_marker(self.owned() | self.claimed,
                               staging=[n for n in self._staging_names() if n != name])

    def write_set(self, files: dict, *, index: str | None = None, info: dict | None = None,
                  private=()) -> dict[str, Path]:
        """Write ``files`` (name -> bytes, text, or a finished file in one of this folder's
        staging folders) as one set; ``private``: names that hold gold answers (0600).

        The marker lists the old and new names first; every temporary is written (a
        failure here changes no output); the old ``index`` goes, each file is renamed
        into place, files of an earlier set that this one does not make (and no claim
        keeps) are removed, ``index`` comes last. Returns name -> path."""
        self.check()
        owned, names = self.owned(), set(files)
        keep = names | self.claimed
        staged: dict[str, tuple[int, str, int | None]] = {}
        try:
            self._write_marker(owned | keep, info)  # a kill leaves only what it lists
            for name, data in files.items():
                staged[name] = self._stage(name, data, name in private)
            if index:
                self.remove(index)
            for name in sorted(names - {index}) + ([index] if index in names else []):
                dir_fd, tmp, src_fd = staged[name]
                _replace_at(dir_fd, tmp, name.rsplit("/", 1)[-1], src_fd)
                del staged[name]
                _close(dir_fd, src_fd)
            for stale in sorted(owned - keep):
                self.remove(stale)
            self._write_marker(keep, info)
        except OSError as err:
            raise write_error(err, self.path) from None
        finally:
            self._drop(staged)
        return {name: self.path / name for name in files}

    def _stage(self, name: str, data, private: bool) -> tuple[int, str, int | None]:
        """(the target folder's descriptor, the temporary's name, the descriptor of the
        folder it is in when that is a staging folder)."""
        dir_fd, base = _walk_to(self._root(), name, create=True)
        try:
            if not isinstance(data, Path):
                mode = PRIVATE_MODE if private else PLAIN_MODE
                try:
                    return dir_fd, _temp(dir_fd, base, _as_bytes(data), mode), None
                except OSError as err:  # name the file a full disk stopped
                    raise OSError(err.errno, err.strerror, str(self.path / name)) from None
            src_fd, src = _walk_to(self._root(), self._staged_name(data), create=False)
            if private:
                _private_mode(src_fd, src)
            return dir_fd, src, src_fd
        except BaseException:
            os.close(dir_fd)
            raise

    def _staged_name(self, path: Path) -> str:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(self.path))
        rel = rel.replace(os.sep, "/")
        if rel.split("/")[0] not in self._staging_names():
            raise ValueError(f"{path} is not in a staging folder of {self.path}")
        return rel

    @staticmethod
    def _drop(staged: dict) -> None:
        """Close what was staged and not moved; remove the temporaries this set made."""
        for name, (dir_fd, tmp, src_fd) in staged.items():
            if src_fd is None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dir_fd)
            _close(dir_fd, src_fd)
        staged.clear()

    def put(self, name: str, data, private: bool = False) -> Path:
        """Write one file (listed, and kept by later sets of this command) and touch
        nothing else."""
        self.claimed.add(name)
        self._write_marker(self.owned() | {name})
        try:
            dir_fd, tmp, _ = self._stage(name, data, private)
        except OSError as err:
            raise write_error(err, self.path / name) from None
        try:
            _replace_at(dir_fd, tmp, name.rsplit("/", 1)[-1])
        finally:
            os.close(dir_fd)
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
        return os.fdopen(self._open_listed(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT),
                         "a", encoding="utf-8")

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
            raise MeraError(f"{self.path / name} is not listed in the output folder's "
                            "marker; it is not this run's to write")
        dir_fd, base = _walk_to(self._root(), name, create=bool(flags & os.O_CREAT))
        try:
            fd = os.open(base, flags | os.O_NOFOLLOW | os.O_CLOEXEC, PLAIN_MODE, dir_fd=dir_fd)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise LinkRefused(f"{self.path / name} is a symbolic link; this tool never "
                                  "writes through one") from None
            raise
        finally:
            os.close(dir_fd)
        if not _plain_file(os.fstat(fd)):
            os.close(fd)
            raise LinkRefused(f"{self.path / name} is not a plain file with one link; this "
                              "tool never writes through one")
        return fd


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


def add_files(path, files: dict, *, kind: str, flag: str = "--out", inputs=(),
              private=()) -> dict[str, Path]:
    """Write ``files`` into ``path`` beside this kind's earlier files, which all stay (a
    report beside another report, the page of a folder ``view`` shows)."""
    folder = OutputFolder(path, kind=kind, flag=flag, inputs=inputs)
    with folder.claim():
        folder.claimed |= folder.owned()  # an addition: nothing listed before goes
        return folder.write_set(files, private=private)


# ---- one file the user named (--out FILE) ----

def check_report_file(path, *, kind: str, overwrite: bool, inputs=(), flag: str = "--out"):
    """Refuse (one line) an ``--out FILE`` that :func:`write_report_file` would refuse;
    called before the work, so that nothing done is lost. Reads only."""
    path = Path(os.fsdecode(path))
    why = refusal(path, inputs)
    if why or os.path.isdir(path) and not os.path.islink(path):
        raise MeraError(f"{flag} {path} is {why or 'a folder'}; give the name of a new file")
    if os.path.isdir(path.parent):
        dir_fd = _open_root(path.parent, create=False)
        try:
            current = _entry(dir_fd, path.name)
            if current is not None:
                _check_replaceable(dir_fd, path, current, kind, overwrite, flag)
        finally:
            os.close(dir_fd)
    return path


def write_report_file(path, data, *, kind: str, overwrite: bool, inputs=(),
                      flag: str = "--out") -> Path:
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
            tmp = _temp(dir_fd, path.name, _as_bytes(data), PLAIN_MODE)
            _replace_at(dir_fd, tmp, path.name)
        finally:
            os.close(dir_fd)
    except OSError as err:
        raise write_error(err, path) from None
    return path


def _check_replaceable(dir_fd, path: Path, current, kind: str, overwrite: bool, flag: str):
    if not _plain_file(current):
        raise MeraError(f"{flag} {path} is a link or not a plain file; this tool never "
                        "writes through one: give the name of a new file")
    if not overwrite:
        raise MeraError(f"{flag} {path} exists; give a new file name, or pass --overwrite to "
                        f"replace a report that {KINDS[kind]} wrote")
    fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as fh:
        head = fh.read(64 << 20)
    try:
        doc = json.loads(head)
    except (ValueError, RecursionError):
        doc = None
    if not (isinstance(doc, dict) and doc.get("kind") == report_kind(kind)):
        raise MeraError(f"{flag} {path} is not a report that {KINDS[kind]} wrote; this tool "
                        "never replaces it, even with --overwrite: give a new file name")


def report_kind(kind: str) -> str:
    """The ``kind`` field of a single-file report of ``kind``."""
    return f"mera-multi-hf {kind} report"


# ---- this project's own cache (the same no-link rule, below the cache root) ----

def _cache_parent(target: Path) -> tuple[int, str]:
    from ._paths import cache_root

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
        _replace_at(dir_fd, _temp(dir_fd, base, _as_bytes(data), PLAIN_MODE), base)
    finally:
        os.close(dir_fd)


def stage_file(folder, name: str, data) -> Path:
    """Add one new file to a staging folder (beside what a library wrote there)."""
    fd = os.open(folder, _DIR)
    try:
        out = os.open(name, _NEW, PLAIN_MODE, dir_fd=fd)
        with os.fdopen(out, "wb") as fh:
            fh.write(_as_bytes(data))
    finally:
        os.close(fd)
    return Path(folder) / name


@contextlib.contextmanager
def cache_lock(target):
    """Hold the cache's lock file ``target`` (opened without following a link; waits for
    a concurrent holder)."""
    dir_fd, base = _cache_parent(Path(target))
    try:
        fd = os.open(base, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, PLAIN_MODE,
                     dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
