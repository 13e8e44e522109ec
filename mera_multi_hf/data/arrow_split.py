"""A loaded split as plain Arrow, read without importing `datasets` (and pandas with it).

A run and `score` read a split's rows as Arrow tables, media undecoded, and record its
fingerprint. After `datasets` has prepared a local folder once, a manifest beside its
Arrow cache names, per split, the very Arrow files the loaded split is made of, its
loaded features and the fingerprint `datasets` gave it; later loads memory-map those
files with pyarrow alone: the same rows, the same fingerprint, a second faster.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa

from mera_multi_hf.core import json_read
from mera_multi_hf.core.provenance import installed_version
from mera_multi_hf.data.datasets_hook import fingerprint

MANIFEST = "mera-splits.json"
MANIFEST_FORMAT = 1


class ArrowSplit:
    """One split: its Arrow table, its features (as `datasets` serialises them) and the
    fingerprint `datasets` gave it. Read as a Dataset formatted as Arrow is read:
    ``split[[rows]]`` is an Arrow table (examples.arrow_view hands it on as it is)."""

    format = {"type": "arrow"}

    def __init__(self, table: pa.Table, features: dict, fingerprint: str | None):
        self.table, self.features, self._fingerprint = table, features, fingerprint

    @classmethod
    def of(cls, ds) -> ArrowSplit:
        """A `datasets.Dataset` (an ArrowSplit as it is): its rows in order, indices applied."""
        if isinstance(ds, ArrowSplit):
            return ds
        return cls(ds.with_format("arrow")[:], ds.features.to_dict(), fingerprint(ds))

    def __len__(self) -> int:
        return self.table.num_rows

    def __getitem__(self, rows) -> pa.Table:
        return _rows(self.table, rows)

    def select(self, rows) -> ArrowSplit:
        """These rows, in this order."""
        return ArrowSplit(_rows(self.table, rows), self.features, self._fingerprint)


def _rows(table: pa.Table, rows) -> pa.Table:
    """These rows of ``table`` as zero-copy slices, a run of consecutive rows in one:
    ``Table.take`` would import pyarrow.compute (a sixth of a second) and copy."""
    runs: list[list[int]] = []
    for row in rows:
        if not 0 <= row < table.num_rows:
            raise IndexError(f"row {row} is out of range (the split has {table.num_rows})")
        if runs and row == runs[-1][0] + runs[-1][1]:
            runs[-1][1] += 1
        else:
            runs.append([row, 1])
    if len(runs) == 1:
        return table.slice(*runs[0])
    return (
        pa.concat_tables([table.slice(start, n) for start, n in runs])
        if runs
        else table.slice(0, 0)
    )


# `datasets` media features with a ``decode`` flag (True unless stated)
DECODABLE = ("Image", "Audio", "Video", "Pdf", "Nifti")


def _kept_whole(feature) -> bool:
    """A media feature that decodes: `datasets` does not flatten its ``{bytes, path}``
    struct."""
    return (
        isinstance(feature, dict)
        and feature.get("_type") in DECODABLE
        and feature.get("decode", True)
    )


def validity(column: pa.ChunkedArray) -> list[bool]:
    """Per row, whether it holds a value (``is_valid`` read from the validity bitmaps,
    without pyarrow.compute)."""
    import numpy as np

    out: list[bool] = []
    for chunk in column.chunks:
        if chunk.null_count in (0, len(chunk)):
            out += [chunk.null_count == 0] * len(chunk)
            continue
        bits = np.unpackbits(np.frombuffer(chunk.buffers()[0], dtype=np.uint8), bitorder="little")
        out += bits[chunk.offset : chunk.offset + len(chunk)].astype(bool).tolist()
    return out


def flat_columns(split: ArrowSplit) -> dict[str, pa.ChunkedArray]:
    """The split's columns flattened as ``Dataset.flatten`` flattens them: every struct
    into ``parent.child`` columns (its nulls carried into the children), all the way
    down, except the structs of decodable media features."""
    out = {}

    def walk(name: str, column: pa.ChunkedArray, feature) -> None:
        if pa.types.is_struct(column.type) and not _kept_whole(feature):
            for field, child in zip(column.type, column.flatten()):
                walk(
                    f"{name}.{field.name}",
                    child,
                    feature.get(field.name) if isinstance(feature, dict) else None,
                )
        else:
            out[name] = column

    for name in split.table.column_names:
        walk(name, split.table.column(name), split.features.get(name))
    return out


def _datasets_version() -> str | None:
    return installed_version("datasets")  # without importing it


def read_manifest(cache_dir: str | Path) -> dict[str, ArrowSplit] | None:
    """The splits a manifest in ``cache_dir`` names, memory-mapped; None when there is
    none, it cannot be read, or it was written by another `datasets` or names a file no
    longer as it was."""
    try:
        manifest = json_read.read_file(Path(cache_dir) / MANIFEST)
        if (
            manifest.get("format") != MANIFEST_FORMAT
            or manifest.get("datasets") != _datasets_version()
        ):
            return None
        splits = {
            split: _open(Path(cache_dir), entry) for split, entry in manifest["splits"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError, pa.ArrowException):
        return None
    return None if None in splits.values() else splits


def _open(cache_dir: Path, entry: dict) -> ArrowSplit | None:
    paths = [cache_dir / name for name, *_ in entry["files"]]
    if any(_stamp(p) != stamp for p, (_, *stamp) in zip(paths, entry["files"])):
        return None
    tables = [_read_arrow(p) for p in paths]
    return ArrowSplit(
        pa.concat_tables(tables) if len(tables) > 1 else tables[0],
        entry["features"],
        entry["fingerprint"],
    )


def _files_of(ds, cache_dir: Path) -> list[str] | None:
    """The Arrow files (relative to ``cache_dir``) whose rows, in order, are the split as
    loaded; None when it is anything else (an indices mapping, a transformed table).
    Told by reading the files as a later load will and comparing them with the split
    `datasets` gives (public API only: ``cache_files`` and the Arrow format)."""
    paths = [Path(os.path.realpath(f["filename"])) for f in ds.cache_files]
    if not paths or not all(p.is_relative_to(cache_dir) for p in paths):
        return None
    try:
        tables = [_read_arrow(p) for p in paths]
        same = pa.concat_tables(tables).equals(ds.with_format("arrow")[:])
    except (OSError, pa.ArrowException):  # not one stream file, or other columns
        return None
    return [str(p.relative_to(cache_dir)) for p in paths] if same else None


def _read_arrow(path: Path) -> pa.Table:
    """An Arrow stream file memory-mapped, as `datasets` writes its cache files."""
    return pa.ipc.open_stream(pa.memory_map(str(path))).read_all().replace_schema_metadata()


def write_manifest(cache_dir: str | Path, dsd) -> None:
    """Name the Arrow files of each split of ``dsd`` (a DatasetDict just loaded from
    ``cache_dir``) for the next load; nothing when a split is not plain files."""
    cache_dir = Path(os.path.realpath(cache_dir))
    splits = {}
    for split, ds in dsd.items():
        files = _files_of(ds, cache_dir)
        if files is None:
            return
        splits[split] = {
            "files": [[f, *_stamp(cache_dir / f)] for f in files],
            "features": ds.features.to_dict(),
            "fingerprint": fingerprint(ds),
        }
    manifest = {"format": MANIFEST_FORMAT, "datasets": _datasets_version(), "splits": splits}
    from mera_multi_hf.core.outputs import cache_file

    try:
        cache_file(cache_dir / MANIFEST, json.dumps(manifest))  # seen whole or not at all
    except (OSError, ValueError):  # a read-only cache: the next load goes through `datasets`
        return


def _stamp(path: Path) -> list[int] | None:
    """A file's size and modification time (None: no such file)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]
