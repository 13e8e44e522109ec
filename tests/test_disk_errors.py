"""A full disk (ENOSPC), a read-only folder (EROFS) or a denied write (EACCES): one line
naming the path, and the previous outputs left exactly as they were.

Real conditions, not mocks: a small tmpfs filled to the last byte, then remounted
read-only (needs root and mount; skipped otherwise), and a folder without write
permission (for root, run with the power to write anywhere dropped by setpriv)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from test_build_hostile import tree_hash

from mera_multi_hf.cli.main import main


@pytest.fixture
def small_disk(tmp_path, monkeypatch):
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root and mount)")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(folder) -> None:
    with open(folder / "filler", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass


def _score(out, predictions, *extra) -> int:
    return main(
        [
            "score",
            "--task",
            "ruhhh_image",
            "--predictions",
            str(predictions),
            "--data",
            "sample",
            "--out",
            str(out),
            *extra,
        ]
    )


@pytest.fixture
def predictions(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"id": i, "prediction": "A"}) + "\n" for i in range(1, 27)))
    return path


def _one_line(capsys, path) -> str:
    err = capsys.readouterr().err
    # a folder that cannot be written is found by the preflight, a full disk while writing
    assert err.startswith("mera-multi: error: ") and "cannot write " in err, err
    assert err.count("\n") == 1, err
    assert str(path) in err and "Traceback" not in err
    return err


def test_a_full_disk_and_a_read_only_folder_leave_the_previous_outputs(
    small_disk, predictions, capsys
):
    out = small_disk / "scores"
    assert _score(out, predictions) == 0
    before = tree_hash(out)
    _fill(small_disk)
    capsys.readouterr()
    assert _score(out, predictions, "--em-mode", "strict") == 2
    assert "No space left" in _one_line(capsys, out)
    assert tree_hash(out) == before
    assert (
        main(["build", "ruhhh_image", "--raw", "sample", "--out", str(small_disk / "export")]) == 2
    )
    assert "space" in _one_line(capsys, small_disk)
    (small_disk / "filler").unlink()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    assert _score(out, predictions, "--em-mode", "strict") == 2
    assert "Read-only" in _one_line(capsys, out)
    assert tree_hash(out) == before


def _without_root_powers() -> list[str]:
    """A prefix that runs a command without the power to write anywhere: nothing for a
    user; for root, setpriv dropping CAP_DAC_OVERRIDE (skipped where it cannot)."""
    if os.geteuid() != 0:
        return []
    if (
        not shutil.which("setpriv")
        or subprocess.run(
            ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "true"],
            capture_output=True,
        ).returncode
        != 0
    ):
        pytest.skip("root may write into any folder and setpriv cannot drop that here")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def test_a_folder_without_write_permission(tmp_path, predictions):
    out = tmp_path / "scores"
    command = [
        sys.executable,
        "-m",
        "mera_multi_hf",
        "score",
        "--task",
        "ruhhh_image",
        "--predictions",
        str(predictions),
        "--data",
        "sample",
        "--out",
        str(out),
    ]
    env = dict(os.environ, HOME=str(tmp_path / "home"))
    prefix = _without_root_powers()
    assert subprocess.run(command, env=env, capture_output=True).returncode == 0
    before = tree_hash(out)
    out.chmod(0o555)
    try:
        done = subprocess.run(
            prefix + command + ["--em-mode", "strict"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        out.chmod(0o755)
    err = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert err.startswith("mera-multi: error: ") and f"cannot write {out}" in err, err
    assert "Permission denied" in err
    assert tree_hash(out) == before
