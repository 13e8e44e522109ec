"""Where a raw folder keeps its files: split, metadata and readme file names, and the
per-domain layout of domain-split tasks."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mera_multi_hf.tasks.spec import TaskSpec

SPLITS = ("test", "shots")
META_FILES = ("raw_dataset_meta.json", "dataset_meta.json")
README_FILES = {"en": "raw_readme_en.json", "ru": "raw_readme_ru.json"}


def domain_key(name) -> str | None:
    """A domain name as compared with a task's domain configs ("Earth science" and
    "earth_science" are the same domain); None for anything but a string."""
    return name.strip().lower().replace(" ", "_") if isinstance(name, str) else None


def named_domain(meta) -> str | None:
    """The domain a record's meta names: ``meta.domain`` or, as the official records of
    the science tasks write it, ``meta.categories.domain`` (None if neither)."""
    if not isinstance(meta, dict):
        return None
    categories = meta.get("categories")
    return meta.get("domain") or (
        categories.get("domain") if isinstance(categories, dict) else None
    )


def record_domain(meta, domains: tuple[str, ...]) -> str | None:
    """The task's domain config a record's meta names ("Earth science", "earth_science"
    -> "earth_science"); None for a missing or unknown one."""
    known = {domain_key(d): d for d in domains}
    return known.get(domain_key(named_domain(meta)))


def domain_folders(task: TaskSpec, root: str | Path) -> list[str]:
    """The task's domain folders under ``root``, in the task's domain order: the official
    per-domain layout (``<domain>/test.json``, ``<domain>/shots.json``, as the upload
    notebooks of the domain-split tasks read it). Empty for the single-folder form (a
    ``test.json`` at the top, each record naming its domain)."""
    root = Path(root)
    if not task.domains or os.path.lexists(root / "test.json"):
        return []
    return [d for d in task.domains if os.path.isdir(root / d)]


@dataclass(frozen=True)
class RawPart:
    """One folder of split files: the dataset folder itself, or one domain folder."""

    domain: str | None  # the domain config its records belong to (domain folders)
    prefix: str  # its path inside the dataset folder: "" or "<domain>/"
    meta_file: str  # the metadata file its prompts and exclusions come from
    meta: dict
    prompts: list[str] | None
    exclude: list[tuple[str, ...]]
    own_meta: bool  # the metadata file lies in this folder
