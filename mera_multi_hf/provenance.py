"""What makes a result reproducible: recorded in every results file."""
from __future__ import annotations

import hashlib
import platform
import sys
from importlib import metadata
from pathlib import Path

PACKAGES = ("mera-multi-hf", "torch", "transformers", "datasets", "evaluate", "accelerate",
            "huggingface_hub", "pillow", "numpy")


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    versions["python"] = platform.python_version()
    return versions


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def command_line() -> str:
    return " ".join([Path(sys.argv[0]).name] + sys.argv[1:])
