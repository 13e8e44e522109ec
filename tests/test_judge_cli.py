"""--judge-url from the CLI, end to end: `evaluate` and `score` against the project's own
judge server (which reports its separator) give the judge scores a local judge gives."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.serving import judge_server as server_mod

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny_judge import build_tiny_judge  # noqa: E402


@pytest.fixture(scope="module")
def judge_dir(tmp_path_factory) -> str:
    return str(build_tiny_judge(tmp_path_factory.mktemp("cli-judge")))


@pytest.fixture(scope="module")
def judge_url(judge_dir):
    server = server_mod.serve(judge_dir, "127.0.0.1", 0, device="cpu", batch_size=8)
    yield f"http://127.0.0.1:{server.server_address[1]}/classify"
    server.shutdown()


def _judge_metrics(out):
    return json.loads((out / "results.json").read_text())["tasks"]["ruhhh_image"]["judge"]


def test_evaluate_and_score_with_a_served_judge(judge_dir, judge_url, tmp_path, capsys):
    served, local = tmp_path / "served", tmp_path / "local"
    common = ["evaluate", "--limit", "6", "--max-new-tokens", "6", "--no-progress"]
    assert main(common + ["--output-dir", str(served), "--judge-url", judge_url]) == 0
    assert main(common + ["--output-dir", str(local), "--judge", judge_dir]) == 0
    by_url, by_model = _judge_metrics(served), _judge_metrics(local)
    assert set(by_url) == {"judge_score", "group_judge_score"}
    assert by_url == by_model  # the same labels over HTTP as in this process
    run = json.loads((served / "results.json").read_text())["run"]
    assert run["judge"] and judge_url in json.dumps(run["judge"])
    # the official metrics do not change meaning when a judge is given
    plain = tmp_path / "plain"
    assert main(common + ["--output-dir", str(plain)]) == 0
    tasks = {
        p: json.loads((p / "results.json").read_text())["tasks"]["ruhhh_image"]
        for p in (served, plain)
    }
    assert tasks[served]["metrics"] == tasks[plain]["metrics"]
    # the task score is the mean of the leaderboard metrics computed: group EM and group JS
    # with the judge, group EM alone (and said to be partial) without it
    judged = tasks[served]
    assert judged["task_score"] == pytest.approx(
        (judged["metrics"]["group_exact_match"] + judged["judge"]["group_judge_score"]) / 2
    )
    assert not judged["task_score_partial"] and tasks[plain]["task_score_partial"]
    assert tasks[plain]["task_score"] == tasks[plain]["metrics"]["group_exact_match"]
    capsys.readouterr()

    rescored = tmp_path / "rescored"
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--data",
                "sample",
                "--split",
                "test",
                "--predictions",
                str(served / "samples_ruhhh_image_test.jsonl"),
                "--out",
                str(rescored),
                "--judge-url",
                judge_url,
            ]
        )
        == 2
    )  # 6 of 26 answered
    assert "no prediction for" in capsys.readouterr().err


@pytest.mark.parametrize(
    "factory",
    ["mera_multi_hf.serving.judge_server:app_from_env", "judge_model.server:app_from_env"],
)
def test_the_uvicorn_factories_serve_the_judge(judge_dir, judge_url, factory):
    """The README's `uvicorn --factory` forms (the second from the checkout root) serve the
    labels `judge serve` serves."""
    import os
    import socket
    import subprocess
    import time

    import requests

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(
        os.environ,
        MERA_JUDGE_MODEL=judge_dir,
        MERA_JUDGE_SERVED_NAME="j",
        MERA_JUDGE_DEVICE="cpu",
        MERA_JUDGE_API_KEY="",
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            factory,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        base, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 120
        while True:
            try:
                requests.get(f"{base}/health", timeout=2).raise_for_status()
                break
            except requests.ConnectionError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
                time.sleep(0.2)
        body = {"input": ["небо [SEP] синее [SEP] синее", "x [SEP] y [SEP] z"]}
        got = requests.post(f"{base}/classify", json={**body, "model": "j"}, timeout=60).json()
        want = requests.post(judge_url, json={**body, "model": judge_dir}, timeout=60).json()
        assert [d["label"] for d in got["data"]] == [d["label"] for d in want["data"]]
        assert [p for d in got["data"] for p in d["probs"]] == pytest.approx(
            [p for d in want["data"] for p in d["probs"]], abs=1e-6
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
