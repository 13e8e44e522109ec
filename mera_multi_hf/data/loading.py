"""Load a MERA task from a raw folder, an exported folder or the Hub, always in one schema."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mera_multi_hf._version import __version__
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.limits import Limits
from mera_multi_hf.core.paths import cache_root
from mera_multi_hf.core.provenance import folder_fingerprint
from mera_multi_hf.data.raw.groups import GroupIds
from mera_multi_hf.tasks.table import TaskSpec, get_task

if TYPE_CHECKING:
    import datasets

    from mera_multi_hf.data.arrow_split import ArrowSplit

CACHE_FORMAT = 3  # raise when the exported layout of a raw folder changes
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


def resolve_source(task: TaskSpec, source: str | Path | None) -> str | Path:
    """The dataset location to read: ``None`` is the official Hub id, ``"sample"`` the
    raw sample bundled with the package."""
    if source is None:
        return task.hub_id
    if str(source) == "sample":
        from mera_multi_hf.demo.sample_data import bundled_sample

        return bundled_sample(task.key)  # a task without one is a MeraError naming those with one
    return source


def source_kind(source: str | Path) -> str:
    """'raw' (a raw MERA folder: test.json at the top, or in the official per-domain layout
    in a folder per domain), 'exported' (a Hub-layout folder) or 'hub' (a Hub id)."""
    path = Path(source).expanduser()
    if path.is_dir():
        return "raw" if _holds_test_json(path) else _exported_or_refused(path)
    if (
        path.exists()
        or str(source).startswith((".", "/", "~"))
        or "/" not in str(source)
        or path.parent.is_dir()
        and str(path.parent) not in ("", ".")
    ):
        from mera_multi_hf.core.offline import did_you_mean, nearby_names

        what = (
            "is a file, not a folder"
            if path.exists()
            else "is not a folder: it is a local path that does not exist (nor `sample`, nor a "
            "Hub id org/name)"
        )
        raise MeraError(
            f"dataset source {source!r} {what}"
            f"{did_you_mean(str(source), nearby_names(str(source)))}"
        )
    return "hub"


# What a folder without test.json is when it holds no dataset: (marker files, what it
# is, what to do); the first whose marker is present names it.
NOT_A_DATASET = (
    (
        ("raw_dataset_meta.json",),
        "an official MERA task folder without test.json (the "
        "official repository ships only raw_dataset_meta.json and samples/; the test and shots "
        "files live on the Hub)",
        "leave --data out to read the Hub copy, or give a raw folder "
        "with test.json (see docs/raw-format.md)",
    ),
    (
        ("results.json",),
        "a run folder (results, sample logs), not a dataset",
        "pass its sample log to `mera-multi score --predictions`, or look at it with "
        "`mera-multi view`; --data is the dataset it was run on",
    ),
    (
        ("app.py",),
        "a Hugging Face Space folder (app.py), not a dataset",
        "give the dataset it serves (a Hub id, a raw folder or an export)",
    ),
)


def _exported_or_refused(path: Path) -> str:
    """'exported' for a folder that may hold a dataset; one line naming what the folder
    is and what is missing for the known kinds that hold none."""
    names = {p.name for p in path.iterdir()}
    if any(
        n.endswith((".parquet", ".arrow")) or n in ("data", "dataset_dict.json") for n in names
    ) or "configs:" in _card(path):
        return "exported"
    if any(n.startswith("samples_") and n.endswith(".jsonl") for n in names) or any(
        (path / "logs").glob("samples-rank*.jsonl")
    ):
        names.add("results.json")  # sample logs: a run folder
    for markers, what, todo in NOT_A_DATASET:
        if names & set(markers):
            raise MeraError(
                f"{path} looks like {what}: it has no test.json (a raw MERA folder) "
                f"and no Parquet files (an export); {todo}"
            )
    if not names:
        raise MeraError(
            f"{path} is empty: a dataset source is a raw MERA folder (test.json), "
            f"a folder written by `mera-multi build`, a Hub id or `sample`"
        )
    return "exported"


def _card(path: Path) -> str:
    try:
        return (path / "README.md").read_text(encoding="utf-8", errors="replace")[:20000]
    except OSError:
        return ""


def check_hub_source(task: TaskSpec, repo_id: str) -> None:
    """With the Hub out of reach, a dataset that is not in the local cache stops here,
    in one line, instead of after the libraries' retries."""
    from mera_multi_hf.core.offline import DATA_ALTERNATIVE, in_hub_cache, offline_reason

    reason = offline_reason()
    if reason and not in_hub_cache(repo_id, "dataset"):
        raise MeraError(
            f"{task.key}: the dataset {repo_id} is no folder here, and as a Hub "
            f"id it is out of reach ({reason}) and not in the local cache: "
            f"{DATA_ALTERNATIVE}"
        )


