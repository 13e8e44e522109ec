"""How `build` writes: a writer batch at a time as one Arrow table, the same rows datasets'
own per-example encoding gives; its decoding workers below the reading process."""

from __future__ import annotations

import copy
import functools
import os

import datasets
import pyarrow as pa
import pytest

from mera_multi_hf.data.builder import encoded_table
from mera_multi_hf.data.builders import builder_class
from mera_multi_hf.data.media_checks import BATCH, WORKER_NICENESS, check_all
from mera_multi_hf.data.raw import RawDataset
from mera_multi_hf.demo.sample_data import bundled_sample
from mera_multi_hf.tasks.table import TASKS


def _by_datasets(features: datasets.Features, rows: list) -> pa.Table:
    """What datasets' example-by-example writer makes of the rows (encode_example, then
    its typed columns), written to an in-memory Arrow stream and read back."""
    sink = pa.BufferOutputStream()
    with datasets.arrow_writer.ArrowWriter(features=features, stream=sink) as writer:
        for row in rows:
            writer.write(features.encode_example(row))
        writer.finalize()
    return pa.ipc.open_stream(sink.getvalue()).read_all()


@pytest.mark.parametrize("key", sorted(TASKS))
def test_a_batch_table_holds_what_datasets_per_example_encoding_writes(key):
    task = TASKS[key]
    cls = builder_class(task)
    raw = RawDataset(task, bundled_sample(key), cls.checked_meta)
    rows = [example for split in raw.splits() for example in raw.records(split)]
    features = cls.features()
    expected = _by_datasets(features, copy.deepcopy(rows))
    table = encoded_table(features, task.media_fields, rows)
    assert table.num_rows == len(rows) > 0
    assert table.to_pylist() == expected.to_pylist()
    assert table.schema.remove_metadata() == expected.schema.remove_metadata()


def test_a_value_arrow_refuses_goes_through_datasets_encoding():
    """An id given as a string of digits: Arrow refuses it for an int32 column, datasets'
    encoding turns it into the number; the table holds what datasets would write."""
    task = TASKS["ruhhh_image"]
    cls = builder_class(task)
    raw = RawDataset(task, bundled_sample(task.key), cls.checked_meta)
    rows = list(raw.records("test"))[:3]
    rows[1]["meta"]["id"] = str(rows[1]["meta"]["id"])
    features = cls.features()
    expected = _by_datasets(features, copy.deepcopy(rows))
    table = encoded_table(features, task.media_fields, rows)
    assert table.to_pylist() == expected.to_pylist()
    assert isinstance(table.to_pylist()[1]["meta"]["id"], int)


def _niceness(_item) -> int:
    return os.nice(0)


def test_decoding_workers_run_below_the_reading_process():
    """The reading process sets the build's pace; its workers take what it leaves."""
    items = range(3 * BATCH)  # more than one batch: the worker processes start
    found = list(check_all(items, lambda item: [functools.partial(_niceness, item)], workers=2))
    assert [item for item, _ in found] == list(items)
    here = os.nice(0)
    assert {results[0] for _, results in found} == {min(here + WORKER_NICENESS, 19)}
