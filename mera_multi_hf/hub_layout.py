"""The built Parquet shards laid out as the Hub keeps a task: ``data/<split>-*.parquet``
(one config), or for a domain-split task ``<domain>/<split>-*.parquet`` per domain config.

Why the export keeps a writer of its own for domain shards: the builder declares
BUILDER_CONFIGS (``all`` and one per domain; builder.MeraBuilder), and a domain config
builds with datasets' own writer and ``max_shard_size``, but datasets writes a config's
shards into its cache as ``<builder>-<split>-NNNNN-of-NNNNN`` files, one
``download_and_prepare`` per config. Building each domain config would read and
decode-check the raw folder once per domain (the single-folder form keeps every domain
in one test.json) and still leave the shards to be moved and renamed; the export builds
``all`` once and routes its rows by ``meta.domain`` while streaming, so every file is
read once. Single-config tasks use datasets' shards as they are.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .errors import MeraError
from .tasks import TaskSpec

ROWS_PER_GROUP = 100  # Parquet row groups of media rows stay small (as datasets writes them)


class _ShardWriter:
    """The Parquet shards of one config's split: a new shard once ``size`` bytes are in."""

    def __init__(self, folder: Path, split: str, schema: pa.Schema, size: int):
        self.folder, self.split, self.schema, self.size = folder, split, schema, size
        self.parts: list[Path] = []
        self.writer, self.bytes, self.rows, self.nbytes = None, 0, 0, 0

    def write(self, table: pa.Table) -> None:
        if self.writer is None or self.bytes >= self.size:
            self._next()
        self.writer.write_table(table, row_group_size=ROWS_PER_GROUP)
        self.bytes += table.nbytes
        self.nbytes += table.nbytes
        self.rows += table.num_rows

    def _next(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.parts.append(self.folder / f".{self.split}-{len(self.parts)}.part")
        self.writer, self.bytes = pq.ParquetWriter(self.parts[-1], self.schema), 0

    def close(self) -> tuple[int, int]:
        """Name the shards ``<split>-NNNNN-of-NNNNN.parquet``; (rows, Arrow bytes) written."""
        self.writer.close()
        for i, part in enumerate(self.parts):
            part.rename(self.folder / f"{self.split}-{i:05d}-of-{len(self.parts):05d}.parquet")
        return self.rows, self.nbytes


def _domain_shards(task: TaskSpec, shards: list[Path], staged: Path, split: str,
                   size: int) -> dict:
    """Route one split's rows by ``meta.domain`` into ``<domain>/<split>-*.parquet``,
    streaming (a batch of rows in memory at a time); domain -> (rows, Arrow bytes)."""
    writers: dict[str, _ShardWriter] = {}
    for shard in shards:
        parquet = pq.ParquetFile(shard)
        for batch in parquet.iter_batches(batch_size=ROWS_PER_GROUP):
            table = pa.Table.from_batches([batch])
            names = pc.struct_field(table.column("meta"), "domain")
            for domain in pc.unique(names).to_pylist():
                if domain not in task.domains:  # the builder's normalize_meta must set it
                    raise MeraError(f"{task.key}: an example's meta.domain is {domain!r:.80}, "
                                    f"not one of the domain configs {', '.join(task.domains)}")
                if domain not in writers:
                    writers[domain] = _ShardWriter(staged / domain, split,
                                                   parquet.schema_arrow, size)
                writers[domain].write(table.filter(pc.equal(names, domain)))
    return {domain: writer.close() for domain, writer in writers.items()}


def stage_data(task: TaskSpec, info, prepared: Path, staged: Path, size: int) -> dict:
    """Move the built shards into the export, as the Hub lays the task out: one config
    (``data/<split>-NNNNN-of-NNNNN.parquet``) or, for a domain-split task, one config per
    domain (``<domain>/<split>-...``, as ``push_to_hub(config_name=domain)`` writes them).
    Returns config -> split -> (rows, Arrow bytes)."""
    configs: dict[str, dict] = {}
    for split in info.splits:
        shards = sorted(prepared.glob(f"*-{split}*.parquet"))
        if task.domains:
            for domain, sizes in _domain_shards(task, shards, staged, split, size).items():
                configs.setdefault(domain, {})[split] = sizes
            continue
        (staged / "data").mkdir(parents=True, exist_ok=True)
        for i, shard in enumerate(shards):
            shard.rename(staged / "data" / f"{split}-{i:05d}-of-{len(shards):05d}.parquet")
        configs.setdefault("default", {})[split] = (info.splits[split].num_examples,
                                                    info.splits[split].num_bytes)
    order = task.domains or ("default",)
    return {name: configs[name] for name in order if name in configs}
