"""Everything read from outside is bounded: server replies are read as a stream up to a
size, every request head of a kept-alive connection has its own deadline, and one large
judge request neither exceeds its bound nor holds the others up. Real servers on
127.0.0.1, each loop bounded."""

from __future__ import annotations

import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.generation.backends.openai import OpenAIBackend
from mera_multi_hf.generation.request import Request
from mera_multi_hf.judge.http_judge import HttpJudge
from mera_multi_hf.serving.app import Server, json_app

MiB = 2**20


class _Huge(BaseHTTPRequestHandler):
    """Answers every request with a reply far over any bound: a declared 1.5 GB, or
    (path /endless) megabytes with no length until the client goes (at most 256 MiB)."""

    def _answer(self):
        self.sent = 0
        endless = "endless" in self.path
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if not endless:
            self.send_header("Content-Length", str(1_500_000_000))
        self.send_header("Connection", "close")
        self.end_headers()
        chunk = b'{"choices": [{"message": {"content": "' + b"a" * MiB
        try:
            for _ in range(256 if endless else 2):
                self.wfile.write(chunk)
                type(self).sent += len(chunk)
        except OSError:  # the client stopped reading: what the bound is for
            pass

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def huge():
    _Huge.sent = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Huge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def _request() -> Request:
    return Request(task="t", split="test", id=7, prompt="Вопрос", media=[], max_new_tokens=4)


@pytest.mark.parametrize("route", ["/v1", "/endless/v1"])
def test_a_huge_reply_from_a_chat_server_is_one_line(huge, route):
    backend = OpenAIBackend(
        "m", huge + route, max_retries=0, max_reply_bytes=4 * MiB, concurrency=1
    )
    with pytest.raises(MeraError) as err:
        backend.generate([_request()])
    message = str(err.value)
    assert "too large" in message and "id=7" in message and "\n" not in message
    assert str(4 * MiB) in message
    assert _Huge.sent < 64 * MiB  # the reading stopped at the bound
    backend.close()


def test_a_huge_reply_from_a_judge_server_is_one_line(huge):
    judge = HttpJudge(huge + "/classify", model="m", sep="[SEP]", retries=0)
    with pytest.raises(MeraError, match="too large to read") as err:
        judge.call("/classify", {"model": "m", "input": "x"})
    assert "1500000000" in str(err.value) and "\n" not in str(err.value)


def _health_server(read_timeout: float) -> Server:
    app = json_app(lambda status, message: {"error": message, "code": status}, "health")

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    return Server(
        app,
        lambda status, message: {"error": message, "code": status},
        read_timeout=read_timeout,
        timeout_keep_alive=30.0,
    ).start()


def test_every_head_of_a_kept_alive_connection_has_a_deadline():
    server = _health_server(read_timeout=1.0)
    try:
        with socket.create_connection(("127.0.0.1", server.server_port), timeout=5) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
            first = b""
            while b'"ok"' not in first and len(first) < 65536:  # the head, then the body
                first += sock.recv(65536) or b"!"
            assert first.startswith(b"HTTP/1.1 200")
            started, got = time.monotonic(), b""
            for byte in b"GET /health HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"a" * 200:
                if select.select([sock], [], [], 0.05)[0]:  # the server spoke: stop
                    got = sock.recv(65536)
                    break
                sock.sendall(bytes([byte]))
            waited = time.monotonic() - started
        assert got.startswith(b"HTTP/1.1 408"), got[:80]
        assert b"within 1 s" in got and waited < 3.0
    finally:
        server.shutdown()


def _timed_post(url: str, body: dict, out: dict, name: str) -> None:
    reply = requests.post(url, json=body, timeout=120)
    out[name] = (time.monotonic(), reply.status_code)


def test_a_large_judge_request_does_not_hold_the_others_up(served_judge):
    url = f"http://127.0.0.1:{served_judge.server_port}/classify"
    big = {"input": [f"Ответ модели {i}: " + "да " * 120 for i in range(256)]}  # 32 batches
    done: dict = {}
    first = threading.Thread(target=_timed_post, args=(url, big, done, "big"))
    first.start()
    lock = served_judge.service.queue.lock
    for _ in range(2000):  # until the big request holds the model (at most 20 s)
        if lock.locked() or "big" in done:
            break
        time.sleep(0.01)
    _timed_post(url, {"input": "Ответ: да."}, done, "small")
    first.join(120)
    assert done["big"][1] == done["small"][1] == 200
    assert done["small"][0] < done["big"][0]  # served between the big one's batches


def test_a_judge_request_over_its_total_characters_is_refused(served_judge):
    url = f"http://127.0.0.1:{served_judge.server_port}/classify"
    body = {"input": ["я" * 190_000] * 25}  # each under max_judge_chars, 4.75 M together
    reply = requests.post(url, json=body, timeout=60)
    assert reply.status_code == 413
    assert "max_judge_request_chars" in reply.json()["message"]