# ---- whose data it is: features cannot tell tasks apart (CommonVideoQA and
# RealVideoQA share them), so the data's own words decide ----


def _name_key(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())  # ruHHH-Image = ruhhh_image


def _names(task: TaskSpec) -> set[str]:
    return {
        _name_key(n) for n in (task.dataset_name, task.key, task.class_name, *task.harness_names)
    }


def _card_header(folder: Path) -> dict:
    """The YAML header of an export's card ({} without one)."""
    import yaml

    parts = _card(folder).split("---\n")
    try:
        header = yaml.safe_load(parts[1]) if len(parts) > 2 and not parts[0].strip() else None
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
    folder = _raw_target(task, Path(source)) if kind == "raw" else Path(source).expanduser()
    header = _card_header(folder)
    tags = header.get("tags") if isinstance(header.get("tags"), list) else []
    return header.get("license_name") == PRIVATE_LICENSE_NAME or INTERNAL_TAG in tags


def _holds_test_json(path: Path) -> bool:
    if os.path.lexists(path / "test.json"):
        return True
    with os.scandir(path) as entries:
        return any(
            e.is_dir() and os.path.lexists(os.path.join(e.path, "test.json")) for e in entries
        )


def _folder_fingerprint(root: Path) -> str:
    """The folder's place and the names, sizes and times of its files, with the package
    version and the cache format: a cache made by other code or from other files is not
    reused."""
    root = Path(root).expanduser().resolve()
    return folder_fingerprint(root, salt=f"{__version__}:{CACHE_FORMAT}:{root}", times=True)


def load_task(
    task: str | TaskSpec,
    source: str | Path | None = None,
    split: str | None = None,
    *,
    limits: Limits | None = None,
):
    """The task as a DatasetDict (splits ``test`` and ``shots``), or one split.

    ``source``: a raw MERA folder (single-folder or per-domain layout), a folder exported
    by ``mera-multi build``, a Hub dataset id (default: the task's official id) or
    ``"sample"`` (the bundled sample). Whatever the source, the schema is the package's
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
    cache_dir = _cache_dir(source)
    splits = read_manifest(cache_dir) if cache_dir else None
    if splits is None:
        dsd = _load(task, source, kind)
        if cache_dir:
            write_manifest(cache_dir, dsd)
        splits = dsd
    return ArrowSplit.of(_pick(task, source, splits, split))


def _prepared(task, source, limits) -> tuple[TaskSpec, str | Path, str]:
    """(task, the source to read, its kind): a raw folder converted once into the cache
    (its export is what is read), a Hub id checked to be within reach."""
    task = task if isinstance(task, TaskSpec) else get_task(task)
    source = resolve_source(task, source)
    kind = source_kind(source)
    if kind == "hub":
        check_hub_source(task, str(source))
    if kind == "raw":
        from mera_multi_hf.core.outputs import cache_lock

        target = _raw_target(task, source)
        # One process converts, concurrent ones wait and read (several runs may share a
        # fresh cache). The cache keeps a private split's answers: local scoring needs
        # them, and the cache is never published.
        with cache_lock(target.parent / f"{target.name}.lock"):
            if not (target / "README.md").is_file():
                from mera_multi_hf.data.publish import export_raw

                with _one_line(
                    task,
                    source,
                    "preparing {task} from {source} (once: then it is read from the cache)",
                ):
                    export_raw(task, source, target, include_private_answers=True, limits=limits)
        source = target
    return task, source, kind


def _raw_target(task: TaskSpec, source) -> Path:
    """Where a raw folder's export is kept in the cache (one per task and content)."""
    return cache_root() / "raw" / f"{task.key}-{_folder_fingerprint(Path(source))}"


