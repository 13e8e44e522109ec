"""A command killed (SIGKILL) at each point of writing its outputs loses nothing: the
rerun finishes with the outputs of an uninterrupted run, at no moment does a
results.json vouch for a file of another run, and nothing beside the outputs is touched.
For evaluate, score, metrics export and judge train."""
from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mera_multi_hf.runner import run_evaluation

# Runs the CLI with write_atomic (or the rename inside it) ending the process at its
# Nth call: the real process, killed at a real point of its real output writing.
KILLER = """
import os, signal, sys
import mera_multi_hf.outputs as outputs
where, nth = sys.argv[1], int(sys.argv[2])
calls = [0]
def count_then_die(real):
    def wrapped(*args, **kwargs):
        calls[0] += 1
        if calls[0] == nth:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return wrapped
if where == "write":  # the temporaries of a set of outputs (the marker's first)
    outputs._temp = count_then_die(outputs._temp)
elif where == "rename":  # each rename into place
    os.replace = count_then_die(os.replace)
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


# ---- score, metrics export, judge train: random kill points, seeded ----

def _files(out) -> dict[str, str]:
    """Every output file's sha256, less the marker (it names its folder), the lock and the
    Trainer's pickled arguments (they name the temporary folder of each run)."""
    skip = {".mera-multi-outputs.json", ".mera-multi.lock", "training_args.bin"}
    files = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file() and p.name not in skip):
        data = path.read_bytes()
        if path.name == "results.json":  # its run id, time and command are the run's own
            data = json.dumps(json.loads(data)["tasks"], sort_keys=True).encode()
        elif path.suffix == ".zip":  # members, not their timestamps
            import zipfile

            with zipfile.ZipFile(path) as zf:
                data = json.dumps({n: zf.read(n).hex() for n in zf.namelist()}).encode()
        elif path.name == "results.md":
            data = b"".join(x for x in data.splitlines(True) if not x.startswith(b"Run `"))
        files[str(path.relative_to(out))] = hashlib.sha256(data).hexdigest()
    return files


@pytest.fixture(scope="module")
def command_args(tmp_path_factory):
    from tiny_judge import build_tiny_judge

    root = tmp_path_factory.mktemp("inputs")
    predictions = root / "p.jsonl"
    predictions.write_text("".join(json.dumps({"id": i, "prediction": "AB"[i % 2]}) + "\n"
                                   for i in range(1, 27)))
    labelled = root / "labelled.jsonl"
    labelled.write_text("".join(json.dumps({"prompt": f"Вопрос {i}?", "gold": "да",
                                            "prediction": "да" if i % 2 else "нет",
                                            "label": i % 2}) + "\n" for i in range(8)))
    judge = build_tiny_judge(root / "judge")
    return {
        "score": (["score", "--task", "ruhhh_image", "--predictions", str(predictions),
                   "--data", "sample"], ["--em-mode", "strict"]),
        "metrics": (["metrics", "export"], ["--namespace", "someone"]),
        "train": (["judge", "train", "--data", str(labelled), "--base", str(judge),
                   "--device", "cpu", "--batch-size", "4"], ["--seed", "1"]),
    }


# One warm process per command: the uninterrupted reference, then for each kill point a
# first run, a rerun with other options killed at that point (a forked child, SIGKILLed
# at a real call of its real output writing), and the rerun that must finish the job.
SEQUENCE = """
import json, os, signal, sys
import mera_multi_hf.outputs as outputs
from mera_multi_hf.cli import main
args, other, root, points = json.loads(sys.argv[1])
real_temp, real_replace = outputs._temp, os.replace
def die_at(real, nth):
    calls = [0]
    def wrapped(*a, **k):
        calls[0] += 1
        if calls[0] == nth:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*a, **k)
    return wrapped
report = {"reference": main(args + ["--out", root + "/reference"] + other)}
for where, nth in points:
    out = f"{root}/{where}-{nth}"
    report[out] = [main(args + ["--out", out])]
    pid = os.fork()
    if pid == 0:
        if where == "write":
            outputs._temp = die_at(real_temp, nth)
        else:
            os.replace = die_at(real_replace, nth)
        os._exit(main(args + ["--out", out] + other))
    report[out].append(os.waitpid(pid, 0)[1])
    report[out].append(main(args + ["--out", out] + other))
print(json.dumps(report))
"""


@pytest.mark.parametrize("command", ["score", "metrics", "train"])
def test_kill_score_metrics_export_and_judge_train(command_args, tmp_path, command):
    args, other = command_args[command]
    rng = random.Random(command)  # random kill points, the same on every run
    points = [("write", rng.randint(1, 3)), ("rename", rng.randint(1, 4))]
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    (decoy / "notes.txt").write_text("mine")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", SEQUENCE,
                           json.dumps([args, other, str(tmp_path), points])],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report.pop("reference") == 0
    reference = _files(tmp_path / "reference")
    for out, (first, killed, rerun) in report.items():
        assert (first, rerun) == (0, 0) and os.WIFSIGNALED(killed), (out, first, killed, rerun)
        assert os.WTERMSIG(killed) == signal.SIGKILL
        assert _files(Path(out)) == reference, out
        assert not list(Path(out).rglob(".*.partial"))
    assert (decoy / "notes.txt").read_text() == "mine" and len(list(decoy.iterdir())) == 1
