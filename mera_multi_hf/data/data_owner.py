"""Whose data a source is. Features cannot tell tasks apart (CommonVideoQA and
RealVideoQA share them), so the data's own words decide: the name it declares, another
task's data refused in one line naming both, data naming no task (or saying so itself)
treated as private."""

from __future__ import annotations

import os
from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.data.load_cache import raw_export_dir
from mera_multi_hf.data.sources import card_text
from mera_multi_hf.tasks.spec import TaskSpec


def _name_key(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())  # ruHHH-Image = ruhhh_image


def _names(task: TaskSpec) -> set[str]:
    return {
        _name_key(n) for n in (task.dataset_name, task.key, task.class_name, *task.harness_names)
    }


def _card_header(folder: Path) -> dict:
    """The YAML header of an export's card ({} without one)."""
    import yaml

    parts = card_text(folder).split("---\n")
    # libyaml's safe loader where PyYAML has it: the same values, 8x faster (a card's
    # header is read for every task of every run and scoring)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        header = yaml.load(parts[1], loader) if len(parts) > 2 and not parts[0].strip() else None
    except yaml.YAMLError:
        return {}
    return header if isinstance(header, dict) else {}


def _raw_meta(path: Path) -> tuple[dict, str]:
    """A raw folder's metadata and its file: at the top, else in a domain folder."""
    from mera_multi_hf.data.raw import META_FILES, read_json

    candidates = [path / n for n in META_FILES]
    candidates += [d / n for d in sorted(path.iterdir()) if d.is_dir() for n in META_FILES]
    for file in candidates:
        if os.path.lexists(file):
            try:
                meta = read_json(file)
            except (ValueError, OSError):  # the raw reader reports what is wrong with it
                return {}, str(file)
            return (meta if isinstance(meta, dict) else {}), str(file)
    return {}, str(path / META_FILES[0])


def declared_name(source, kind: str) -> tuple[object, str]:
    """(the dataset name the data declares, which file or id says so): ``dataset_name``
    of a raw folder's metadata, the ``pretty_name`` of an export's card, the Hub id's
    name."""
    if kind == "hub":
        return str(source).rsplit("/", 1)[-1], f"the Hub id {source}"
    path = Path(source).expanduser()
    if kind == "raw":
        meta, file = _raw_meta(path)
        return meta.get("dataset_name"), f"{file} (dataset_name)"
    return _card_header(path).get("pretty_name"), f"{path / 'README.md'} (pretty_name)"


def check_data_task(task: TaskSpec, source, kind: str) -> str | None:
    """Another task's data stops here, in one line naming both tasks; data that names no
    task gives the note to show (it is then treated as private: its answers stay out of
    every upload file); None when the data is the task's."""
    from mera_multi_hf.tasks.table import TASKS

    name, where = declared_name(source, kind)
    if isinstance(name, str) and _name_key(name) in _names(task):
        return None
    other = next(
        (t for t in TASKS.values() if isinstance(name, str) and _name_key(name) in _names(t)), None
    )
    if other is not None:
        raise MeraError(
            f"{source} holds {other.dataset_name} data (task {other.key}), not "
            f"{task.dataset_name} (task {task.key}): {where} says {name!r}; run "
            f"it as {other.key}, or give {task.key} its own data"
        )
    said = f"says {name!r}, no task's name" if isinstance(name, str) else "names no task"
    return (
        f"{task.key}: the data {source} is treated as private, its answers kept out of "
        f"submission.zip: {where} {said}"
    )


def data_says_private(task: TaskSpec, source, kind: str) -> bool:
    """Whether the data itself calls its test split private (test.json's ``access``, a
    MERA_private licence): read from the export's card, or the cached export of a raw
    folder (made by load_task), whose card says it as the raw reader found it."""
    from mera_multi_hf.data.raw.card import INTERNAL_TAG, PRIVATE_LICENSE_NAME

    if kind == "hub":
        return False  # the official copies: the task declaration says it
    folder = raw_export_dir(task, Path(source)) if kind == "raw" else Path(source).expanduser()
    header = _card_header(folder)
    tags = header.get("tags") if isinstance(header.get("tags"), list) else []
    return header.get("license_name") == PRIVATE_LICENSE_NAME or INTERNAL_TAG in tags


def split_privacy(task: TaskSpec, source, split: str) -> tuple[bool, str | None]:
    """Whether a split's answers are private, decided once, when it is loaded: the test
    split of a task declared private, or of data that says it is (its access, its
    licence) or names no task; then no file made for upload (submission.zip,
    logs_public.zip, a published export) carries its gold answers or a per-example score
    derived from them. The note: why data naming no task is treated as private."""
    from mera_multi_hf.data.sources import resolve_source, source_kind

    resolved = resolve_source(task, source)
    kind = source_kind(resolved)
    note = check_data_task(task, resolved, kind)  # another task's data: stopped, any split
    if split != "test":
        return False, None
    data_private = note is not None or data_says_private(task, resolved, kind)
    return (not task.public or data_private), note


def check_source(task, source) -> str:
    """The source resolves (sample, a folder holding a dataset, or a Hub id that is
    reachable or cached) and is the task's own data, not another task's."""
    from mera_multi_hf.data.sources import check_hub_source, resolve_source, source_kind

    resolved = resolve_source(task, source)
    kind = source_kind(resolved)
    note = check_data_task(task, resolved, kind)  # another task's Hub id: no need to reach it
    if kind == "hub":
        check_hub_source(task, str(resolved))
    return f"{kind}: {resolved}" + (f" ({note})" if note else "")
