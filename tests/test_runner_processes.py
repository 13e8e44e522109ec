"""The runner as separate processes: killed with SIGKILL and resumed; data parallel
with two CPU processes under `accelerate launch` and with `--processes 2`; resuming with
another number of processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter

import pytest

from mera_multi_hf.demo.sample_data import bundled_sample
from mera_multi_hf.pipeline.evaluate import run_evaluation

SAMPLE_IDS = sorted(
    r["meta"]["id"]
    for r in json.loads((bundled_sample() / "test.json").read_text(encoding="utf-8"))["data"]
)


def _env():
    # CPU only, also on a GPU machine: two processes must not fight over one device
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", CUDA_VISIBLE_DEVICES="")
    env.pop("ACCELERATE_USE_CPU", None)
    return env


def _evaluate(*args):
    return [sys.executable, "-m", "mera_multi_hf", "evaluate", "--no-progress", *args]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two_processes(*args):
    """`accelerate launch` with two processes; on a machine without GPUs they join over
    gloo (`--cpu` would start only one: accelerate leaves multi-CPU to mpirun)."""
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_ip",
        "127.0.0.1",
        "--main_process_port",
        str(_free_port()),
        "-m",
        "mera_multi_hf",
        "evaluate",
        "--no-progress",
        *args,
    ]


# a launcher of two sleeping processes that prints their pids, then supervises them
LAUNCH_SLEEPERS = """
import subprocess, sys, threading
from mera_multi_hf.generation.launch import supervise
ranks = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) for _ in range(2)]
threading.Timer(0.5, lambda: print(*[r.pid for r in ranks], flush=True)).start()  # supervised by then
sys.exit(supervise(ranks))
"""


def _processes_option(*args):
    """`mera-multi evaluate --processes 2`: the command starts its two processes itself."""
    return [*_evaluate(*args), "--processes", "2"]


def _complete_lines(out):
    lines = []
    for shard in sorted((out / "logs").glob("samples-rank*.jsonl")):
        for raw in shard.read_bytes().split(b"\n"):
            try:
                lines.append(json.loads(raw))
            except ValueError:
                pass  # a torn line
    return lines


def _results(out):
    doc = json.loads((out / "results.json").read_text())
    answers = {
        r["id"]: r["generation"]
        for r in map(json.loads, (out / "samples_ruhhh_image_test.jsonl").read_text().splitlines())
    }
    return doc["tasks"]["ruhhh_image"]["metrics"], answers


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted")
    run_evaluation(data="sample", batch_size=4, output_dir=out, no_progress=True)
    return _results(out)


def _sigkill_once_logged(proc: subprocess.Popen, shard, lines: int) -> None:
    """SIGKILL the run (started here) once its log shard holds ``lines`` answers."""
    deadline = time.time() + 600  # a loaded machine (or a second test worker) is slow to start
    while time.time() < deadline and proc.poll() is None:
        if shard.is_file() and shard.read_bytes().count(b"\n") >= lines:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]


def test_sigkill_mid_run_then_resume(tmp_path, uninterrupted):
    out = tmp_path / "killed"
    shard = out / "logs" / "samples-rank0.jsonl"
    proc = subprocess.Popen(
        _evaluate("--data", "sample", "--batch-size", "1", "--output-dir", str(out)),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _sigkill_once_logged(proc, shard, 3)
    logged = len(_complete_lines(out))
    n = len(SAMPLE_IDS)
    assert 3 <= logged < n  # killed in the middle

    _resume_completes(_evaluate, out, logged, uninterrupted)


def _resume_completes(command, out, logged: int, uninterrupted) -> None:
    """The same run again finishes what was not logged: nothing lost, nothing twice."""
    done = subprocess.run(
        command("--data", "sample", "--batch-size", "4", "--output-dir", str(out)),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (
        f"from the sample log: {logged}, generated now: {len(SAMPLE_IDS) - logged}" in done.stdout
    )
    ids = Counter(r["id"] for r in _complete_lines(out))
    assert sorted(ids) == SAMPLE_IDS and set(ids.values()) == {1}
    assert _results(out) == uninterrupted


def test_two_processes_match_one_and_resume_across_process_counts(tmp_path, uninterrupted):
    out = tmp_path / "dp"
    # one process does the first 6 examples ...
    run_evaluation(data="sample", limit=6, output_dir=out, no_progress=True)
    # ... two processes the next 10, each its own stride and log shard ...
    done = subprocess.run(
        _two_processes(
            "--data", "sample", "--limit", "16", "--batch-size", "3", "--output-dir", str(out)
        ),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "from the sample log: 6, generated now: 10" in done.stdout
    assert done.stdout.count("model: mera-multi-hf") == 1  # only the main process reports
    rank1 = [json.loads(x) for x in (out / "logs" / "samples-rank1.jsonl").read_text().splitlines()]
    assert len(rank1) == 5  # 10 pending examples strided over 2 ranks
    assert json.loads((out / "results.json").read_text())["run"]["num_processes"] == 2
    # ... and one process again finishes from both shards
    last = run_evaluation(data="sample", batch_size=5, output_dir=out, no_progress=True)
    assert last["counts"]["resumed"] == 16 and last["counts"]["generated"] == 10
    ids = Counter(r["id"] for r in _complete_lines(out))
    assert sorted(ids) == SAMPLE_IDS and set(ids.values()) == {1}
    assert _results(out) == uninterrupted
    _sessions_as_run(out)


def _sessions_as_run(out) -> None:
    """The manifest lists the three sessions as they ran (issue 28's oracle: a resume with
    another number of processes), under the backend options of the first."""
    run = json.loads((out / "results.json").read_text())["run"]
    sessions = run["sessions"]
    assert [s["num_processes"] for s in sessions] == [1, 2, 1]
    assert [s["batch_size"] for s in sessions] == [8, 3, 5]
    assert [s["counts"]["generated"] for s in sessions] == [6, 10, 10]
    assert sessions[1]["command"] == (
        f"mera-multi evaluate --no-progress --data sample "
        f"--limit 16 --batch-size 3 --output-dir {out}"
    )
    assert sessions[0]["command"].startswith("run_evaluation(data=['sample'], limit=6")
    assert run["num_processes"] == 1 and run["dtype"] == "float32"
    assert run["backend_options"]["model_class"] == "LlavaForConditionalGeneration"


def test_hub_model_from_the_local_cache_records_its_commit(tmp_path):
    """A Hub id resolved offline through a real Hub cache layout: the run loads the
    snapshot and records its commit hash as the revision."""
    import shutil

    from mera_multi_hf.demo.builtin_models import tiny_model_path

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--mera-test--tiny-vlm"
    shutil.copytree(tiny_model_path(), repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    out = tmp_path / "run"
    env = dict(_env(), HF_HUB_CACHE=str(tmp_path / "hub"), HF_HUB_OFFLINE="1")
    done = subprocess.run(
        _evaluate(
            "--model",
            "mera-test/tiny-vlm",
            "--data",
            "sample",
            "--limit",
            "3",
            "--output-dir",
            str(out),
        ),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    run = json.loads((out / "results.json").read_text())["run"]
    assert run["model"] == "mera-test/tiny-vlm" and run["revision"] == commit
    missing = subprocess.run(
        _evaluate(
            "--model",
            "mera-test/not-there",
            "--data",
            "sample",
            "--limit",
            "1",
            "--output-dir",
            str(tmp_path / "x"),
        ),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert missing.returncode == 2 and "cannot load model 'mera-test/not-there'" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_processes_option_matches_one_process(tmp_path, uninterrupted):
    out = tmp_path / "dp"
    done = subprocess.run(
        _processes_option("--data", "sample", "--batch-size", "3", "--output-dir", str(out)),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("model: mera-multi-hf") == 1  # only the main process reports
    assert sorted(p.name for p in (out / "logs").iterdir()) == [
        "samples-rank0.jsonl",
        "samples-rank1.jsonl",
    ]
    assert json.loads((out / "results.json").read_text())["run"]["num_processes"] == 2
    assert _results(out) == uninterrupted


def test_processes_killed_together_then_resumed(tmp_path, uninterrupted):
    """SIGKILL to the command and both its processes mid-run, then the same command:
    nothing lost, nothing generated twice."""
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        _processes_option("--data", "sample", "--batch-size", "1", "--output-dir", str(out)),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.time() + 600  # a loaded machine (or a second test worker) is slow to start
    while time.time() < deadline and proc.poll() is None:
        if len(_complete_lines(out) if (out / "logs").is_dir() else []) >= 3:
            os.killpg(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]
    logged = len(_complete_lines(out))
    assert 3 <= logged < len(SAMPLE_IDS)
    _resume_completes(_processes_option, out, logged, uninterrupted)


def test_processes_launcher_stops_the_others_when_one_fails():
    from mera_multi_hf.generation.launch import wait_all

    started = time.monotonic()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    failing = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert wait_all([sleeper, failing]) == 3
    assert sleeper.poll() is not None and time.monotonic() - started < 60
    killed = subprocess.Popen([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
    assert wait_all([killed]) == 128 + 9
    # SIGTERM to the command ends its processes too (a scheduler's stop)
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCH_SLEEPERS],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(_env(), PYTHONPATH=os.pathsep.join(sys.path)),
    )
    pids = [int(p) for p in launcher.stdout.readline().split()]
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=60) == 128 + signal.SIGTERM
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    bad = subprocess.run(
        _evaluate("--processes", "0"), env=_env(), capture_output=True, text=True, timeout=60
    )
    assert (
        bad.returncode == 2
        and bad.stderr.strip() == "mera-multi: error: --processes 0: give an integer from 1 to 1024"
    )
    mixed = subprocess.run(
        _evaluate("--processes", "3"),
        env=dict(_env(), WORLD_SIZE="2"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert mixed.returncode == 2 and "under a launcher that started 2" in mixed.stderr


@pytest.mark.parametrize("launch", [_two_processes, _processes_option])
def test_a_data_parallel_run_on_a_folder_in_use_stops_every_process(tmp_path, launch):
    """The main process takes the folder's lock; when another run holds it, every
    process of the launch stops at once with one line (none waits at a barrier)."""
    out = tmp_path / "busy"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from mera_multi_hf.core.outputs import "
            "OutputFolder; f = OutputFolder(sys.argv[1], kind='run').claim(); "
            "print('held', flush=True); "
            "time.sleep(300)",
            str(out),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(_env(), PYTHONPATH=os.pathsep.join(sys.path)),
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        done = subprocess.run(
            launch("--data", "sample", "--limit", "2", "--output-dir", str(out)),
            env=_env(),
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode != 0
    assert done.stderr.count("mera-multi: error: --output-dir") == 2, done.stderr[-3000:]
    assert "in use by another mera-multi run" in done.stderr
    assert sorted(os.listdir(out)) == [".mera-multi.lock"]
