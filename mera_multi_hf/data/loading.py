"""Load a MERA task from a raw folder, an exported folder or the Hub, always in one schema.

What a source is: :mod:`~mera_multi_hf.data.sources`; whose data it is:
:mod:`~mera_multi_hf.data.data_owner`; where a load is cached:
:mod:`~mera_multi_hf.data.load_cache`.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.limits import Limits
from mera_multi_hf.data.datasets_hook import relabelled
from mera_multi_hf.data.load_cache import arrow_cache_dir, raw_export_dir
from mera_multi_hf.data.raw.groups import GroupIds
from mera_multi_hf.data.sources import (
    check_hub_source,
    named_source,
    resolve_source,
    source_kind,
)
from mera_multi_hf.tasks.spec import TaskSpec
from mera_multi_hf.tasks.table import get_task

if TYPE_CHECKING:
    import datasets

    from mera_multi_hf.data.arrow_split import ArrowSplit

_QUIET = []  # quiet_progress() was called: datasets' bars off once it is imported


def quiet_progress() -> None:
    """No progress bars from `datasets` in this process, now or once it is imported
    (a run that reads a prepared cache never imports it)."""
    _QUIET.append(True)
    if "datasets" in sys.modules:
        _datasets()


def _datasets():
    """`datasets`, imported where a load needs it, with its bars off if asked."""
    import datasets

    if _QUIET:
        datasets.disable_progress_bars()
    return datasets


def load_task(
    task: str | TaskSpec,
    source: str | Path | None = None,
    split: str | None = None,
    *,
    limits: Limits | None = None,
):
    """The task as a DatasetDict (splits ``test`` and ``shots``), or one split.

    ``source``: a raw MERA folder (single-folder or per-domain layout), a folder exported
    by ``mera-multi build``, a Hub dataset id (default: the task's official id) or the
    name of a registered source kind (:mod:`.sources`). Whatever the source, the schema is the package's
    (docs/official-protocol.md, "Export features"; pictures decoded, audio and video as
    bytes): Hub-copy meta names normalised, prompt indices resolved, group ids present,
    and a domain task's configs joined into one dataset with ``meta.domain``.
    ``limits``: what the media of a raw folder may declare (mera_multi_hf.core.limits).
    """
    task, source, kind = _prepared(task, source, limits)
    return _pick(task, source, _load(task, source, kind), split)


def load_split(
    task: str | TaskSpec,
    source: str | Path | None = None,
    split: str = "test",
    *,
    limits: Limits | None = None,
) -> ArrowSplit:
    """``load_task(task, source, split)`` as plain Arrow
    (:class:`~mera_multi_hf.data.arrow_split.ArrowSplit`): the same rows, features and
    fingerprint. A local folder loaded before is read from the Arrow files `datasets`
    prepared then, without importing `datasets` (what a run and `score` need)."""
    from mera_multi_hf.data.arrow_split import ArrowSplit, read_manifest, write_manifest

    task, source, kind = _prepared(task, source, limits)
    cache_dir = arrow_cache_dir(source)
    splits = read_manifest(cache_dir) if cache_dir else None
    if splits is None:
        dsd = _load(task, source, kind)
        if cache_dir:
            write_manifest(cache_dir, dsd)
        # read back as the next load reads it: its content hashes come with it
        splits = (read_manifest(cache_dir) if cache_dir else None) or dsd
        del dsd
        hand_back_freed_memory()
    return ArrowSplit.of(_pick(task, source, splits, split))


def hand_back_freed_memory() -> None:
    """Return to the system what a conversion freed but the allocators keep: Arrow's pool
    keeps its freed pages, and glibc's heap the media bytes Python held, for reuse by
    this process. Kept, they add up over the tasks of one run (`--tasks all` converts
    every task first), though each conversion's live memory is bounded."""
    import ctypes

    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # musl has no malloc_trim
            ctypes.CDLL(None).malloc_trim(0)


def _prepared(task, source, limits) -> tuple[TaskSpec, str | Path, str]:
    """(task, the source to read, its kind): a raw folder converted once into the cache
    (its export is what is read), a Hub id checked to be within reach."""
    task = task if isinstance(task, TaskSpec) else get_task(task)
    named = named_source(source)
    source = resolve_source(task, source)
    kind = source_kind(source)
    if kind == "hub":
        check_hub_source(task, str(source))
    if kind == "raw":
        from mera_multi_hf.core.outputs import cache_lock

        target = raw_export_dir(task, source)
        # One process converts, concurrent ones wait and read (several runs may share a
        # fresh cache). The cache keeps a private split's answers: local scoring needs
        # them, and the cache is never published.
        with cache_lock(target.parent / f"{target.name}.lock"):
            if not (target / "README.md").is_file():
                from mera_multi_hf.data.publish import export_raw

                with one_line(
                    task,
                    source,
                    "preparing {task} from {source} (once: then it is read from the cache)",
                ):
                    export_raw(
                        task,
                        source,
                        target,
                        include_private_answers=True,
                        limits=limits,
                        say_notes=named is None or named.says_notes,
                    )
        source = target
    return task, source, kind


def _load(task: TaskSpec, source, kind: str) -> datasets.DatasetDict:
    """The source loaded and normalised; a local folder's bars give way to one line (a
    raw folder's was said when it was prepared), a Hub download keeps its own."""
    if kind == "hub":
        return normalize(task, _read(task, source, kind))
    with one_line(task, source, "reading {task} from {source}" if kind == "exported" else ""):
        return normalize(task, _read(task, source, kind))


@contextlib.contextmanager
def one_line(task: TaskSpec, source, line: str):
    """Instead of datasets' progress bars (two or more per split), one line per task
    (``line``, or none), where bars are shown: `--tasks all` reads as a list."""
    datasets = _datasets()
    shown = datasets.is_progress_bar_enabled()
    if shown and line:
        print(
            "mera-multi: " + line.format(task=task.key, source=source), file=sys.stderr, flush=True
        )
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if shown:
            datasets.enable_progress_bars()


def _pick(task: TaskSpec, source, splits, split: str | None):
    if split is None:
        return splits
    if split not in splits:
        raise MeraError(
            f"{task.key} from {source} has no split {split!r} (splits: {', '.join(splits)})"
        )
    return splits[split]


def _read(task: TaskSpec, source, kind: str) -> datasets.DatasetDict:
    """``load_dataset`` on the source."""
    datasets = _datasets()
    try:
        cache_dir = arrow_cache_dir(source)
        domains = _domain_configs(task, str(source))
        options = _parquet_options(kind)
        if domains:
            return _load_domains(str(source), domains, cache_dir, options)
        return datasets.load_dataset(str(source), cache_dir=cache_dir, **options)
    except MeraError:
        raise
    except (FileNotFoundError, ValueError, ConnectionError) as err:
        raise MeraError(f"cannot load {task.key} from {source}: {err}") from None


def _parquet_options(kind: str) -> dict:
    """What `load_dataset` is given to read a raw folder's export (Parquet, always): its
    row groups read one at a time. By default Arrow reads a Parquet file's every row group
    ahead (``pre_buffer``) and holds them until the file is done: a shard's whole media,
    up to 500 MB, on top of the rows being written."""
    if kind != "raw":
        return {}
    import pyarrow.dataset

    return {"fragment_scan_options": pyarrow.dataset.ParquetFragmentScanOptions(pre_buffer=False)}


def _domain_configs(task: TaskSpec, source: str) -> list[str]:
    """The task's domain configs the source publishes (as the Hub copies and this
    project's exports do), in the task's order; empty for a single-config source."""
    if not task.domains:
        return []
    names = set(_datasets().get_dataset_config_names(source))
    return [d for d in task.domains if d in names]


def _load_domains(
    source: str, domains: list[str], cache_dir: str | None, options: dict
) -> datasets.DatasetDict:
    """The domain configs as one DatasetDict, domain after domain; each example's
    ``meta.domain`` says which (reports break scores down by it; the task score is the
    size-weighted mean). A config whose meta has no ``domain`` (a Hub copy) gets it."""
    datasets = _datasets()

    def with_domain(domain):
        return lambda meta: {"meta": {**meta, "domain": domain}}

    parts = {}
    for domain in domains:
        dsd = datasets.load_dataset(source, domain, cache_dir=cache_dir, **options)
        parts[domain] = (
            dsd
            if all("domain" in ds.features["meta"] for ds in dsd.values())
            else dsd.map(with_domain(domain), input_columns="meta")
        )
    splits = dict.fromkeys(split for dsd in parts.values() for split in dsd)
    return datasets.DatasetDict(
        {
            split: datasets.concatenate_datasets(
                [dsd[split] for dsd in parts.values() if split in dsd]
            )
            for split in splits
        }
    )


def normalize(task: TaskSpec, dsd: datasets.DatasetDict) -> datasets.DatasetDict:
    """Bring a loaded task to the project's schema (a no-op on the project's own exports)."""
    datasets = _datasets()
    try:
        from mera_multi_hf.data.builders import builder_class

        builder = builder_class(task)
    except MeraError:
        return dsd  # no declared schema yet for this task: leave it as published
    features = builder.loaded_features()
    out = {}
    for split, ds in dsd.items():
        if ds.features == builder.features():  # an export: the same data, other labels
            ds = relabelled(ds, features)
        if ds.features == features and not _missing_groups(task, ds):
            out[split] = ds
            continue
        out[split] = _normalize_split(task, builder, features, ds)
    return datasets.DatasetDict(out)


def _missing_groups(task: TaskSpec, ds: datasets.Dataset) -> bool:
    if not task.has_groups:
        return False
    return ds.data.column("meta").combine_chunks().field("group_id").null_count > 0


def _normalize_split(task, builder, features, ds):
    metas = [builder.normalize_meta(m) for m in ds.data.column("meta").to_pylist()]
    if task.has_groups and any(m["group_id"] is None for m in metas):
        inputs = ds.data.column("inputs").combine_chunks()
        columns = {name: inputs.field(name).to_pylist() for name in task.group_by}
        groups = GroupIds(task.group_by)
        for i, meta in enumerate(metas):
            groups.assign(meta, {name: values[i] for name, values in columns.items()})
    ds = ds.remove_columns("meta").add_column("meta", metas, feature=features["meta"])
    return ds.select_columns(list(features)).cast(features)
