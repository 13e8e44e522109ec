"""A run killed (SIGKILL) at each point of writing its outputs loses nothing: the
rerun finishes with the outputs of an uninterrupted run, and at no moment does a
results.json vouch for a file of another run."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from mera_multi_hf.runner import run_evaluation

# Runs the CLI with write_atomic (or the rename inside it) ending the process at its
# Nth call: the real process, killed at a real point of its real output writing.
KILLER = """
import os, signal, sys
import mera_multi_hf.atomic as atomic
import mera_multi_hf.reports as reports
where, nth = sys.argv[1], int(sys.argv[2])
calls = [0]
def count_then_die(real):
    def wrapped(*args, **kwargs):
        calls[0] += 1
        if calls[0] == nth:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return wrapped
if where == "write":
    reports.write_atomic = count_then_die(atomic.write_atomic)
else:
    atomic.os.replace = count_then_die(os.replace)
from mera_multi_hf.cli import main
sys.exit(main(sys.argv[3:]))
"""
ARGS = ["evaluate", "--data", "sample", "--limit", "4", "--no-progress"]


def _consistent(out) -> bool:
    """No results.json, or one whose every listed file has the listed sha256."""
    if not (out / "results.json").exists():
        return True
    files = json.loads((out / "results.json").read_text())["run"]["files"]
    return all(hashlib.sha256((out / n).read_bytes()).hexdigest() == h for n, h in files.items())


def _outputs(out):
    doc = json.loads((out / "results.json").read_text())
    samples = [json.loads(x) for x in (out / "samples_ruhhh_image_test.jsonl").read_text().splitlines()]
    for record in samples:
        record.pop("time_s")  # timings differ between runs, nothing else may
    return doc["tasks"], sorted(doc["run"]["files"]), samples


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref")
    run_evaluation(data="sample", limit=4, output_dir=str(out), no_progress=True)
    return _outputs(out)


@pytest.mark.parametrize("where, nth", [("write", 1), ("write", 3), ("write", 4),
                                        ("rename", 2), ("rename", 4)])
def test_kill_while_writing_outputs_loses_nothing(reference, tmp_path, where, nth):
    out = tmp_path / "run"
    args = ARGS + ["--output-dir", str(out)]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    # a first full run, then a rerun with other scoring options is killed mid-write
    assert subprocess.run([sys.executable, "-c", KILLER, "none", "0", *args], env=env,
                          capture_output=True, timeout=300).returncode == 0
    killed = subprocess.run([sys.executable, "-c", KILLER, where, str(nth), *args,
                             "--em-mode", "strict"], env=env, capture_output=True, timeout=300)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert _consistent(out)
    done = subprocess.run([sys.executable, "-m", "mera_multi_hf", *args], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "generated now: 0" in done.stdout  # every answer survived the kill
    assert _consistent(out) and _outputs(out) == reference
    assert not list(out.glob(".*.partial"))
