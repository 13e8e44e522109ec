"""Fail in seconds, before the expensive part: the preflight refuses a run whose judge,
model server, data source or output folder is not there, in one line, before any
generation; offline, Hub defaults stop after one attempt naming the offline
alternative; a folder that holds no dataset is named for what it is."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mera_multi_hf.cli.main import main


def _dead_url() -> str:
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


class _Refuse401(BaseHTTPRequestHandler):
    def _answer(self):
        body = b'{"error": "invalid api key"}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def refusing():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuse401)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _warm() -> None:
    """Import what every run imports (torch, transformers, accelerate, datasets): the
    clock measures the refusal, not the first import of the libraries."""
    import accelerate  # noqa: F401

    from mera_multi_hf.cli.evaluate import options_parser
    from mera_multi_hf.generation import run  # noqa: F401

    options_parser()


def _refused(argv, capsys, *needles, limit_s=15.0):
    """Run the CLI; it must exit 2 within limit_s with one line holding every needle."""
    _warm()
    started = time.perf_counter()
    code = main(argv)
    elapsed = time.perf_counter() - started
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    assert elapsed < limit_s, elapsed
    return err


def _no_generation(run_dir):
    assert not list(run_dir.rglob("samples*.jsonl")), "generation started before the refusal"


def test_unreachable_judge_stops_the_run_before_generation(tmp_path, capsys):
    dead = _dead_url()
    _refused(
        ["evaluate", "--judge-url", dead, "--output-dir", str(tmp_path / "run"), "--no-progress"],
        capsys,
        "preflight",
        dead,
        "unreachable",
    )
    _no_generation(tmp_path)


def test_judge_refusing_the_key_stops_the_run_before_generation(tmp_path, capsys, refusing):
    _refused(
        [
            "evaluate",
            "--judge-url",
            refusing,
            "--judge-api-key",
            "wrong",
            "--output-dir",
            str(tmp_path / "run"),
            "--no-progress",
        ],
        capsys,
        "HTTP 401",
        "--judge-api-key",
    )
    _no_generation(tmp_path)
    assert "wrong" not in capsys.readouterr().err


def test_model_server_is_asked_for_v1_models_first(tmp_path, capsys, refusing):
    _refused(
        [
            "evaluate",
            "--backend",
            "openai",
            "--base-url",
            refusing + "/v1",
            "--model",
            "m",
            "--data",
            "sample",
            "--output-dir",
            str(tmp_path / "a"),
            "--no-progress",
        ],
        capsys,
        f"{refusing}/v1/models",
        "HTTP 401",
        "--api-key",
    )
    dead = _dead_url()
    _refused(
        [
            "evaluate",
            "--backend",
            "openai",
            "--base-url",
            dead + "/v1",
            "--model",
            "m",
            "--data",
            "sample",
            "--output-dir",
            str(tmp_path / "b"),
            "--no-progress",
        ],
        capsys,
        f"{dead}/v1/models",
        "unreachable",
        limit_s=5,
    )
    _no_generation(tmp_path)


def test_output_folder_that_is_a_file_is_refused_first(tmp_path, capsys):
    (tmp_path / "taken").write_text("mine", encoding="utf-8")
    _refused(
        ["evaluate", "--output-dir", str(tmp_path / "taken"), "--no-progress"], capsys, "is a file"
    )
    assert (tmp_path / "taken").read_text(encoding="utf-8") == "mine"


def test_a_passing_preflight_is_recorded_in_results_json(tmp_path, capsys):
    assert (
        main(["evaluate", "--limit", "2", "--output-dir", str(tmp_path / "run"), "--no-progress"])
        == 0
    )
    record = json.loads((tmp_path / "run" / "results.json").read_text())["run"]["preflight"]
    components = [c["component"] for c in record["checks"]]
    assert record["ok"] and components == [
        "output folder",
        "extras",
        "device",
        "model",
        "data ruhhh_image",
    ]
    assert all(c["ok"] and c["seconds"] >= 0 for c in record["checks"])


# Offline (the tests run with HF_HUB_OFFLINE=1): one attempt, one line, the alternative.


def test_offline_model_without_data_names_the_hub_copy_and_the_alternative(tmp_path, capsys):
    from mera_multi_hf.demo.builtin_models import tiny_model_path

    _refused(
        ["evaluate", "--model", str(tiny_model_path()), "--output-dir", str(tmp_path / "r")],
        capsys,
        "MERA-evaluation/ruHHH-Image",
        "HF_HUB_OFFLINE",
        "--data sample",
        limit_s=5,
    )
    # a Hub model id that is not cached is named the same way, before the data
    _refused(
        ["evaluate", "--model", "someone/some-vlm", "--output-dir", str(tmp_path / "r")],
        capsys,
        "cannot load model 'someone/some-vlm'",
        "out of reach",
        "save_pretrained",
        limit_s=5,
    )


def test_offline_score_without_data(tmp_path, capsys):
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"id": 0, "prediction": "A"}\n', encoding="utf-8")
    _refused(
        [
            "score",
            "--task",
            "ruhhh_image",
            "--predictions",
            str(preds),
            "--out",
            str(tmp_path / "out"),
        ],
        capsys,
        "MERA-evaluation/ruHHH-Image",
        "--data sample",
        limit_s=5,
    )


def test_offline_judge_id_is_refused_before_generation(tmp_path, capsys):
    _refused(
        [
            "evaluate",
            "--judge",
            "someone/judge-x",
            "--output-dir",
            str(tmp_path / "r"),
            "--no-progress",
        ],
        capsys,
        "judge model 'someone/judge-x'",
        "out of reach",
        "local judge folder",
        limit_s=5,
    )
    _no_generation(tmp_path)


def test_data_typos_get_a_did_you_mean(tmp_path, capsys, monkeypatch):
    _refused(
        ["evaluate", "--data", "smaple", "--output-dir", str(tmp_path / "r")],
        capsys,
        "'smaple'",
        "did you mean sample",
        limit_s=5,
    )
    (tmp_path / "ruhhh_raw").mkdir()
    monkeypatch.chdir(tmp_path)
    _refused(
        ["evaluate", "--data", "ruhh_raw", "--output-dir", str(tmp_path / "r")],
        capsys,
        "did you mean",
        "ruhhh_raw",
        limit_s=5,
    )


def test_the_hub_probe_gives_up_after_one_quick_attempt():
    from mera_multi_hf.core.offline import _probe

    started = time.perf_counter()
    reason = _probe(_dead_url(), timeout=2)
    assert reason and "no connection" in reason and time.perf_counter() - started < 2


# A folder without test.json is named for what it is.


def _official(root):
    (root / "samples").mkdir(parents=True)
    (root / "raw_dataset_meta.json").write_text("{}", encoding="utf-8")


def _run_folder(root):
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "samples-rank0.jsonl").write_text("", encoding="utf-8")


def _space(root):
    root.mkdir()
    (root / "app.py").write_text("", encoding="utf-8")


@pytest.mark.parametrize(
    "make, needle",
    [
        (_official, "official MERA task folder"),
        (_run_folder, "a run folder"),
        (_space, "Space folder"),
    ],
)
def test_a_folder_without_test_json_is_classified(make, needle, tmp_path, capsys):
    folder = tmp_path / "ruHHH-Image"
    make(folder)
    _refused(
        ["evaluate", "--data", str(folder), "--output-dir", str(tmp_path / "r")],
        capsys,
        needle,
        "no test.json",
        limit_s=5,
    )
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"id": 0, "prediction": "A"}\n', encoding="utf-8")
    _refused(
        [
            "score",
            "--task",
            "ruhhh_image",
            "--predictions",
            str(preds),
            "--data",
            str(folder),
            "--out",
            str(tmp_path / "o"),
        ],
        capsys,
        needle,
        limit_s=5,
    )


def test_a_local_judge_without_a_separator_is_refused_before_generation(tmp_path, capsys):
    from mera_multi_hf.demo.builtin_models import tiny_model_path

    # the tiny chat model's folder: a real tokenizer, but no [SEP]: not a judge
    _refused(
        [
            "evaluate",
            "--judge",
            str(tiny_model_path()),
            "--output-dir",
            str(tmp_path / "r"),
            "--no-progress",
        ],
        capsys,
        "no sep_token",
        limit_s=20,
    )
    _no_generation(tmp_path)
