"""A secret in the forms it takes on the way out (stripped of the spaces it was typed
with, one part of a value the tool splits on commas, a header inside a foreign config),
always masked; the usage lines of --help, which hold no secret, never masked; and
foreign text (a request's field, a path) echoed by the servers at most the sanitiser's
length, escaped. Real servers on 127.0.0.1; the CLI run in-process or as a command."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.masking import mask_secrets
from mera_multi_hf.pipeline.score import harness_config


class _EchoingKeys(BaseHTTPRequestHandler):
    """An OpenAI-style server that lists model m and refuses every chat, echoing the
    key it was sent (stripped, as servers do) in its error message."""

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        key = self.headers.get("authorization", "").removeprefix("Bearer ").strip()
        self._send(400, {"error": {"message": f"the key {key} is not allowed for m"}})

    def _send(self, status: int, payload: dict):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def echoing():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingKeys)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


def _evaluate(tmp_path, base_url: str, *extra: str) -> int:
    return main(
        [
            "evaluate",
            "--backend",
            "openai",
            "--base-url",
            base_url,
            "--model",
            "m",
            "--tasks",
            "rucommonvqa",
            "--data",
            "sample",
            "--limit",
            "1",
            "--no-progress",
            "--max-retries",
            "0",
            "--output-dir",
            str(tmp_path / "run"),
            *extra,
        ]
    )


def test_a_key_typed_with_spaces_is_masked_when_a_server_echoes_it_stripped(
    tmp_path, echoing, capsys
):
    _evaluate(tmp_path, echoing, "--api-key", "  sk-spaced-key-0451  ")
    err = capsys.readouterr().err
    assert "is not allowed for m" in err  # the echo was printed...
    assert "sk-spaced-key-0451" not in err  # ...masked


def test_a_url_password_holding_a_comma_is_masked_in_each_part(tmp_path, capsys):
    url = "http://user:pa55-w0rd,tail-secret@127.0.0.1:9/v1"  # split on the comma
    assert _evaluate(tmp_path, url) == 2
    err = capsys.readouterr().err
    assert "mera-multi: error:" in err
    assert "pa55-w0rd" not in err and "tail-secret" not in err, err


def test_headers_inside_a_foreign_config_are_masked_at_any_depth(tmp_path):
    config = {
        "model": "local-chat-completions",
        "model_args": {
            "base_url": "http://127.0.0.1:8000/v1",
            "headers": {"Authorization": "Bearer sk-header-0001", "x-api-key": "xk-header-02"},
        },
        "gen_kwargs": [{"extra": {"Cookie": "sid=cookie-value-03"}}],
        "as_text": "pretrained=x,headers={'Authorization': 'Bearer sk-text-0004'}",
    }
    (tmp_path / "results_2026.json").write_text(json.dumps({"config": config}))
    (tmp_path / "samples_rucommonvqa_2026.jsonl").write_text("")
    shown = json.dumps(harness_config([str(tmp_path / "samples_rucommonvqa_2026.jsonl")]))
    for secret in ("sk-header-0001", "xk-header-02", "cookie-value-03", "sk-text-0004"):
        assert secret not in shown, shown
    assert "http://127.0.0.1:8000/v1" in shown and "local-chat-completions" in shown


@pytest.mark.parametrize("command", [["evaluate"], ["score"], ["serve"], ["judge", "agreement"]])
def test_the_usage_lines_of_help_are_never_masked(command):
    done = subprocess.run(
        [sys.executable, "-m", "mera_multi_hf", *command, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "***" not in done.stdout, [line for line in done.stdout.splitlines() if "***" in line]
    assert "--api-key API_KEY" in done.stdout or "--judge-api-key JUDGE_API_KEY" in done.stdout


def test_masking_still_masks_a_key_after_its_flag():
    assert mask_secrets("--api-key sk-live-0005 [--api-key API_KEY]") == (
        "--api-key *** [--api-key API_KEY]"
    )


def test_the_judge_server_echoes_a_request_field_at_most_the_cap(served_judge):
    url = f"http://127.0.0.1:{served_judge.server_port}"
    name = "n\x1b[31m" + "m" * 30_000_000
    reply = requests.post(f"{url}/classify", json={"model": name, "input": "x"}, timeout=60)
    assert reply.status_code == 404
    assert len(reply.content) < 2000 and "more characters" in reply.text
    assert "\x1b" not in reply.json()["message"]
    path = "/" + "p" * 60_000
    reply = requests.get(url + path, timeout=60)
    assert reply.status_code == 404 and len(reply.content) < 2000
