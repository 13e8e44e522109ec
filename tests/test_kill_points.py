"""A command killed (SIGKILL) at each point of writing its outputs loses nothing: the
rerun finishes with the outputs of an uninterrupted run, at no moment does a
results.json vouch for a file of another run, and nothing beside the outputs is touched.
For evaluate, score, metrics export and judge train."""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

# One warm process per command (the imports paid once): the uninterrupted reference,
# then for each kill point a first run with other options, a run killed at that point (a
# forked child, SIGKILLed at the Nth call of a real step of its real output writing: a
# temporary, or a rename into place), and the rerun that must finish the job.
SEQUENCE = """
import hashlib, json, os, signal, sys
import mera_multi_hf.core.outputs.folder as outputs  # its temporaries: the kill points
from mera_multi_hf.cli.main import main
args, flag, other, root, points = json.loads(sys.argv[1])
real_temp, real_replace = outputs._temp, os.replace
def die_at(real, nth):
    calls = [0]
    def wrapped(*a, **k):
        calls[0] += 1
        if calls[0] == nth:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*a, **k)
    return wrapped
def consistent(out):
    try:
        files = json.load(open(os.path.join(out, "results.json")))["run"]["files"]
    except FileNotFoundError:
        return True
    return all(hashlib.sha256(open(os.path.join(out, n), "rb").read()).hexdigest() == h
               for n, h in files.items())
def log(out):
    path = os.path.join(out, "logs", "samples-rank0.jsonl")
    return open(path, "rb").read().decode() if os.path.exists(path) else None
report = {"reference": main(args + [flag, root + "/reference"])}
for where, nth in points:
    out = f"{root}/{where}-{nth}"
    first = main(args + [flag, out] + other)
    before = log(out)
    pid = os.fork()
    if pid == 0:
        if where == "write":
            outputs._temp = die_at(real_temp, nth)
        else:
            os.replace = die_at(real_replace, nth)
        os._exit(main(args + [flag, out]))
    killed = os.waitpid(pid, 0)[1]
    report[out] = [first, killed, consistent(out), main(args + [flag, out]), consistent(out),
                   before == log(out)]
print(json.dumps(report))
"""
SKIP = {".mera-multi-outputs.json", ".mera-multi.lock", "training_args.bin"}


def _normal(name: str, data: bytes) -> bytes:
    """A file's bytes less what differs between two equal runs: the run id, time and
    command of results.json/.md, zip timestamps, per-line timings of the sample files."""
    if name.endswith("results.json"):
        return json.dumps(json.loads(data)["tasks"], sort_keys=True).encode()
    if name.endswith("run_manifest.json"):  # the sessions (times, commands) differ
        doc = json.loads(data)
        return json.dumps([doc["fixed"], doc["tasks"]], sort_keys=True).encode()
    if name.endswith("results.md"):
        return b"".join(x for x in data.splitlines(True) if not x.startswith(b"Run `"))
    if name.endswith("results.html"):
        return b"".join(x for x in data.splitlines(True) if b"Run <code>" not in x)
    if name.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return json.dumps({n: _normal(n, zf.read(n)).hex() for n in zf.namelist()}).encode()
    if name.endswith(".jsonl"):
        lines = [json.loads(x) for x in data.splitlines()]
        return json.dumps([{k: v for k, v in x.items() if k != "time_s"} for x in lines]).encode()
    return data


def _files(out: Path) -> dict[str, str]:
    """Every output file's sha256 (normalised), less the marker (it names its folder),
    the lock and the Trainer's pickled arguments (they name each run's temporary folder)."""
    return {
        str(p.relative_to(out)): hashlib.sha256(_normal(p.name, p.read_bytes())).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name not in SKIP
    }


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    from tiny_judge import build_tiny_judge

    root = tmp_path_factory.mktemp("inputs")
    predictions = root / "p.jsonl"
    predictions.write_text(
        "".join(json.dumps({"id": i, "prediction": "AB"[i % 2]}) + "\n" for i in range(1, 27))
    )
    labelled = root / "labelled.jsonl"
    labelled.write_text(
        "".join(
            json.dumps(
                {
                    "prompt": f"Вопрос {i}?",
                    "gold": "да",
                    "prediction": "да" if i % 2 else "нет",
                    "label": i % 2,
                }
            )
            + "\n"
            for i in range(8)
        )
    )
    judge = build_tiny_judge(root / "judge")
    # command -> (arguments, output flag, other options of the first run)
    return {
        "evaluate": (
            ["evaluate", "--data", "sample", "--limit", "4", "--no-progress"],
            "--output-dir",
            ["--em-mode", "strict"],
        ),
        "score": (
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(predictions),
                "--data",
                "sample",
            ],
            "--out",
            ["--em-mode", "strict"],
        ),
        "metrics": (["metrics", "export"], "--out", ["--namespace", "someone"]),
        "train": (
            [
                "judge",
                "train",
                "--data",
                str(labelled),
                "--base",
                str(judge),
                "--device",
                "cpu",
                "--batch-size",
                "4",
            ],
            "--out",
            ["--seed", "1"],
        ),
    }


# The fixed points where evaluate was first killed, then seeded random ones. evaluate's
# writes: the claim's marker (write 1, rename 1); the manifest, put before generation
# (writes 2-3, renames 2-3: its marker, then itself) and after it (4-5); then the set.
POINTS = {
    "evaluate": [
        ("write", 1),
        ("write", 3),
        ("write", 5),
        ("write", 7),
        ("write", 8),
        ("rename", 3),
        ("rename", 6),
        ("rename", 8),
    ]
}


@pytest.mark.parametrize("command", ["evaluate", "score", "metrics", "train"])
def test_a_kill_at_any_point_loses_nothing_and_touches_nothing_else(commands, tmp_path, command):
    args, flag, other = commands[command]
    rng = random.Random(command)
    points = POINTS.get(command) or [("write", rng.randint(1, 3)), ("rename", rng.randint(1, 4))]
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    (decoy / "notes.txt").write_text("mine")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", SEQUENCE, json.dumps([args, flag, other, str(tmp_path), points])],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report.pop("reference") == 0
    reference = _files(tmp_path / "reference")
    assert len(report) == len(points)
    for out, (first, killed, after_kill, rerun, after_rerun, same_log) in report.items():
        assert (first, rerun) == (0, 0), out
        assert os.WIFSIGNALED(killed) and os.WTERMSIG(killed) == signal.SIGKILL, out
        assert after_kill and after_rerun, out  # results.json never vouches for another run
        assert same_log, out  # no answer was generated again: the sample log survived
        assert _files(Path(out)) == reference, out
        assert not list(Path(out).rglob(".*.partial"))
    assert (decoy / "notes.txt").read_text() == "mine" and len(list(decoy.iterdir())) == 1
