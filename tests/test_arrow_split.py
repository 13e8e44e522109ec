"""A split read with pyarrow alone from the Arrow files `datasets` prepared is the split
`datasets` loads: the same flattened columns, examples, requests and fingerprint, for
every bundled sample task; the manifest is never trusted once its files change."""

from __future__ import annotations

import json
import os

import pytest

from mera_multi_hf.data.arrow_split import (
    MANIFEST,
    ArrowSplit,
    flat_columns,
    read_manifest,
    validity,
)
from mera_multi_hf.data.examples import make_examples
from mera_multi_hf.data.load_cache import arrow_cache_dir
from mera_multi_hf.data.loading import _prepared, load_split, load_task
from mera_multi_hf.demo.sample_data import SAMPLES
from mera_multi_hf.generation.request import build_requests


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_a_split_read_without_datasets_is_the_split_datasets_loads(key):
    dsd = load_task(key, "sample")
    first = load_split(key, "sample", "test")  # loads with datasets, writes the manifest
    _, source, _ = _prepared(key, "sample", None)
    cache_dir = arrow_cache_dir(source)
    assert cache_dir and os.path.isfile(os.path.join(cache_dir, MANIFEST))
    read = read_manifest(cache_dir)
    assert read is not None and set(read) == set(dsd)
    for split, ds in dsd.items():
        arrow = read[split]
        assert isinstance(arrow, ArrowSplit) and arrow._fingerprint == ds._fingerprint
        flat, columns = ds.flatten(), flat_columns(arrow)
        assert list(columns) == flat.column_names
        assert {c: columns[c].to_pylist() for c in columns} == {
            c: flat.data.column(c).to_pylist() for c in flat.column_names
        }
        task = dsd_task(key)
        examples = make_examples(task, ds)
        assert make_examples(task, arrow) == examples and len(examples) == len(ds)
        assert build_requests(task, examples, arrow, split) == build_requests(
            task, examples, ds, split
        )
    assert first._fingerprint == read["test"]._fingerprint
    assert make_examples(dsd_task(key), load_split(key, "sample", "test")) == make_examples(
        dsd_task(key), dsd["test"]
    )


def dsd_task(key):
    from mera_multi_hf.tasks.table import get_task

    return get_task(key)


def test_a_changed_cache_file_or_datasets_version_is_not_trusted(tmp_path):
    load_split("ruhhh_image", "sample", "test")
    _, source, _ = _prepared("ruhhh_image", "sample", None)
    path = os.path.join(arrow_cache_dir(source), MANIFEST)
    text = open(path, encoding="utf-8").read()
    manifest = json.loads(text)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dict(manifest, datasets="0.0.1"), f)  # written under another datasets
    assert read_manifest(arrow_cache_dir(source)) is None
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    assert read_manifest(arrow_cache_dir(source)) is not None
    name = manifest["splits"]["test"]["files"][0][0]
    with open(os.path.join(arrow_cache_dir(source), name), "ab") as f:
        f.write(b"\0")  # the file is no longer the one named
    assert read_manifest(arrow_cache_dir(source)) is None
    assert read_manifest(tmp_path) is None  # no manifest at all
    split = load_split("ruhhh_image", "sample", "test")  # loaded again with datasets
    assert len(split) == len(load_task("ruhhh_image", "sample", "test"))
    assert read_manifest(arrow_cache_dir(source)) is not None  # and named again


def test_limit_and_rows_read_as_datasets_reads_them():
    ds = load_task("ruclevr", "sample", "test").with_format("arrow")
    arrow = load_split("ruclevr", "sample", "test")
    assert arrow[[3, 1]].equals(ds[[3, 1]])
    assert arrow.select(range(2)).table.equals(ds.select(range(2))[:])
    assert arrow.select([2, 0]).table.equals(ds.select([2, 0])[:])


def test_validity_and_rows_agree_with_pyarrow_compute():
    import pyarrow as pa
    import pyarrow.compute as pc

    values = [
        None if i % 3 == 0 or i % 7 == 0 else {"bytes": b"x", "path": None} for i in range(50)
    ]
    kind = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    column = pa.chunked_array(
        [
            pa.array(values[:20], kind),
            pa.array(values[20:], kind).slice(3),
            pa.array([None, None], kind),
            pa.array([{"bytes": b"", "path": "p"}], kind),
        ]
    )
    assert validity(column) == pc.is_valid(column).to_pylist()
    for child in column.flatten():  # parent nulls carried into the children
        assert validity(child) == pc.is_valid(child).to_pylist()
    table = pa.table({"a": pa.chunked_array([pa.array(range(5)), pa.array(range(5, 9))])})
    split = ArrowSplit(table, {}, None)
    for rows in ([3, 4, 5, 6], [8, 0, 1], [], [2]):
        assert split[rows].column("a").to_pylist() == rows
    with pytest.raises(IndexError):
        split[[9]]


def test_a_damaged_manifest_is_ignored(tmp_path):
    load_split("ruclevr", "sample", "test")
    _, source, _ = _prepared("ruclevr", "sample", None)
    path = os.path.join(arrow_cache_dir(source), MANIFEST)
    good = open(path, encoding="utf-8").read()
    for bad in ("{", "[]", json.dumps(dict(json.loads(good), splits={"test": {"files": 3}}))):
        with open(path, "w", encoding="utf-8") as f:
            f.write(bad)
        assert read_manifest(arrow_cache_dir(source)) is None
        assert len(load_split("ruclevr", "sample", "test")) == 8  # through datasets again


def test_the_manifest_keeps_each_splits_content_hash():
    """A split's content hash (what a resume's data must be) is computed once, when the
    manifest is written, and read back with it: the hash of the rows `datasets` loads."""
    from mera_multi_hf.data.arrow_split import data_content

    first = load_split("ruclevr", "sample", "test")
    again = load_split("ruclevr", "sample", "test")
    assert first._content is not None and again._content is not None  # not hashed again
    rows = load_task("ruclevr", "sample")["test"].with_format("arrow")[:]
    assert first.content() == again.content() == data_content(rows)
    assert data_content(rows.slice(1)) != data_content(rows)