def _load(task: TaskSpec, source, kind: str) -> datasets.DatasetDict:
    """The source loaded and normalised; a local folder's bars give way to one line (a
    raw folder's was said when it was prepared), a Hub download keeps its own."""
    if kind == "hub":
        return normalize(task, _read(task, source))
    with _one_line(task, source, "reading {task} from {source}" if kind == "exported" else ""):
        return normalize(task, _read(task, source))


@contextlib.contextmanager
def _one_line(task: TaskSpec, source, line: str):
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


def _cache_dir(source) -> str | None:
    """Where ``load_dataset`` keeps a local folder's prepared Arrow files: one place per
    folder and content. ``datasets`` itself keys a folder whose card has a ``configs:``
    block by the folder's name and the relative file patterns only, so two equally named
    folders (two ``export/`` folders in different places) would share one cache entry and
    the second would silently load the first one's data. None (the default cache) for a
    Hub id."""
    path = Path(source).expanduser()
    return str(cache_root() / "datasets" / _folder_fingerprint(path)) if path.is_dir() else None


def _read(task: TaskSpec, source) -> datasets.DatasetDict:
    """``load_dataset`` on the source."""
    datasets = _datasets()
    try:
        cache_dir = _cache_dir(source)
        domains = _domain_configs(task, str(source))
        if domains:
            return _load_domains(str(source), domains, cache_dir)
        return datasets.load_dataset(str(source), cache_dir=cache_dir)
    except MeraError:
        raise
    except (FileNotFoundError, ValueError, ConnectionError) as err:
        raise MeraError(f"cannot load {task.key} from {source}: {err}") from None


def _domain_configs(task: TaskSpec, source: str) -> list[str]:
    """The task's domain configs the source publishes (as the Hub copies and this
    project's exports do), in the task's order; empty for a single-config source."""
    if not task.domains:
        return []
    names = set(_datasets().get_dataset_config_names(source))
    return [d for d in task.domains if d in names]


def _load_domains(source: str, domains: list[str], cache_dir: str | None) -> datasets.DatasetDict:
    """The domain configs as one DatasetDict, domain after domain; each example's
    ``meta.domain`` says which (reports break scores down by it; the task score is the
    size-weighted mean). A config whose meta has no ``domain`` (a Hub copy) gets it."""
    datasets = _datasets()

    def with_domain(domain):
        return lambda meta: {"meta": {**meta, "domain": domain}}

    parts = {}
    for domain in domains:
        dsd = datasets.load_dataset(source, domain, cache_dir=cache_dir)
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
            ds = _relabel(ds, features)
        if ds.features == features and not _missing_groups(task, ds):
            out[split] = ds
            continue
        out[split] = _normalize_split(task, builder, features, ds)
    return datasets.DatasetDict(out)


def _relabel(ds: datasets.Dataset, features: datasets.Features) -> datasets.Dataset:
    """``ds`` under other media labels (decode flags) on the very same Arrow data: no
    copy, unlike ``Dataset.cast``."""
    import copy

    import datasets
    from datasets.fingerprint import Hasher

    info = copy.deepcopy(ds.info)
    info.features = features
    return datasets.Dataset(
        ds.data,
        info=info,
        split=ds.split,
        indices_table=ds._indices,
        fingerprint=Hasher.hash([ds._fingerprint, "loaded media labels"]),
    )


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
