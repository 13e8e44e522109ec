"""The build's decoding started early (data/media_prefetch): the same checks on the very
bytes written, the same problems and rows as a build in one process."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import DataValidationError, MeraError
from mera_multi_hf.core.limits import DEFAULT_LIMITS
from mera_multi_hf.data import media_checks
from mera_multi_hf.data.media_prefetch import prefetch
from mera_multi_hf.data.publish import export_raw
from mera_multi_hf.tasks.table import get_task

TASK = get_task("ruhhh_image")


def _pictures(raw: Path) -> list[Path]:
    return sorted((raw / "samples").iterdir())


def _damage(picture: Path) -> None:
    data = picture.read_bytes()
    picture.write_bytes(data[: len(data) // 2])  # a header that opens, data that ends early


def _problems(raw: Path, out: Path, **kwargs) -> list[str]:
    with pytest.raises(DataValidationError) as info:
        export_raw(TASK, raw, out, limits=DEFAULT_LIMITS, **kwargs)
    return sorted(str(problem) for problem in info.value.problems)


def _finished(early) -> None:
    """Wait until the early decoding has gone through every file."""
    for process in early._processes:
        process.join()


def test_damaged_pictures_are_reported_as_by_a_build_in_one_process(raw_sample, tmp_path):
    damaged = _pictures(raw_sample)[1:4]
    for picture in damaged:
        _damage(picture)
    alone = _problems(raw_sample, tmp_path / "alone", num_proc=1)
    with prefetch(TASK, raw_sample, DEFAULT_LIMITS, 2) as early:
        _finished(early)
        found = _problems(raw_sample, tmp_path / "early", prefetch=early)
    assert all("corrupt image" in problem for problem in alone)  # a picture may serve 2 records
    assert {p.name for p in damaged} == {p.name for p in damaged if any(p.name in x for x in alone)}
    assert found == alone


def test_a_file_changed_after_its_early_decode_is_judged_as_written(raw_sample, tmp_path):
    """The early result is for the bytes decoded then: a picture damaged since is found,
    one mended since builds."""
    mended, damaged = _pictures(raw_sample)[:2]
    good = mended.read_bytes()
    _damage(mended)
    with prefetch(TASK, raw_sample, DEFAULT_LIMITS, 2) as early:
        _finished(early)
        mended.write_bytes(good)
        _damage(damaged)
        found = _problems(raw_sample, tmp_path / "out", prefetch=early)
    assert found and all(damaged.name in x and "corrupt image" in x for x in found)


def test_the_default_build_writes_the_rows_of_a_build_in_one_process(raw_sample, tmp_path):
    for name, extra in (("alone", ["--num-proc", "1"]), ("early", ["--num-proc", "2"])):
        out = ["--out", str(tmp_path / name)]
        assert main(["build", "ruhhh_image", "--raw", str(raw_sample), *out, *extra]) == 0
    tables = [
        pq.read_table(tmp_path / name / "data" / "test-00000-of-00001.parquet")
        for name in ("alone", "early")
    ]
    assert tables[0].num_rows > 0 and tables[0].equals(tables[1])
    cards = [(tmp_path / name / "README.md").read_text() for name in ("alone", "early")]
    assert cards[0] == cards[1]


def _die(data, limits):
    os._exit(3)


def test_an_early_decoder_that_dies_is_a_one_line_error(raw_sample, tmp_path, monkeypatch):
    monkeypatch.setitem(media_checks.MEDIA_CHECKS, "image", _die)  # the forked processes' too
    with prefetch(TASK, raw_sample, DEFAULT_LIMITS, 2) as early:
        with pytest.raises(MeraError, match="a media decoder crashed"):
            export_raw(TASK, raw_sample, tmp_path / "out", prefetch=early)
    assert not (tmp_path / "out").exists()


def test_one_process_or_no_folder_starts_no_early_decoding(raw_sample, tmp_path):
    assert prefetch(TASK, raw_sample, DEFAULT_LIMITS, 1) is None
    assert prefetch(TASK, tmp_path / "missing", DEFAULT_LIMITS, 2) is None
