"""A set's files reach the disk before any is renamed into place, flushed together (each
in a thread): every file lands whole, no temporary is left, and a flush that fails stops
the set with its error rather than being lost in its thread."""

from __future__ import annotations

import os

import pytest

from mera_multi_hf.core.outputs import add_files
from mera_multi_hf.core.outputs.fs import _flush, _temp


def test_a_small_set_lands_whole_with_no_temporary_left(tmp_path):
    out = tmp_path / "reports"
    files = {f"r{i}.txt": f"file {i}\n" * (i + 1) for i in range(7)}
    add_files(out, {**files, "media/a.bin": b"\0" * 5000}, kind="report")
    for name, text in files.items():
        assert (out / name).read_text(encoding="utf-8") == text
    assert (out / "media/a.bin").read_bytes() == b"\0" * 5000
    assert not [p for p in out.rglob("*.partial")]


def test_a_flush_that_fails_raises_its_error(tmp_path):
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        made = {n: (folder, _temp(folder, n, b"data", 0o644), None) for n in ("a", "b", "c")}
        _flush(made)  # all there: flushed
        os.unlink(made["b"][1], dir_fd=folder)  # one gone before its flush
        with pytest.raises(FileNotFoundError):
            _flush(made)
    finally:
        os.close(folder)
