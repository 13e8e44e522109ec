"""A loaded split as plain Arrow, read without importing `datasets` (and pandas with it).

A run and `score` read a split's rows as Arrow tables, media undecoded, and record its
fingerprint. After `datasets` has prepared a local folder once, a manifest beside its
Arrow cache names, per split, the very Arrow files the loaded split is made of, its
loaded features and the fingerprint `datasets` gave it; later loads memory-map those
files with pyarrow alone: the same rows, the same fingerprint, a second faster.

The maps are this module's own (``mmap``), so the pages of media already read can be
handed back (:meth:`ArrowSplit.release`): a page of a mapped file stays in the process's
resident set once read, and a run reads every medium of every split; handed back after
each chunk, the resident set stays at a chunk's media whatever the splits' size. Read
request by request (:meth:`ArrowSplit.pages_read`), they go back once
:data:`RELEASE_BYTES` have been mapped in since the last time: a hand-back per request
cost more than the request's reading.
"""

from __future__ import annotations

import json
import mmap
import os
from pathlib import Path

import pyarrow as pa

from mera_multi_hf.core import json_read
from mera_multi_hf.core.input_files import open_binary
from mera_multi_hf.core.provenance import installed_version
from mera_multi_hf.data.datasets_hook import fingerprint

MANIFEST = "mera-splits.json"
MANIFEST_FORMAT = 2  # 2: each split's content hash (data_content) recorded
# the most of a mapped split's pages that reading request by request leaves resident
RELEASE_BYTES = 8 * 1024 * 1024
PAGE = mmap.PAGESIZE


class ArrowSplit:
    """One split: its Arrow table, its features (as `datasets` serialises them) and the
    fingerprint `datasets` gave it. Read as a Dataset formatted as Arrow is read:
    ``split[[rows]]`` is an Arrow table (examples.arrow_view hands it on as it is)."""

    format = {"type": "arrow"}

    def __init__(
        self,
        table: pa.Table,
        features: dict,
        fingerprint: str | None,
        content: str | None = None,
        maps: tuple = (),
    ):
        self.table, self.features, self._fingerprint = table, features, fingerprint
        self._content = content  # data_content of these rows, when the manifest recorded it
        self.maps = maps  # the mmaps the table's buffers live in (none: `datasets`' own)
        self._mapped_in = 0  # bytes read from the maps since their pages last went back

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
        return ArrowSplit(_rows(self.table, rows), self.features, self._fingerprint, maps=self.maps)

    def release(self) -> None:
        """Hand back the resident pages of the mapped files (the rows read so far): they
        stay in the page cache, and a later read maps them in again."""
        for mapped in self.maps:
            mapped.madvise(mmap.MADV_DONTNEED)
        self._mapped_in = 0

    def pages_read(self, sizes: list[int]) -> None:
        """Note values of these sizes copied out of the maps (each counted with a page
        more: its first and last pages may be partly its); the pages go back once
        RELEASE_BYTES have come in since they last did."""
        self._mapped_in += sum(sizes) + PAGE * len(sizes)
        if self._mapped_in >= RELEASE_BYTES:
            self.release()

    def content(self) -> str:
        """sha256 of the rows (:func:`data_content`), hashed once per prepared split: the
        manifest keeps it with the files it was computed from."""
        if self._content is None:
            self._content = data_content(self.table, release=self.release)
        return self._content


def data_content(table: pa.Table, rows: int = 64, release=None) -> str:
    """sha256 of a split's rows, as Arrow writes them in slices of ``rows`` (however the
    table is chunked or mapped): the same data read from anywhere (a raw folder moved, a
    run resumed on another machine) hashes the same, unlike the fingerprint `datasets`
    gives it, which holds the files' places. ``release``: called after each slice (a
    mapped split hands its pages back)."""
    import hashlib

    table = table.replace_schema_metadata(None)
    digest = hashlib.sha256()
    for start in range(0, table.num_rows, rows):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table.slice(start, rows).combine_chunks())
        digest.update(sink.getvalue())
        if release is not None:
            release()
    return digest.hexdigest()


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
    return _mapped(paths, entry["features"], entry["fingerprint"], entry["content"])


def _mapped(paths: list[Path], features: dict, fingerprint, content=None) -> ArrowSplit:
    """The Arrow stream files (as `datasets` writes its cache files) as one split,
    memory-mapped by this module (their pages can be handed back)."""
    tables, maps = [], []
    for path in paths:
        with open_binary(path) as fh:
            maps.append(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
        tables.append(pa.ipc.open_stream(pa.py_buffer(maps[-1])).read_all())
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return ArrowSplit(table.replace_schema_metadata(), features, fingerprint, content, tuple(maps))


def _files_of(ds, cache_dir: Path) -> tuple[list[str], str] | None:
    """The Arrow files (relative to ``cache_dir``) whose rows, in order, are the split as
    loaded, and the content hash of those rows; None when it is anything else (an
    indices mapping, a transformed table). Told by reading the files as a later load
    will and comparing them with the split `datasets` gives (public API only:
    ``cache_files`` and the Arrow format): every value but the media's bytes, which are
    compared by their lengths (reading them would keep every page of `datasets`' own map
    of the split resident; a reordering or a transform changes the other values too)."""
    paths = [Path(os.path.realpath(f["filename"])) for f in ds.cache_files]
    if not paths or not all(p.is_relative_to(cache_dir) for p in paths):
        return None
    try:
        mine = _mapped(paths, {}, None)
        same = _skeleton(mine.table).equals(_skeleton(ds.with_format("arrow")[:]))
    except (OSError, ValueError, pa.ArrowException):  # not one stream file, or other columns
        return None
    if not same:
        return None
    return [str(p.relative_to(cache_dir)) for p in paths], mine.content()


def _skeleton(table: pa.Table) -> pa.Table:
    """``table`` flattened to its leaves, each binary ``bytes`` leaf (a medium's) as the
    lengths of its values: read from the offsets, the bytes themselves untouched."""
    import pyarrow.compute as pc

    table = table.replace_schema_metadata(None)
    while any(pa.types.is_struct(field.type) for field in table.schema):
        table = table.flatten()
    for i, field in enumerate(table.schema):
        binary = pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type)
        if binary and field.name.endswith(".bytes"):
            table = table.set_column(i, field.name, pc.binary_length(table.column(i)))
    return table


def write_manifest(cache_dir: str | Path, dsd) -> None:
    """Name the Arrow files of each split of ``dsd`` (a DatasetDict just loaded from
    ``cache_dir``) for the next load; nothing when a split is not plain files."""
    cache_dir = Path(os.path.realpath(cache_dir))
    splits = {}
    for split, ds in dsd.items():
        found = _files_of(ds, cache_dir)
        if found is None:
            return
        files, content = found
        splits[split] = {
            "files": [[f, *_stamp(cache_dir / f)] for f in files],
            "features": ds.features.to_dict(),
            "fingerprint": fingerprint(ds),
            "content": content,
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
