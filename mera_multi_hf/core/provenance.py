"""What makes a result reproducible: recorded in every results file."""

from __future__ import annotations

import functools
import hashlib
import io
import os
import platform
import re
import sys
from pathlib import Path

from mera_multi_hf.core.input_files import open_binary, read_bytes, read_text
from mera_multi_hf.core.masking import mask_secrets

PACKAGES = (
    "mera-multi-hf",
    "torch",
    "transformers",
    "datasets",
    "evaluate",
    "accelerate",
    "huggingface_hub",
    "pillow",
    "numpy",
)


def package_versions() -> dict[str, str | None]:
    return dict(_versions())


@functools.cache  # what is installed does not change while a run runs
def _versions() -> dict[str, str | None]:
    versions = {name: installed_version(name) for name in PACKAGES}
    versions["python"] = platform.python_version()
    return versions


@functools.cache
def installed_version(name: str) -> str | None:
    """The version of an installed distribution, as ``importlib.metadata.version`` gives
    it; None when it is not installed.

    Read here from the header of the distribution's metadata file, found where
    importlib.metadata finds it (the first ``<name>-<version>.dist-info`` or
    ``.egg-info`` of the ``sys.path`` folders, in order, with the name normalized as
    it does): importlib.metadata parses whole METADATA files with the email parser (6 ms
    of an API run before its first request, for PACKAGES). A path entry that is no
    folder (a zip, an egg) is left to importlib.metadata itself."""
    key = _normalized(name)
    for entry in sys.path:
        found = _metadata_folders(entry)
        if found is None:
            return _library_version(name)
        if key in found:
            version = _header_version(found[key])
            # a folded field: importlib.metadata re-indents it, its own way
            return _library_version(name) if version and "\n" in version else version
    return None


def _normalized(name: str) -> str:
    """A distribution name as importlib.metadata compares it (PEP 503, with _ for -)."""
    return re.sub(r"[-_.]+", "_", name).lower()


@functools.cache  # (what is installed does not change while a run runs)
def _metadata_folders(entry: str) -> dict[str, str] | None:
    """The metadata folders of one ``sys.path`` entry, by normalized name (the first one
    listed of each); {} where there is nothing to list, None for a zip or an egg."""
    if os.path.basename(entry).lower().endswith(".egg") or os.path.isfile(entry):
        return None
    try:
        children = os.listdir(entry or ".")
    except OSError:
        return {}
    found: dict[str, str] = {}
    for child in children:
        low = child.lower()
        if low.endswith((".dist-info", ".egg-info")):
            key = _normalized(low.rpartition(".")[0].partition("-")[0])
            found.setdefault(key, os.path.join(entry, child))
    return found


def _header_version(path: str) -> str | None:
    """The Version field of a metadata file's header (METADATA, else PKG-INFO, else the
    path itself: an old egg-info file), as the email parser reads it."""
    for file in (os.path.join(path, "METADATA"), os.path.join(path, "PKG-INFO"), path):
        try:
            text = read_text(file)
        except OSError:  # missing, or a folder: the next one, as importlib.metadata reads
            continue
        if text:  # (an empty one: the next, too)
            return _version_field(io.StringIO(text, newline=None))
    return None


def _version_field(lines) -> str | None:
    """The first Version header of an email-style header block (a folded value joined
    as the email parser joins it); None without one."""
    value = None
    for line in lines:
        if value is not None:
            if line[:1] not in (" ", "\t"):
                break
            value += line
            continue
        field, colon, rest = line.partition(":")
        if not colon:
            break  # a blank line: the end of the header block
        if field.lower() == "version":
            value = rest.lstrip(" \t")
    return None if value is None else value.rstrip("\r\n")


def _library_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open_binary(path) as fh:  # the one input reader: a FIFO is refused, not waited on
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def folder_fingerprint(
    root: str | Path,
    *,
    read: tuple[str, ...] = (),
    salt: str = "",
    times: bool = False,
    length: int = 16,
) -> str:
    """A short hash of a folder (its files, recursively, in a stable order): each file's
    relative name and, for the suffixes in ``read`` (files under 16 MiB), its bytes;
    otherwise its size, and its modification time when ``times``. Model revisions read
    contents; caches of large folders stat their files."""
    root = Path(root)
    digest = hashlib.sha256(salt.encode())
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        if path.suffix in read and stat.st_size < 1 << 24:
            digest.update(read_bytes(path))
        else:
            digest.update(f"{stat.st_size}:{stat.st_mtime_ns if times else ''}".encode())
    return digest.hexdigest()[:length]


def command_line(config=None, typed: list[str] | None = None) -> str:
    """The command, masked (the secret options' values, and those values wherever else
    they appear): ``typed``, the options of `mera-multi evaluate` as typed; else, for a
    Python caller, the run config's options that differ from the defaults, as the call
    that gives them; with no config, ``sys.argv``."""
    if config is None:
        return mask_secrets(" ".join([Path(sys.argv[0]).name] + sys.argv[1:]))
    import dataclasses
    import shlex  # (the manifest's: written while the first requests go out)

    secret = [f.name for f in dataclasses.fields(config) if f.metadata.get("secret")]
    if typed is not None:
        text = shlex.join(["mera-multi", "evaluate", *typed])
    else:
        shown = {k: "***" if k in secret else v for k, v in config.changed().items()}
        text = "run_evaluation(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"
    for name in secret:
        value = getattr(config, name, None)
        if isinstance(value, str) and value:
            text = text.replace(value, "***")
    return mask_secrets(text)
