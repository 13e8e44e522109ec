"""The openai backend against real local HTTP servers: requests stream (answers logged as
they complete), spread over several servers, a dying server's requests go to the other,
and a run killed at a random moment resumes without losing or repeating an answer."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.generation.samplelog import read_lines
from mera_multi_hf.pipeline.evaluate import run_evaluation

TASKS = "ruhhh_image,ruclevr,rucommonvqa"  # 8 bundled examples each


def _text(body: dict) -> str:
    return "".join(part.get("text", "") for part in body["messages"][0]["content"])


class _Chat(BaseHTTPRequestHandler):
    """Answers from the prompt alone (the same on every server); after `die_after`
    requests it drops connections unanswered and stops listening."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):  # /v1/models, as the run's preflight asks every server first
        answer = json.dumps({"object": "list", "data": []}).encode()
        self.send_response(200 if self.path.rstrip("/").endswith("/models") else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_POST(self):
        server = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with server.lock:
            server.calls += 1
            dead = server.die_after is not None and server.calls > server.die_after
            if not dead:
                server.prompts.append(_text(body))
        if dead:  # mid-run death: no answer, then no listener
            self.close_connection = True
            threading.Thread(target=_stop, args=(server,), daemon=True).start()
            return
        digest = hashlib.sha256(_text(body).encode()).digest()
        time.sleep(server.delay * (1 + digest[1] / 255))
        answer = json.dumps({"choices": [{"message": {"content": "AB"[digest[0] % 2]}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def _stop(server) -> None:
    server.shutdown()
    server.server_close()  # a closed port: connections are refused, not left waiting


@pytest.fixture
def chat_server():
    started = []

    def start(delay=0.002, die_after=None):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
        server.daemon_threads = True
        server.delay, server.die_after, server.calls = delay, die_after, 0
        server.prompts, server.lock = [], threading.Lock()
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        server.url = f"http://127.0.0.1:{server.server_port}/v1"
        started.append(server)
        return server

    yield start
    for server in started:
        _stop(server)


def _run(urls, out, **options):
    return run_evaluation(
        model="m",
        backend="openai",
        base_url=urls,
        tasks=TASKS,
        data=["sample"],
        output_dir=str(out),
        no_progress=True,
        max_retries=1,
        **options,
    )


def _answers(out) -> dict:
    return {
        (r["task"], r["id"]): r["generation"]
        for path in sorted(out.glob("samples_*.jsonl"))
        for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())
    }


def _log_keys(out) -> list[tuple]:
    return [
        (r["task"], r["id"])
        for path in sorted((out / "logs").glob("*.jsonl"))
        for r in read_lines(path)
    ]


def test_two_servers_one_dies_mid_run(chat_server, tmp_path):
    alone = chat_server()
    n = _run(alone.url, tmp_path / "one", concurrency=4)["counts"]["generated"]
    first, second = chat_server(die_after=5), chat_server()
    result = _run([f"{first.url},{second.url}"], tmp_path / "two", concurrency=3)
    assert result["counts"]["generated"] == n == len(alone.prompts) > 20
    assert len(first.prompts) == 5 and first.calls > 5  # it died with requests in flight
    assert len(second.prompts) == n - 5
    assert _answers(tmp_path / "two") == _answers(tmp_path / "one")
    assert sorted(_log_keys(tmp_path / "two")) == sorted(set(_log_keys(tmp_path / "two")))


def test_all_servers_failing_is_one_clear_error(chat_server, tmp_path):
    first, second = chat_server(die_after=2), chat_server(die_after=3)
    with pytest.raises(MeraError, match="unreachable or failing after 2 tries"):
        _run([first.url, second.url], tmp_path / "run", concurrency=2)
    assert len(_log_keys(tmp_path / "run")) == 5  # what was answered is kept


def test_answers_are_logged_as_they_complete(chat_server, tmp_path):
    """One slow request does not hold back the others: they are in the log before it
    is (a batch would have waited for it)."""
    server = chat_server(delay=0.01)
    slow_prompt = []
    real = _Chat.do_POST

    def slow_first(handler):
        with handler.server.lock:
            first = not slow_prompt
            slow_prompt.append(1)
        if first:
            time.sleep(1.5)
        real(handler)

    _Chat.do_POST = slow_first
    try:
        _run(server.url, tmp_path / "run", concurrency=4)
    finally:
        _Chat.do_POST = real
    log = list(read_lines(tmp_path / "run" / "logs" / "samples-rank0.jsonl"))
    slow = max(range(len(log)), key=lambda i: log[i]["time_s"])
    assert log[slow]["time_s"] >= 1.4 and slow >= len(log) // 2  # the others streamed past it
    names = sorted(p.name for p in (tmp_path / "run").glob("samples_*.jsonl"))
    ids = [json.loads(x)["id"] for x in (tmp_path / "run" / names[0]).read_text().splitlines()]
    assert ids == sorted(ids)  # outputs in a fixed order whatever the completion order


def test_sigkill_at_a_random_moment_then_rerun(chat_server, tmp_path):
    server = chat_server(delay=0.05)
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "mera_multi_hf",
        "evaluate",
        "--backend",
        "openai",
        "--base-url",
        server.url,
        "--model",
        "m",
        "--tasks",
        TASKS,
        "--data",
        "sample",
        "--concurrency",
        "3",
        "--output-dir",
        str(out),
        "--no-progress",
    ]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    log = out / "logs" / "samples-rank0.jsonl"
    want = random.Random(os.getpid()).randint(1, 20)  # answers logged before the kill
    deadline = time.time() + 60
    while time.time() < deadline and (not log.exists() or log.read_bytes().count(b"\n") < want):
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = set(_log_keys(out))
    assert len(before) >= 1 and process.returncode == -signal.SIGKILL
    asked_before = len(server.prompts)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    keys, n = _log_keys(out), len(_answers(out))
    assert len(keys) == len(set(keys)) == n > len(before)  # nothing lost, nothing answered twice
    assert len(server.prompts) - asked_before == n - len(before)  # the rerun asks only the rest
