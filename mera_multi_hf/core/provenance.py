"""What makes a result reproducible: recorded in every results file."""

from __future__ import annotations

import functools
import hashlib
import io
import platform
import sys
from pathlib import Path

from mera_multi_hf.core.input_files import open_binary, read_bytes
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


@functools.cache  # (what is installed does not change while a run runs)
def installed_version(name: str) -> str | None:
    """The version of an installed distribution, as ``importlib.metadata.version`` gives
    it; None when it is not installed. The distribution is found by importlib.metadata;
    only its header's Version line is read here: ``version`` parses the whole METADATA
    file with the email parser (6 ms of an API run's CPU for PACKAGES: torch's is long)."""
    from importlib import metadata

    try:
        found = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    text = found.read_text("METADATA") or found.read_text("PKG-INFO") or ""
    version = _version_field(io.StringIO(text, newline=None))
    # none, or folded over lines (importlib.metadata re-indents it its own way): the parse
    return found.version if version is None or "\n" in version else version


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
