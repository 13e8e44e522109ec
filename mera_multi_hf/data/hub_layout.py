"""The export's configs built with datasets' own machinery and laid out as the Hub keeps
a task: ``data/<split>-*.parquet`` (one config), or for a domain-split task
``<domain>/<split>-*.parquet``, one config per domain.

A domain-split task's builder declares BUILDER_CONFIGS (``all`` and one per domain;
builder.MeraBuilder), and the export builds each domain config with
``download_and_prepare`` (Parquet, ``max_shard_size``), as ``push_to_hub(config_name=
domain)`` publishes them. The domain configs share one reading of the raw folder
(``MeraBuilder.raw``): a config's generator picks its domain's records before any media
is read, and a split file is parsed once for all of them, so every file is read and
decode-checked once per export, and ids stay unique across the domains. datasets names
a config's shards ``<builder>-<split>[-NNNNN-of-NNNNN].parquet``; they move to the Hub's
names here.
"""

from __future__ import annotations

import copy
from pathlib import Path

import datasets

from mera_multi_hf.core.errors import DataValidationError, MeraError
from mera_multi_hf.data.builder import ALL_DOMAINS
from mera_multi_hf.data.builders import builder_class
from mera_multi_hf.tasks.spec import TaskSpec


def build_configs(task: TaskSpec, raw_dir: Path, work: Path, size: int, raw_options: dict) -> dict:
    """Build the export's configs into ``work/prepared/<config>``: ``default`` (a task of
    one config) or one per domain. Returns config -> its builder (all holding the same
    ``raw``). Every problem of the raw folder is raised at once (DataValidationError),
    once every config has been read."""
    cls = builder_class(task)
    builders: dict = {}
    raw = None
    for name in task.domains or ("default",):
        builder = cls(
            config_name=name if task.domains else None,
            data_dir=str(Path(raw_dir).resolve()),
            cache_dir=str(work / "cache"),
        )
        builder.raw_options, builder.raw = raw_options, raw
        try:
            builder.download_and_prepare(
                output_dir=str(work / "prepared" / name), file_format="parquet", max_shard_size=size
            )
        except MeraError:
            raise
        except Exception:  # a record left out for its problems can fail a config's build
            if builder.raw is None or not builder.raw.problems:
                raise
        builders[name], raw = builder, builder.raw
    if raw.problems:
        raise DataValidationError(raw.problems, str(raw_dir))
    return builders


def stage_data(builders: dict, prepared: Path, staged: Path) -> dict:
    """Move each config's shards into the export under the Hub's names,
    ``data/<split>-NNNNN-of-NNNNN.parquet`` or ``<domain>/<split>-...``. Returns config ->
    split -> (rows, Arrow bytes); a domain without rows in a split has no such split, and
    one without rows at all no config."""
    configs: dict[str, dict] = {}
    for name, builder in builders.items():
        folder = staged / ("data" if name == "default" else name)
        for split, info in builder.info.splits.items():
            if not info.num_examples:
                continue
            shards = sorted((prepared / name).glob(f"*-{split}*.parquet"))
            folder.mkdir(parents=True, exist_ok=True)
            for i, shard in enumerate(shards):
                shard.rename(folder / f"{split}-{i:05d}-of-{len(shards):05d}.parquet")
            configs.setdefault(name, {})[split] = (info.num_examples, info.num_bytes)
    return configs


def joined_info(builders: dict, configs: dict) -> datasets.DatasetInfo:
    """The whole task's info: a single config's own, or for a domain-split task that of
    the default config ``all``, whose splits join the domain configs' (sizes added up)."""
    if "default" in builders:
        return builders["default"].info
    info = copy.deepcopy(next(iter(builders.values())).info)
    info.config_name = ALL_DOMAINS
    info.splits = datasets.SplitDict(dataset_name=info.dataset_name)
    for split in dict.fromkeys(s for splits in configs.values() for s in splits):
        sizes = [splits[split] for splits in configs.values() if split in splits]
        info.splits.add(
            datasets.SplitInfo(
                name=split,
                num_examples=sum(r for r, _ in sizes),
                num_bytes=sum(b for _, b in sizes),
            )
        )
    info.dataset_size = sum(split.num_bytes for split in info.splits.values())
    return info
